"""Loss tests run torch on one intra-op thread.

Every tensor here is tiny; with several threads, kernels that always dispatch to the thread pool
(softmax, log-softmax) spend their time waking threads, which on a busy 2-core machine makes the
suite several times slower. The previous thread count is restored after each test.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():  # noqa: ANN202
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

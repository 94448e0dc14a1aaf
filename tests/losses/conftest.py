"""Loss tests run torch on one intra-op thread (see :func:`tests.conftest.one_torch_thread`).

Every tensor here is tiny; the previous thread count is restored after each test.
"""

from __future__ import annotations

import pytest

from tests.conftest import one_torch_thread


@pytest.fixture(autouse=True)
def _one_torch_thread():  # noqa: ANN202
    with one_torch_thread():
        yield

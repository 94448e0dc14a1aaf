"""Training options: every number finite and in range, refused with the option's name otherwise."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from gradebench.training.options import TrainOptions


@pytest.mark.parametrize(("key", "value"), [("lr", math.inf), ("lr", math.nan), ("lr", -1e-3), ("lr", 0.0),
                                            ("weight_decay", math.inf), ("max_grad_norm", math.nan),
                                            ("warmup_ratio", 1.0), ("epochs", 0)])
def test_bad_numbers_are_refused(key, value):
    with pytest.raises(ValidationError, match=key):
        TrainOptions(**{key: value})


def test_train_lr_inf_is_one_line_and_writes_nothing(tmp_path, capsys):
    from gradebench.cli import main
    from gradebench.experiments.build import build

    bench = build("demo", out=tmp_path / "b", progress=False, validity=False).path
    code = main(["train", "--benchmark", bench, "--scorer", "hashed-mlp", "--lr", "inf", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "'lr'" in err and "finite" in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()

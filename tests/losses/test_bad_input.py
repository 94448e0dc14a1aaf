"""Bad input gives a typed, explanatory error — never a silent NaN."""

from __future__ import annotations

import pytest
import torch

from gradebench.errors import InvalidArgumentError
from gradebench.losses import get_loss

from ._util import ALL, NONNEG, fit_labels

S = torch.tensor([[0.5, 2.0, -1.0], [0.1, 0.2, 0.3]])
Y = torch.tensor([[2.0, 1.0, 0.0], [0.0, 1.0, 4.0]])


def labels_for(name: str) -> torch.Tensor:
    return fit_labels(name, Y)


@pytest.mark.parametrize("name", ALL)
def test_shape_mismatch(name: str) -> None:
    fn = get_loss(name)
    with pytest.raises(InvalidArgumentError, match=r"labels shape \(2, 2\) does not match scores shape \(2, 3\)"):
        fn(S, labels_for(name)[:, :2])
    with pytest.raises(InvalidArgumentError, match="mask shape"):
        fn(S, labels_for(name), mask=torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(InvalidArgumentError, match=r"\[batch, list_size\].*unsqueeze"):
        fn(S[0], labels_for(name)[0])
    with pytest.raises(InvalidArgumentError, match="floating-point"):
        fn(torch.tensor([[1, 2, 3]]), labels_for(name)[:1])
    with pytest.raises(InvalidArgumentError, match="must be a torch.Tensor"):
        fn([[0.1, 0.2, 0.3]], labels_for(name)[:1])


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scores_and_labels(name: str, bad: float) -> None:
    fn = get_loss(name)
    s = S.clone()
    s[1, 2] = bad
    with pytest.raises(InvalidArgumentError, match=r"scores\[1, 2\] = .* is not finite"):
        fn(s, labels_for(name))
    y = labels_for(name).clone()
    y[0, 1] = bad
    with pytest.raises(InvalidArgumentError, match=r"labels\[0, 1\] = .* is not finite"):
        fn(S, y)


@pytest.mark.parametrize("name", ALL)
def test_non_finite_values_in_masked_items_are_fine(name: str) -> None:
    s, y = S.clone(), labels_for(name).clone()
    s[1, 2], y[1, 2] = float("nan"), -float("inf")
    mask = torch.ones_like(s, dtype=torch.bool)
    mask[1, 2] = False
    assert torch.isfinite(get_loss(name)(s, y, mask=mask))


@pytest.mark.parametrize("name", ALL)
def test_validate_false_skips_value_checks_only(name: str) -> None:
    s = S.clone()
    s[0, 0] = float("nan")
    get_loss(name)(s, labels_for(name), validate=False)  # no error: caller's responsibility
    with pytest.raises(InvalidArgumentError):
        get_loss(name)(S, labels_for(name)[:, :2], validate=False)  # shapes are always checked


@pytest.mark.parametrize("name", sorted(NONNEG))
def test_negative_labels_rejected_where_a_gain_needs_them(name: str) -> None:
    y = Y.clone()
    y[1, 0] = -1.0
    with pytest.raises(InvalidArgumentError, match=r"labels\[1, 0\] = -1.0 is out of range.*>= 0|2\^y - 1"):
        get_loss(name)(S, y)


@pytest.mark.parametrize("name", ["ranknet", "hinge", "margin", "bradley_terry", "listmle", "mse", "listnet"])
def test_negative_labels_fine_where_only_order_matters(name: str) -> None:
    assert torch.isfinite(get_loss(name)(S, Y - 3.0))


@pytest.mark.parametrize("name", sorted(NONNEG))
def test_exp2_gain_overflow_rejected(name: str) -> None:
    y = Y.clone()
    y[0, 0] = 200.0  # 2^200 overflows float32
    with pytest.raises(InvalidArgumentError, match="2\\^y - 1"):
        get_loss(name)(S, y)
    assert torch.isfinite(get_loss(name)(S.double(), y.double()))
    assert torch.isfinite(get_loss(name)(S, y, gain="linear"))


def test_sigmoid_ce_label_range() -> None:
    with pytest.raises(InvalidArgumentError, match=r"sigmoid_ce needs labels in \[0, 1\]"):
        get_loss("sigmoid_ce")(S, Y)


@pytest.mark.parametrize("target", ["normalize", "raw"])
def test_listnet_target_needs_nonnegative_labels(target: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"target='{target}' needs labels >= 0"):
        get_loss("listnet")(S, Y - 1.0, target=target)


@pytest.mark.parametrize("name", ALL)
def test_bad_reduction(name: str) -> None:
    with pytest.raises(InvalidArgumentError, match="reduction must be one of 'mean', 'sum', 'none'"):
        get_loss(name)(S, labels_for(name), reduction="avg")


@pytest.mark.parametrize(
    "name,kwargs,match",
    [
        ("approxndcg", {"temperature": 0.0}, "temperature must be > 0"),
        ("approxndcg", {"temperature": -1.0}, "temperature must be > 0"),
        ("approxndcg", {"temperature": float("nan")}, "temperature must be finite"),
        ("approxndcg", {"temperature": "1"}, "temperature must be a number"),
        ("approxndcg", {"gain": "exp"}, "gain must be one of 'exp2', 'linear'"),
        ("neuralndcg", {"temperature": 0}, "temperature must be > 0"),
        ("neuralndcg", {"k": 0}, "k must be >= 1"),
        ("neuralndcg", {"k": 2.5}, "k must be an int"),
        ("neuralndcg", {"sinkhorn_iters": -1}, "sinkhorn_iters must be >= 0"),
        ("listnet", {"temperature": 0.0}, "temperature must be > 0"),
        ("listnet", {"target": "kld"}, "target must be one of 'softmax', 'normalize', 'raw'"),
        ("listnet", {"target": "normalize", "temperature": 2.0}, "temperature applies only to target='softmax'"),
        ("hinge", {"margin": -0.5}, "margin must be >= 0"),
        ("margin", {"margin": float("inf")}, "margin must be finite"),
        ("margin", {"margin": True}, "margin must be a number"),
        ("lambdarank", {"gain": "log"}, "gain must be one of"),
        ("lambdaloss", {"gain": None}, "gain must be one of"),
        ("listmle", {"seed": 1.5}, "seed must be an int or None"),
    ],
)
def test_bad_parameters(name: str, kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        get_loss(name)(S, Y, **kwargs)


def test_unknown_parameter_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        get_loss("ranknet")(S, Y, margin=1.0)


def test_errors_are_value_errors_with_hints() -> None:
    s = S.clone()
    s[0, 0] = float("nan")
    with pytest.raises(ValueError) as info:
        get_loss("listnet")(s, Y)
    assert isinstance(info.value, InvalidArgumentError)
    assert info.value.hint and "mask" in info.value.hint


def test_labels_as_lists_and_int_masks_are_accepted() -> None:
    a = get_loss("ranknet")(S, Y.tolist(), mask=[[1, 1, 0], [1, 1, 1]])
    b = get_loss("ranknet")(S, Y, mask=torch.tensor([[True, True, False], [True, True, True]]))
    assert torch.equal(a, b)

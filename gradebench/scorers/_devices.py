"""Checking a requested torch device against what this process has, before a model is moved there.

A ``device`` option (the ``cross-encoder`` scorer's, every model adapter's) is a torch device
string. One that this torch cannot use is one line naming the device and what is available,
rather than torch's ``AssertionError: Torch not compiled with CUDA enabled`` or a
``RuntimeError`` from deep inside a loader:

* a string torch does not parse (``tpu``, ``cuda:x``, ``CUDA``);
* ``cuda`` on a torch built without CUDA, or with no GPU visible, and ``cuda:N`` with ``N`` at
  or past the number of visible GPUs;
* ``mps`` where Metal is not available, and any other accelerator type torch does not report
  as available (``xpu``, ``hpu``, ...);
* ``meta``: it holds shapes, no weights, so nothing could be scored there.

torch is imported only when a device is checked.
"""

from __future__ import annotations

from gradebench.errors import InvalidArgumentError

__all__ = ["available_devices", "check_device"]

DEVICE_HINT = "give one of the available devices with --set device=..., or leave device unset for the best one"


def available_devices() -> list[str]:
    """The devices this process can use: ``cpu``, then ``cuda:0`` ... ``cuda:N-1``, then ``mps``."""
    import torch

    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append("mps")
    return out


def check_device(requested: str) -> str:
    """``requested`` if this process can put a model there.

    Raises:
        InvalidArgumentError: not a device string, a device type this torch cannot use, a CUDA
            index past the visible GPUs, or ``meta`` (one line naming the device and what is available).
    """
    import torch

    available = available_devices()

    def refuse(why: str, *, what: str = "is not available") -> InvalidArgumentError:
        return InvalidArgumentError(f"device {requested!r} {what} ({why}; available: {', '.join(available)})",
                                    key="device", hint=DEVICE_HINT)

    text = requested.strip() if isinstance(requested, str) else requested
    try:
        if not isinstance(text, str) or not text:
            raise ValueError(text)
        device = torch.device(text)
    except (RuntimeError, TypeError, ValueError):
        raise refuse("torch names devices cpu, cuda, cuda:N, mps, ...", what="is not a torch device") from None
    kind, index = device.type, device.index
    if kind == "cpu":
        if index not in (None, 0):
            raise refuse("there is one CPU device, cpu or cpu:0")
        return text
    if kind == "meta":
        raise refuse("the meta device holds no weights, so nothing can be computed there")
    if kind == "cuda":
        if not torch.cuda.is_available():
            built = torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None
            raise refuse("no CUDA device is visible to this process" if built else "this torch has no CUDA")
        count = torch.cuda.device_count()
        if index is not None and index >= count:
            raise refuse(f"{count} CUDA device{'s' if count != 1 else ''} visible, numbered from 0")
        return text
    if kind == "mps":
        if "mps" not in available:
            raise refuse("Metal (MPS) is not available to this torch")
        return text
    backend = getattr(torch, kind, None)
    is_available = getattr(backend, "is_available", None)
    if callable(is_available) and is_available():
        count = getattr(backend, "device_count", None)
        if index is not None and callable(count) and index >= count():
            raise refuse(f"{count()} {kind} device(s) visible, numbered from 0")
        return text
    raise refuse(f"this torch has no usable {kind} device")

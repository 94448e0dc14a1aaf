"""Weight files checked before a model library reads them, so a bad file is one line naming it.

safetensors, torch and transformers answer a truncated or damaged weights file with their own
exception types (``SafetensorError``, ``UnpicklingError``, ``OSError: [Errno 22]``) and no file
name. :func:`check_weight_file` reads what is cheap to read and complete to check:

* ``*.safetensors``: the header and every tensor's byte range, with safetensors' own parser
  (``safe_open``: the header must parse and the tensors must cover the file exactly, so a
  truncated file fails);
* any other file is a ``torch.save`` file (``pytorch_model.bin``): a zip archive whose every
  member passes its CRC check (the bytes are read once, as hashing them would), or torch's
  legacy pickle format, recognised by its magic number and otherwise left to the loader, whose
  failure :func:`load_error` words. A truncated zip has lost its central directory, so it is
  neither and is refused.

Nothing here imports torch.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from gradebench.errors import GradebenchError

#: the weight files of a model folder that transformers and sentence-transformers load
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
#: how a ``torch.save`` file in the legacy (pre-zip) format starts: the pickled magic number
_LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19"


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def check_weight_file(path: Path, *, error: type[GradebenchError], hint: str) -> None:
    """Raise ``error`` naming ``path`` when it is unreadable, truncated or damaged (see the module docstring)."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="numpy"):
                pass
        elif zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()
            if bad is not None:
                raise error(f"corrupt weights file: member {bad} fails its CRC check", path=path, hint=hint)
        else:
            with open(path, "rb") as f:
                head = f.read(len(_LEGACY_TORCH_MAGIC))
            if head != _LEGACY_TORCH_MAGIC:
                what = "empty" if not head else "neither a complete zip archive nor torch's legacy format"
                raise error(f"corrupt or truncated weights file ({what}: not what torch.save writes)",
                            path=path, hint=hint)
    except GradebenchError:
        raise
    except FileNotFoundError:
        raise error("the weights file is missing", path=path, hint=hint) from None
    except Exception as e:  # noqa: BLE001 - SafetensorError, BadZipFile, OSError...
        raise error(f"corrupt or truncated weights file ({_first_line(e)})", path=path, hint=hint) from None


def weight_files(folder: Path) -> list[Path]:
    """The weight files (:data:`WEIGHT_PATTERNS`) under ``folder`` (recursively, hidden files and
    folders skipped), sorted."""
    root = Path(folder)
    found = {p for pattern in WEIGHT_PATTERNS for p in root.rglob(pattern)}
    return sorted(p for p in found if p.is_file() and not any(part.startswith(".")
                                                              for part in p.relative_to(root).parts))


def check_weight_folder(folder: Path, *, error: type[GradebenchError], hint: str,
                        safetensors_only: bool = False, loaded_only: bool = False) -> None:
    """:func:`check_weight_file` on every weight file under ``folder`` (only ``*.safetensors``
    with ``safetensors_only``: a base model folder may carry a ``.bin`` copy its loader never reads;
    with ``loaded_only``, a ``.bin`` only where its own folder has no ``*.safetensors``, which
    transformers and sentence-transformers read in preference)."""
    paths = weight_files(folder)
    with_safetensors = {p.parent for p in paths if p.suffix == ".safetensors"}
    for path in paths:
        if path.suffix == ".safetensors" or not (safetensors_only or (loaded_only and path.parent in with_safetensors)):
            check_weight_file(path, error=error, hint=hint)


def load_error(e: BaseException, where: Path, *, what: str, error: type[GradebenchError],
               hint: str) -> GradebenchError:
    """A loader's exception as one line naming ``where``: ``cannot load <what> (<type>: <first line>)``."""
    return error(f"cannot load {what} ({_first_line(e)})", path=where, hint=hint)

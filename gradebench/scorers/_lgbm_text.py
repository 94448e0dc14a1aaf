"""LightGBM's text model checked in Python before LightGBM parses it.

LightGBM's C++ parser trusts its input: it reads each tree at the byte offset that the header's
``tree_sizes`` gives, inside an OpenMP loop, so a truncated or edited model aborts the process
(``terminate called``, exit 134), reads past the end of the buffer (a segfault) or loads with
fewer trees than were trained, without an error. A host interpreter (a TRL trainer that loaded
the reward) dies with it. :func:`check_model_text` accepts a model string only when LightGBM can
parse it safely and predict with it (``GBDT::LoadModelFromString`` and ``Tree::Tree(const char*)``
of LightGBM 4):

* the header: the first line ``tree``, ``key=value`` lines up to the first ``Tree=`` line, with
  ``version``, ``num_class``, ``num_tree_per_iteration``, ``label_index``, ``max_feature_idx``,
  ``feature_names`` and ``feature_infos`` (one per feature), ``objective`` and ``tree_sizes``;
* the trees: tree ``i`` starts at the sum of the sizes before it (counted from the first
  ``Tree=`` line), is exactly ``tree_sizes[i]`` bytes, opens with ``Tree=i``, holds at most 22
  ``key=value`` lines (what the parser reads) and ends with a blank line; the text after the
  last tree opens with ``end of trees``;
* each tree: ``num_leaves``, ``num_cat=0`` (the scorer's features are numeric) and the arrays
  with the lengths the parser expects, every entry a number; split features below the feature
  count, numeric decision types, and child indices that form one tree from node 0 (a cycle
  would make prediction loop forever, an index out of range would read out of bounds).

A sha256 recorded at save time (:data:`DIGEST_SUFFIX`) catches every other edit; this check is
what keeps a run saved without one loadable and safe.
"""

from __future__ import annotations

import re
from pathlib import Path

from gradebench.errors import ModelTextError, RunError

#: the digest file written beside the model: ``<sha256>  <model file name>`` (``sha256sum`` format)
DIGEST_SUFFIX = ".sha256"
HEADER_KEYS = ("version", "num_class", "num_tree_per_iteration", "label_index", "max_feature_idx",
               "feature_names", "feature_infos", "objective", "tree_sizes")
#: lines of one tree that LightGBM's parser reads (``max_num_line`` in ``Tree::Tree``)
MAX_TREE_LINES = 22
#: arrays of a tree with ``num_leaves - 1`` entries (one per split) and with ``num_leaves``
SPLIT_ARRAYS = ("split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child",
                "internal_value", "internal_weight", "internal_count")
LEAF_ARRAYS = ("leaf_value", "leaf_weight", "leaf_count")
REQUIRED_SPLIT_ARRAYS = ("split_feature", "threshold", "left_child", "right_child")
_INT = re.compile(r"^-?[0-9]+$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_PARAM = re.compile(r"^\[[A-Za-z0-9_]+: [^\n]*\]$")
#: a number as LightGBM writes one (``%.17g``-style, ``inf``/``nan`` spelled out); no ``_`` or spaces
_NUMBER = re.compile(r"^[-+]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|inf|nan)$", re.IGNORECASE)


def digest_line(sha256: str, model_name: str) -> str:
    """The digest file's content: ``sha256sum`` format, so ``sha256sum -c`` checks it too."""
    return f"{sha256}  {model_name}\n"


def parse_digest(text: str, model_name: str) -> str:
    """The sha256 in a digest file's ``text`` for ``model_name``.

    Raises:
        ModelTextError: not one ``<64 hex digits>  <model_name>`` line.
    """
    parts = text.strip().split()
    if len(parts) != 2 or not _HEX64.match(parts[0]) or parts[1].lstrip("*") != model_name:
        raise ModelTextError(f"not a sha256 line for {model_name} (expected '<64 hex digits>  {model_name}')")
    return parts[0]


def _ints(key: str, value: str, n: int | None = None) -> list[int]:
    items = value.split(" ") if value else []
    if n is not None and len(items) != n:
        raise ModelTextError(f"{key} has {len(items)} entries, expected {n}")
    if not all(_INT.match(x) for x in items):
        raise ModelTextError(f"{key} holds a value that is not an integer")
    return [int(x) for x in items]


def _floats(key: str, value: str, n: int) -> None:
    items = value.split(" ") if value else []
    if len(items) != n:
        raise ModelTextError(f"{key} has {len(items)} entries, expected {n}")
    for x in items:
        if not _NUMBER.match(x):
            raise ModelTextError(f"{key} holds a value that is not a number ({x[:20]!r})")


def _key_values(lines: list[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key:
            raise ModelTextError(f"{where}: line {line[:40]!r} is not key=value")
        if "=" in value and key != "feature_names":
            raise ModelTextError(f"{where}: line {line[:40]!r} has more than one '='")
        if key in out:
            raise ModelTextError(f"{where}: key {key!r} appears twice")
        out[key] = value
    return out


def _header(text: str) -> tuple[dict[str, str], int]:
    """The header's key/values and the offset of the first ``Tree=`` line."""
    m = re.search(r"^Tree=", text, flags=re.MULTILINE)
    if m is None:
        raise ModelTextError("no tree (no 'Tree=' line): the file is truncated or not a LightGBM model")
    lines = text[: m.start()].split("\n")
    if lines[0] != "tree":
        raise ModelTextError("the first line is not 'tree': not a LightGBM text model")
    kv = _key_values([ln for ln in lines[1:] if ln], "header")
    missing = [k for k in HEADER_KEYS if k not in kv]
    if missing:
        raise ModelTextError(f"the header lacks {', '.join(missing)}")
    return kv, m.start()


def _check_children(tree: str, left: list[int], right: list[int], n_leaves: int) -> None:
    """Children form one binary tree from node 0 over ``n_leaves - 1`` splits and ``n_leaves`` leaves."""
    n_splits = n_leaves - 1
    seen_nodes, seen_leaves = {0}, set()
    for child in left + right:
        if child >= 0:
            if child >= n_splits or child in seen_nodes:
                raise ModelTextError(f"{tree}: child index {child} is out of range or reached twice")
            seen_nodes.add(child)
        else:
            leaf = ~child
            if leaf >= n_leaves or leaf in seen_leaves:
                raise ModelTextError(f"{tree}: leaf index {leaf} is out of range or reached twice")
            seen_leaves.add(leaf)
    # every split is some node's child exactly once (or the root) and every leaf is reached once;
    # with n_splits nodes and n_splits + n_leaves - 1 child slots that makes it one tree from 0,
    # unless a cycle detaches part of it, which a walk from the root finds
    reached, stack = 0, [0]
    while stack:
        node = stack.pop()
        reached += 1
        if reached > n_splits:
            raise ModelTextError(f"{tree}: the splits do not form a tree (a cycle)")
        stack.extend(c for c in (left[node], right[node]) if c >= 0)
    if reached != n_splits or len(seen_leaves) != n_leaves:
        raise ModelTextError(f"{tree}: the splits do not form one tree from node 0")


def _check_tree(i: int, block: str, n_features: int) -> None:
    tree = f"tree {i}"
    first, _, body = block.partition("\n")
    if first != f"Tree={i}":
        raise ModelTextError(f"{tree} does not start with 'Tree={i}' where tree_sizes puts it "
                             f"(found {first[:30]!r}): the file is truncated or edited")
    end = body.find("\n\n")
    if end < 0 or body[end:].strip("\n"):
        raise ModelTextError(f"{tree} does not end with a blank line where tree_sizes says it ends: "
                             "the file is truncated or edited")
    lines = body[:end].split("\n")
    if len(lines) > MAX_TREE_LINES:
        raise ModelTextError(f"{tree} has {len(lines)} lines (LightGBM reads {MAX_TREE_LINES})")
    kv = _key_values(lines, tree)
    for key in ("num_leaves", "num_cat", "leaf_value"):
        if key not in kv:
            raise ModelTextError(f"{tree} lacks {key}")
    (n_leaves,) = _ints("num_leaves", kv["num_leaves"], 1)
    if n_leaves < 1:
        raise ModelTextError(f"{tree}: num_leaves is {n_leaves}")
    if _ints("num_cat", kv["num_cat"], 1) != [0]:
        raise ModelTextError(f"{tree} has categorical splits (num_cat != 0), which this scorer never trains")
    if kv.get("is_linear", "0") != "0":
        raise ModelTextError(f"{tree} is a linear tree (is_linear != 0), which this scorer never trains")
    if "shrinkage" in kv:
        _floats("shrinkage", kv["shrinkage"], 1)
    for key in LEAF_ARRAYS:
        if key in kv:
            _floats(key, kv[key], n_leaves)
    if n_leaves == 1:
        return
    for key in REQUIRED_SPLIT_ARRAYS:
        if key not in kv:
            raise ModelTextError(f"{tree} lacks {key}")
    for key in SPLIT_ARRAYS:
        if key in kv:
            _floats(key, kv[key], n_leaves - 1)
    features = _ints("split_feature", kv["split_feature"], n_leaves - 1)
    if any(not 0 <= f < n_features for f in features):
        raise ModelTextError(f"{tree}: a split_feature is outside 0..{n_features - 1}")
    if "decision_type" in kv:
        for d in _ints("decision_type", kv["decision_type"], n_leaves - 1):
            if not 0 <= d < 128 or d & 1 or (d >> 2) & 3 == 3:
                raise ModelTextError(f"{tree}: decision_type {d} is not a numerical split")
    left = _ints("left_child", kv["left_child"], n_leaves - 1)
    right = _ints("right_child", kv["right_child"], n_leaves - 1)
    _check_children(tree, left, right, n_leaves)


def check_model_text(text: str) -> int:
    """Check a LightGBM text model (see the module docstring); returns its number of trees.

    Raises:
        ModelTextError: the first problem found, in words.
    """
    if "\r" in text or "\0" in text:
        raise ModelTextError("the text holds a carriage return or NUL byte, which LightGBM never writes")
    kv, start = _header(text)
    for key in ("num_class", "num_tree_per_iteration", "label_index", "max_feature_idx"):
        _ints(key, kv[key], 1)
    if _ints("num_class", kv["num_class"])[0] != 1 or _ints("num_tree_per_iteration",
                                                              kv["num_tree_per_iteration"])[0] != 1:
        raise ModelTextError("num_class and num_tree_per_iteration must be 1 for a ranker")
    n_features = _ints("max_feature_idx", kv["max_feature_idx"])[0] + 1
    if n_features < 1:
        raise ModelTextError("max_feature_idx is negative")
    for key in ("feature_names", "feature_infos"):
        if len(kv[key].split(" ")) != n_features:
            raise ModelTextError(f"{key} does not name {n_features} features")
    if kv["objective"].split(" ")[0] != "lambdarank":
        raise ModelTextError(f"objective is {kv['objective'][:30]!r}, not lambdarank")
    sizes = _ints("tree_sizes", kv["tree_sizes"])
    if not sizes or any(s <= 0 for s in sizes):
        raise ModelTextError("tree_sizes is empty or holds a size <= 0")
    # tree_sizes count bytes; every character of a LightGBM model is ASCII (checked by the caller)
    offset = start
    for i, size in enumerate(sizes):
        if offset + size > len(text):
            raise ModelTextError(f"tree {i} ends at byte {offset + size}, past the end of the file "
                                 f"({len(text)} bytes): the file is truncated")
        _check_tree(i, text[offset: offset + size], n_features)
        offset += size
    if not text[offset:].startswith("end of trees\n"):
        raise ModelTextError("no 'end of trees' line after the last tree: the file is truncated or edited")
    _check_parameters(text[offset:])
    return len(sizes)


def _check_parameters(tail: str) -> None:
    """The ``parameters:`` section as LightGBM's ``GetLoadedParam`` reads it: ``[key: value]`` lines
    (a line without ``:`` makes it index past the end of a vector)."""
    lines = [ln for ln in tail.split("\n") if ln]
    if "parameters:" not in lines:
        return
    for line in lines[lines.index("parameters:") + 1:]:
        if line == "end of parameters":
            return
        if not _PARAM.match(line):
            raise ModelTextError(f"parameters: line {line[:40]!r} is not '[key: value]'")


def read_model_text(path: Path, *, kind: str, digest_path: Path | None = None, hint: str) -> str:
    """The text of the LightGBM model file ``path``, checked (digest when recorded, then structure).

    Args:
        path: the model file.
        kind: what the model is, for the message (``"LambdaMART"``: "cannot load the LambdaMART model").
        digest_path: its digest file (:data:`DIGEST_SUFFIX`); None or absent: structure only
            (a run saved before digests were recorded).
        hint: how to fix a bad file (what the caller's user should do).

    Raises:
        RunError: naming the file: unreadable, not ASCII, another sha256 than recorded, or
            malformed (:func:`check_model_text`).
    """
    import hashlib

    def fail(problem: str, where: Path = path) -> RunError:
        return RunError(f"cannot load the {kind} model: {problem}", path=where, hint=hint)

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise fail("the file is missing") from None
    except OSError as e:
        raise fail(f"the file is unreadable ({e.strerror or e})") from None
    if digest_path is not None and digest_path.exists():
        try:
            want = parse_digest(digest_path.read_text(encoding="ascii"), path.name)
        except (OSError, UnicodeDecodeError, ModelTextError) as e:
            raise fail(f"its recorded sha256 is unreadable ({e})", digest_path) from None
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            raise fail(f"its sha256 is {got[:12]}..., not the {want[:12]}... recorded at save time "
                       "(the file was truncated or changed)")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise fail(f"byte {e.start} is not ASCII, so this is not LightGBM's text format") from None
    try:
        check_model_text(text)
    except ModelTextError as e:
        raise fail(str(e)) from None
    return text

"""``gradebench build --workers N``: any number of workers gives the same files; more than the cores is said once."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gradebench.threads import available_cores


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_workers_do_not_change_the_build(cli, tmp_path):
    cores = available_cores()
    runs = {}
    for n in (1, cores + 1):
        code, out, err = cli("build", "demo", "--out", tmp_path / f"w{n}", "--workers", n, "--no-validity",
                             "--no-validate", "--json")
        assert code == 0, err
        runs[n] = json.loads(out)
        warned = [line for line in err.splitlines() if "--workers" in line]
        if n > cores:
            assert warned == [f"gradebench: warning: --workers {n} is more than the {cores} cores this process "
                              f"may use; the workers will share them"]
        else:
            assert warned == []
    one, many = runs[1], runs[cores + 1]
    assert one["fingerprint"] == many["fingerprint"]
    assert _digests(Path(one["path"])) == _digests(Path(many["path"]))


def test_workers_must_be_positive(cli, tmp_path):
    code, out, err = cli("build", "demo", "--out", tmp_path, "--workers", 0)
    assert code == 2 and out == ""
    assert "--workers" in err and not list(tmp_path.iterdir())

"""The build engine is the data layer: building without validity figures loads no model library."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("torch", "transformers", "trl", "lightgbm", "sentence_transformers", "sklearn")


def test_build_no_validity_imports_no_model_library(tmp_path):
    code = (
        "import json, sys; from gradebench.cli import main; "
        f"rc = main(['build', 'demo', '--out', {str(tmp_path)!r}, '--no-validity', '--json']); "
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})); "
        "mine = sorted(m for m in sys.modules if m.startswith(('gradebench.scorers', 'gradebench.training.')) "
        "and m not in ('gradebench.training.options', 'gradebench.training.checkpoints')); "  # stdlib/pydantic only
        "sys.stderr.write(json.dumps({'heavy': heavy, 'mine': mine})); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stderr.strip().splitlines()[-1])
    assert loaded == {"heavy": [], "mine": []}
    assert json.loads(out.stdout)["validity"] is None


def test_the_engine_modules_import_no_model_library():
    code = (
        "import sys, pkgutil, importlib, gradebench.benchmark as b\n"
        "for m in pkgutil.iter_modules(b.__path__): importlib.import_module('gradebench.benchmark.' + m.name)\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)

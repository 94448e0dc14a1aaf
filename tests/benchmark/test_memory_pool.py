"""Build processes allocate Arrow memory from malloc (freed memory goes back); library calls
leave their caller's Arrow pool alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.conftest import REPO


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_build_worker_uses_the_system_pool():
    out = _run("""
        import signal
        import pyarrow as pa
        from gradebench.benchmark.workers import _init_worker
        before = pa.default_memory_pool().backend_name
        _init_worker()
        print(before, pa.default_memory_pool().backend_name)
    """)
    before, after = out.split()
    assert after == "system" and before != "system"


def test_the_build_command_uses_it_and_the_library_call_does_not(tmp_path):
    out = _run(f"""
        import pyarrow as pa
        import gradebench as gb
        before = pa.default_memory_pool().backend_name
        if __name__ == "__main__":
            gb.build("demo", out={str(tmp_path / "api")!r}, progress=False, validate=False, validity=False)
        after_api = pa.default_memory_pool().backend_name
        from typer.testing import CliRunner
        from gradebench.cli.app import app
        r = CliRunner().invoke(app, ["build", "demo", "--out", {str(tmp_path / "cli")!r}, "--no-validate",
                                     "--no-validity", "--json"])
        assert r.exit_code == 0, r.output
        print(before, after_api, pa.default_memory_pool().backend_name)
    """)
    before, after_api, after_cli = out.split()
    assert before == after_api != "system"
    assert after_cli == "system"

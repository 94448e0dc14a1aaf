"""Old import paths of modules that moved in the layout redesign keep working (and say where to go)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from gradebench._moved import MOVED, OLD_PACKAGES
from tests.conftest import REPO


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_module_is_the_new_module(old):
    with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_old_packages_forward_their_names_and_never_rebind_new_ones():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import gradebench.builders.esnli as old_builder
        from gradebench.builders import get_builder  # the old registry entry point
    import gradebench.datasets as datasets
    import gradebench.datasets.esnli.builder as new_builder

    assert old_builder is new_builder
    assert get_builder("esnli") is new_builder.ESNLIBuilder
    # importing the old submodule must not replace the new package's `esnli` subpackage
    assert datasets.esnli.__name__ == "gradebench.datasets.esnli"
    assert set(OLD_PACKAGES) >= {"gradebench.sources", "gradebench.harness", "gradebench.results"}


def test_old_public_names_in_a_fresh_process():
    code = (
        "import warnings; warnings.simplefilter('ignore')\n"
        "from gradebench.lists import open_benchmark, Lists\n"
        "from gradebench.harness.train import train\n"
        "from gradebench.results.query import connect\n"
        "from gradebench.results import evaluate_scorer\n"
        "from gradebench.sources.esnli import read_esnli_csv\n"
        "from gradebench.benchmark.validity import validity_figures\n"
        "from gradebench.catalog import list_recipes\n"
        "import gradebench.benchmark.lists as new\n"
        "assert open_benchmark is new.open_benchmark\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout == "ok\n"


def test_nothing_inside_the_package_uses_an_old_path():
    """The table is for users' code only: the package imports modules at their new homes."""
    from tests.test_layering import import_graph

    used = {target for imports in import_graph().values() for _, target in imports}
    assert not used & (set(MOVED) | set(OLD_PACKAGES))

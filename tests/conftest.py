"""Shared test setup: never reach a model hub, keep torch to one thread per test, and run every
test on the same CPU kernels whatever the machine.

Many tests train tiny models for a few hundred steps, and which label a toy task learns can turn
on the last bit of a matrix multiply. Unpinned, torch picks its kernels by the processor (AVX2 or
AVX-512 loops, MKL and oneDNN paths of their own), so a score that clears its bar on one machine
can miss it on another. The workflow's own AVX2 pins, set here before torch is imported, make
every x86-64 machine with AVX2 compute the same bits, so a test passes or fails everywhere alike.
A variable already set (to test another kernel path) is left as it is.
"""

import functools
import os
import sys
from pathlib import Path

import pytest

from workflow_scripts.numerics import CPU_PINS, describe

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

if "avx2" in describe()["cpu"]["isa"]:
    assert "torch" not in sys.modules, "torch was imported before the numerics pins were set"
    for name, value in CPU_PINS["avx2"].items():
        os.environ.setdefault(name, value)


# The longest groups, started first: the demo's own run (about 10 of the 27 minutes of a serial suite on a
# 2-core Zen 4) and the Slurm tests (about 5).
LONGEST_FIRST = ("tests/workflow/test_demo.py", "tests/slurm")


def _module(item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Fast tests first, so that ``pytest -x`` stops on a unit failure within minutes: modules holding a test
    marked slow run after all others, each module's tests kept together and in order (a module's fixtures are
    built once). In a pytest-xdist worker the longest groups go first instead, so the other worker's tests
    run beside them."""
    slow = {_module(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _module(item) in slow)
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: group_of(config.rootpath, _module(item)) not in LONGEST_FIRST)


@functools.cache
def group_of(root: Path, module: str) -> str:
    """The modules that run whole on one pytest-xdist worker (``make test``: ``-n 2 --dist loadfile``), so that
    module fixtures and shared session fixtures are built once: each module alone, every Slurm test together
    (one local cluster), every module naming the finished small study together."""
    if module.startswith("tests/slurm/"):
        return "tests/slurm"
    if "small_study_run" in (root / module).read_text():
        return "small_study_run"
    return module


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the shared-fixture groups of ``group_of``."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadGroupedFiles(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(config.rootpath, nodeid.split("::")[0])

    return LoadGroupedFiles(config, log)


@pytest.fixture(scope="session")
def small_study_run(tmp_path_factory):
    """workflow_harness.small_study run once for every module that plans against a finished study; a module
    that changes its files works on workflow_harness.copy_finished of it."""
    from workflow_harness import run_small_study

    return run_small_study(tmp_path_factory.mktemp("small-study"))

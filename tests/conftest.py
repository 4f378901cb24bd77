"""Shared test setup: never reach a model hub, keep torch to one thread per test, and run every
test on the same CPU kernels whatever the machine.

Many tests train tiny models for a few hundred steps, and which label a toy task learns can turn
on the last bit of a matrix multiply. Unpinned, torch picks its kernels by the processor (AVX2 or
AVX-512 loops, MKL and oneDNN paths of their own), so a score that clears its bar on one machine
can miss it on another. The workflow's own AVX2 pins, set here before torch is imported, make
every x86-64 machine with AVX2 compute the same bits, so a test passes or fails everywhere alike.
A variable already set (to test another kernel path) is left as it is.
"""

import os
import sys

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


# Session fixtures that several modules share: under pytest-xdist those modules run in one worker, so each
# fixture is built once (one Slurm cluster, one finished small study).
SHARED_FIXTURES = ("cluster", "small_study_run")
# The longest groups, started first when workers share the suite: the demo's own run (about 10 min of a
# 27-min serial suite on a 2-core Zen 4) and the Slurm tests (about 5 min).
LONGEST_FIRST = ("tests/workflow/test_demo.py", "cluster")


def _module(item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Fast tests first, so that ``pytest -x`` stops on a unit failure within minutes: modules holding a test
    marked slow run after all others, each module's tests kept together and in order (a module's fixtures are
    built once). With ``--dist loadgroup`` (``make test``) each group goes whole to one worker (groups)."""
    slow = {_module(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _module(item) in slow)
    if config.getoption("dist", "no") == "loadgroup":
        group = groups(items)
        items.sort(key=lambda item: group[_module(item)] not in LONGEST_FIRST)
        for item in items:
            item.add_marker(pytest.mark.xdist_group(group[_module(item)]))


def groups(items) -> dict[str, str]:
    """Each module's worker group: the module itself, or the shared session fixture it uses (SHARED_FIXTURES),
    so that module fixtures and shared fixtures are each built once."""
    group = {}
    for item in items:
        shared = [name for name in SHARED_FIXTURES if name in item.fixturenames]
        group.setdefault(_module(item), _module(item))
        if shared:
            group[_module(item)] = shared[0]
    return group


@pytest.fixture(scope="session")
def small_study_run(tmp_path_factory):
    """workflow_harness.small_study run once for every module that plans against a finished study; a module
    that changes its files works on workflow_harness.copy_finished of it."""
    from workflow_harness import run_small_study

    return run_small_study(tmp_path_factory.mktemp("small-study"))

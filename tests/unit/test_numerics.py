"""CPU numerics pinned to AVX2 train the same bits on every x86-64 machine; provenance says which
kernels each job ran; deterministic algorithms where a study asks for them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_scripts.numerics import CPU_PINS, DETERMINISTIC, RECORDED, Numerics, describe, environment, export

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# sha256 of the final weights of numerics_golden_run.py under the AVX2 pins, with the torch and
# transformers that pyproject.toml pins, per CPU vendor: MKL_CBWR=AVX2 is Intel's reproducible branch,
# and on other vendors MKL takes its AUTO branch (docs/reproducibility-and-provenance.md). AMD's was
# measured on Zen 2 to Zen 5, Intel's on a Xeon with AVX-512 and AMX. A new torch or transformers
# changes them: run the script under the pins on each vendor and write the new values here.
GOLDEN = {
    "AuthenticAMD": "ef177371fd69a268dd6d4ebd567171b352472ae44f56d426a95eb9be7cde530f",
    "GenuineIntel": "8128fd51005915269774223d972d35baec27a2dfbc9522892007c5211be33bb2",
}
CPU = describe()["cpu"]

needs_avx2 = pytest.mark.skipif("avx2" not in CPU["isa"], reason="the pins need an x86-64 CPU with AVX2")
needs_golden = pytest.mark.skipif(
    CPU["vendor"] not in GOLDEN, reason=f"no golden weights recorded for {CPU['vendor']} processors"
)


def _environ(**extra: str) -> dict[str, str]:
    """This environment without any pin, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in RECORDED}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _fingerprint(env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, str(HERE / "numerics_golden_run.py")], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()[-1]


@needs_avx2
@needs_golden
@pytest.mark.parametrize(
    "machine",
    [{}, {"MKL_ENABLE_INSTRUCTIONS": "AVX2"}],
    ids=["this-cpu", "mkl-limited-to-avx2"],
)
def test_pinned_run_gives_the_golden_weights(machine):
    """Under the pins, this CPU (whatever it offers beyond AVX2) and one whose MKL stops at AVX2 end
    a pretraining and fine-tuning run with the committed weights."""
    env = _environ(**environment(Numerics(cpu="avx2")), **machine)
    assert _fingerprint(env) == GOLDEN[CPU["vendor"]]


@needs_avx2
@needs_golden
def test_without_the_pins_another_kernel_path_gives_other_weights():
    """The check can fail: ATen's plain (non-vectorised) kernels, unpinned, train other bits."""
    assert _fingerprint(_environ(ATEN_CPU_CAPABILITY="default")) != GOLDEN[CPU["vendor"]]


def test_export_sets_the_pins_a_study_asks_for_and_clears_them_otherwise():
    environ = {"MKL_CBWR": "COMPATIBLE", "PATH": "/bin"}
    export(Numerics(cpu="avx2", deterministic=True), environ)
    assert environ == {**CPU_PINS["avx2"], **DETERMINISTIC, "PATH": "/bin"}
    export(Numerics(), environ)
    assert environ == {"PATH": "/bin"}


_RECORD = """
import json, sys, torch
from workflow_scripts import provenance
provenance.record(sys.argv[1], step="probe", inputs={})
"""


@needs_avx2
def test_provenance_records_the_cpu_kernels_blas_and_pins(tmp_path):
    out = tmp_path / "artifact"
    out.mkdir()
    env = _environ(**environment(Numerics(cpu="avx2")))
    subprocess.run([sys.executable, "-c", _RECORD, str(out)], env=env, check=True, timeout=120)
    numerics = json.loads((out / "provenance.json").read_text())["numerics"]
    assert numerics["pins"] == CPU_PINS["avx2"]
    assert numerics["torch"]["aten_capability"] == "AVX2"
    assert numerics["torch"]["blas"] == "mkl" and numerics["torch"]["mkl"]
    assert "avx2" in numerics["cpu"]["isa"] and numerics["cpu"]["model"] and numerics["cpu"]["vendor"]


_STEP = """
import torch
from workflow_scripts.cli import run
run(lambda argv: print(torch.are_deterministic_algorithms_enabled()), [])
"""


@pytest.mark.parametrize("deterministic", [True, False])
def test_a_step_runs_deterministic_algorithms_where_the_study_asks(deterministic):
    env = _environ(**environment(Numerics(deterministic=deterministic)))
    result = subprocess.run([sys.executable, "-c", _STEP], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(deterministic)

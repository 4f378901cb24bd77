"""The GPU check's fine-tuning part runs end to end on the CPU with tiny shapes (--cpu-smoke)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_cpu_smoke_writes_every_figure_the_gpu_run_records(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    script = ROOT / "benchmarks" / "gpu_check_finetune.py"
    done = subprocess.run(
        [sys.executable, str(script), "--cpu-smoke", "--runs", "2"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "gpu_check_finetune_smoke.json").read_text())
    assert record["cpu_smoke"] is True and record["device"].startswith("cpu") and record["skipped"] == []
    variants = record["variants"]
    assert set(variants) == {"fp32", "bf16", "bf16_cudnn_allowed", "bf16_math_only"}
    assert variants["bf16_cudnn_allowed"]["sdpa_backends"] == [] and variants["bf16"]["sdpa_backends"] == [
        "flash",
        "efficient",
        "math",
    ]
    runs = [*variants.values(), *record["large_and_long"].values(), *record["cuda_graphs"].values()]
    assert set(record["cuda_graphs"]) == {"bf16", "bf16_cuda_graphs"}
    for run in runs:
        assert run["precision"] == "fp32"  # the CPU trains in fp32 whatever is asked
        assert run["padding"]["policy"] == "longest" and run["cuda_graphs"] is False  # the CPU pads as before
        assert run["steps"] == 3 and run["examples"] == 3 * run["batch"] and math.isfinite(run["final_loss"])
    assert record["large_and_long"]["pubmedqa_512"]["lengths"] == [200, 512]
    (shared,) = record["runs_per_card"]
    assert shared["runs"] == 2 and len(shared["examples_per_s_per_run"]) == 2
    assert shared["examples_per_s_per_card"] > 0

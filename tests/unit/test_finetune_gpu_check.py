"""The GPU check's fine-tuning part runs end to end on the CPU with tiny shapes (--cpu-smoke)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cpu_smoke_writes_every_figure_the_gpu_run_records(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    script = ROOT / "benchmarks" / "gpu_check_finetune.py"
    done = subprocess.run(
        [sys.executable, str(script), "--cpu-smoke", "--runs", "2"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "gpu_check_finetune_smoke.json").read_text())
    assert record["cpu_smoke"] is True and record["device"].startswith("cpu")
    for precision in ("fp32", "bf16"):
        run = record["precision"][precision]
        assert run["precision"] == "fp32"  # the CPU trains in fp32 whatever is asked
        assert run["steps"] == 3 and run["examples"] == 96 and math.isfinite(run["final_loss"])
    (shared,) = record["runs_per_card"]
    assert shared["runs"] == 2 and len(shared["examples_per_s_per_run"]) == 2
    assert shared["examples_per_s_per_card"] > 0

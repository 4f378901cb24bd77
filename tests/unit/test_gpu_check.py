"""benchmarks/gpu_check.sh --cpu-smoke: the first-GPU check runs end to end, so it cannot rot unnoticed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# not in the GPU machine's image: the check must not import them
ABSENT_ON_THE_GPU_MACHINE = ("snakemake", "pubmed_parser", "seqeval", "datasets", "jsonschema")


def test_cpu_smoke_runs_every_section_without_the_pipelines_extra_packages(tmp_path):
    blocker = tmp_path / "site" / "sitecustomize.py"
    blocker.parent.mkdir()
    blocker.write_text(
        "import importlib.abc, sys\n"
        f"ABSENT = {ABSENT_ON_THE_GPU_MACHINE!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ABSENT:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (absent on the GPU machine)')\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "PYTHONPATH")}
    env.update(PYTHON=sys.executable, PYTHONPATH=str(blocker.parent), CUDA_VISIBLE_DEVICES="")
    out = tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--cpu-smoke", "--out-dir", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "gpu_check_pretrain.json").read_text())
    assert result["mode"] == "cpu-smoke" and result["errors"] == {}
    sections = result["sections"]
    assert set(sections) == {"compile", "micro_batch", "profile", "distill", "data_path"}
    assert sections["compile"]["eager"]["tokens_per_s"] > 0 and sections["compile"]["compiled"]["tokens_per_s"] > 0
    assert "6 x W_enc" in sections["compile"]["formula"]
    micro = sections["micro_batch"]
    assert micro["paper"]["micro"] < micro["auto"]["micro"] == micro["share"]  # a tiny model: the whole share fits
    shares = sections["profile"]
    assert all(0 <= shares[k] <= 1 for k in ("matmul", "attention", "other_kernels", "idle"))
    assert shares["matmul"] > 0
    distill = sections["distill"]
    assert distill["paper"]["micro"] < distill["auto"]["micro"]
    assert all(distill[k]["estimated_peak_gb"] > 0 and distill[k]["step_s"] > 0 for k in ("paper", "auto"))
    data = sections["data_path"]
    assert data.get("serial", data.get("prefetch_on", {})).get("tokens_per_s", 0) > 0

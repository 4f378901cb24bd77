"""The installed `slurm` profile together with the workflow's own profiles/default.

Snakemake merges a workflow profile over the `--profile` ones key by key: a top-level key
set in profiles/default replaces the site profile's whole entry, so job sizes live in the
config and profiles/default leaves default-resources and set-resources to the site. A dry
run (no cluster needed) shows which partition each job would be submitted to.
"""

from __future__ import annotations

import os
import subprocess

import yaml
from workflow_harness import BIN, ROOT, copy_demo

TARGET = "results/pretrain/demo-roberta/model.safetensors"


def resources_of(output: str, rule: str) -> str:
    block = output.split(f"rule {rule}:")[1]
    return next(line for line in block.splitlines() if line.strip().startswith("resources:"))


def test_site_partitions_survive_the_workflow_profile(tmp_path):
    work = copy_demo(tmp_path)
    profile = (ROOT / "profiles/slurm/config.yaml").read_text()
    for placeholder, value in {
        "SITE_CPU_PARTITION": "cpu",
        "SITE_GPU_PARTITION": "gpu",
        "SITE_ACCOUNT": "acct",
        "SITE_GPU_MODEL": "a100",
    }.items():
        profile = profile.replace(placeholder, value)
    installed = tmp_path / "xdg" / "snakemake" / "slurm" / "config.yaml"
    installed.parent.mkdir(parents=True)
    installed.write_text(profile)
    assert yaml.safe_load(profile)["set-resources"]["pretrain"]["slurm_partition"] == "gpu"
    proc = subprocess.run(
        [str(BIN / "snakemake"), "-n", "--profile", "slurm", "--directory", str(work), TARGET],
        cwd=ROOT,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "workflow specific profile" in proc.stdout + proc.stderr
    assert "slurm_partition=gpu" in resources_of(proc.stdout, "pretrain")
    assert "slurm_partition=cpu" in resources_of(proc.stdout, "train_vocab")
    # the job's size comes from the demo config's `resources:`, the account from the site
    assert "mem_mb=2000" in resources_of(proc.stdout, "pretrain") and "runtime=30" in resources_of(
        proc.stdout, "pretrain"
    )
    assert "slurm_account=acct" in resources_of(proc.stdout, "pretrain")

"""The partition check run once before the first sbatch (no cluster needed)."""

from __future__ import annotations

import pytest

from workflow_scripts.config import slurm_partitions
from workflow_scripts.errors import PipelineError

SINFO = "cpu*\ngpu\nbigmem\n"


def test_sinfo_output_without_the_default_marker():
    assert slurm_partitions.parse_sinfo(SINFO) == {"cpu", "gpu", "bigmem"}


def test_requested_partitions_group_rules_and_skip_unset():
    jobs = [("pretrain", "gpu"), ("finetune", "gpu"), ("finetune", "gpu"), ("build_corpus", "cpu"), ("tables", None)]
    assert slurm_partitions.requested_partitions(jobs) == {"cpu": ["build_corpus"], "gpu": ["finetune", "pretrain"]}


def test_known_partitions_pass():
    slurm_partitions.check({"cpu": ["parse_corpus_file"], "gpu": ["pretrain"]}, {"cpu", "gpu"})


def test_placeholder_names_the_key_to_set():
    with pytest.raises(PipelineError) as err:
        slurm_partitions.check({"cpu": ["build_corpus"], "SITE_GPU_PARTITION": ["distill", "pretrain"]}, {"cpu"})
    message = str(err.value)
    assert "set SITE_GPU_PARTITION in ~/.config/snakemake/slurm/config.yaml" in message
    assert "rules distill, pretrain" in message
    assert "Nothing was submitted" in message


def test_unknown_partition_lists_the_cluster_partitions():
    with pytest.raises(
        PipelineError,
        match=r"slurm_partition 'gpus' of rule finetune is not a partition of this cluster \(sinfo lists: cpu, gpu\)",
    ):
        slurm_partitions.check({"gpus": ["finetune"]}, {"cpu", "gpu"})


def test_many_rules_are_summarised():
    rules = [f"rule{i}" for i in range(8)]
    with pytest.raises(PipelineError, match="rule4 and 3 more"):
        slurm_partitions.check({"nope": rules}, {"cpu"})


def test_placeholders_alone_need_no_sinfo(monkeypatch):
    monkeypatch.setattr(slurm_partitions.shutil, "which", lambda name: None)
    with pytest.raises(PipelineError, match="SITE_CPU_PARTITION"):
        slurm_partitions.check_jobs([("parse_corpus_file", "SITE_CPU_PARTITION")])
    with pytest.raises(PipelineError, match="sinfo not found"):
        slurm_partitions.check_jobs([("parse_corpus_file", "cpu")])

"""benchmarks/bench_dag.py reads every job of a dry run, grouped fine-tuning jobs included: its no-op mode
creates each job's outputs from this reading, and a job read without them leaves the study unfinished."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dag import parse_jobs  # noqa: E402

# An excerpt of the full study's `snakemake -n` (Snakemake 9.27): a job, then a group job's member.
DRY_RUN = """\
[Sun Nov 29 10:55:57 2026]
rule download_pmc_batch:
    input: results/raw/pmc/pmc-metadata.txt, results/configs/parse/pmc.yaml
    output: results/raw/pmc/batch~357, results/raw/pmc/batch~357.filelist.csv
    log: results/logs/download/pmc/batch~357.log
    jobid: 8057
    wildcards: corpus=pmc, batch=357
[Sun Nov 29 10:55:57 2026] Group job finetune (jobs in lexicogr. order):

    [Sun Nov 29 10:55:57 2026]
    rule finetune:
        input: results/configs/finetune/pubmedbert/i2b2-2014.yaml, results/tasks/i2b2-2014/data_card.json
        output: results/finetune/pubmedbert/i2b2-2014/fold~0/seed~4/metrics.json, results/finetune/pubmedbert/i2b2-2014/fold~0/seed~4/provenance.json
        log: results/logs/finetune/pubmedbert/i2b2-2014/fold~0/seed~4.log
        jobid: 2058
        wildcards: model=pubmedbert, task=i2b2-2014, fold=0, seed=4
"""  # noqa: E501


def test_a_group_jobs_members_are_read_with_their_inputs_and_outputs():
    download, finetune = parse_jobs(DRY_RUN)
    assert download == (
        "download_pmc_batch",
        ["results/raw/pmc/pmc-metadata.txt", "results/configs/parse/pmc.yaml"],
        ["results/raw/pmc/batch~357", "results/raw/pmc/batch~357.filelist.csv"],
    )
    run = "results/finetune/pubmedbert/i2b2-2014/fold~0/seed~4"
    assert finetune == (
        "finetune",
        ["results/configs/finetune/pubmedbert/i2b2-2014.yaml", "results/tasks/i2b2-2014/data_card.json"],
        [f"{run}/metrics.json", f"{run}/provenance.json"],
    )

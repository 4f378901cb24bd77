"""The workflow passes several corpora as repeated --corpus flags: every step keeps them all."""

from workflow_scripts.distill import distill as distill_train
from workflow_scripts.pretrain import pretrain as pretrain_train


def test_pretraining_reads_every_corpus():
    args = pretrain_train.parse_args(
        [
            "--settings",
            "s.yaml",
            "--corpus",
            "c/pubmed",
            "--corpus",
            "c/pmc",
            "c/mimic",
            "--tokenizer",
            "v",
            "--out",
            "m",
        ]
    )
    assert args.corpus == ["c/pubmed", "c/pmc", "c/mimic"]


def test_distillation_reads_every_corpus():
    args = distill_train.parse_args(
        ["--settings", "s.yaml", "--teacher", "t", "--corpus", "c/pubmed", "--corpus", "c/pmc", "--out", "s"]
    )
    assert args.corpus == ["c/pubmed", "c/pmc"]

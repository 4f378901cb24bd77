"""What reruns when you change X: each edit of a finished study plans exactly the jobs it must.

A small study runs for real once (workflow_harness.small_study: the demo's PubMed corpus
decontaminated against one task, a WordPiece vocabulary, a tiny model, its distilled student and a
decay branch of its run, two tasks, one seed); then, for
every row of the table below, the config is edited and `snakemake -n` must plan exactly the
jobs listed (rule -> count). docs/reproducibility-and-provenance.md's "What reruns when you change X" is this table.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_harness import BIN, ROOT, copy_finished, planned_after, planned_jobs, run_demo, settings_files

from workflow_scripts.config.validate import load_config

REPORT = {"report_settings": 1, "tables": 1, "plots": 1, "findings": 1, "cost": 1, "all": 1}
TABLES = {"tables": 1, "plots": 1, "findings": 1, "cost": 1, "all": 1}
# a model list or run list changed: the cost table's settings name other records
COST = {"cost_settings": 1}
MODELS = 3  # the teacher, its student and its decay branch, each fine-tuned on every task


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def edit(cfg: dict) -> None:
        *parents, last = path.split(".")
        node = cfg
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return edit


def _add_model(cfg: dict) -> None:
    cfg["models"]["tiny2"] = {**copy.deepcopy(cfg["models"]["tiny"]), "display": "Tiny 2"}
    cfg["models"]["tiny2"]["pretrain"]["seed"] = 7


def _add_control(cfg: dict) -> None:
    cfg["models"]["control"] = {"kind": "control", "display": "No pretraining", "init": "tiny"}


def _add_baseline(cfg: dict) -> None:
    cfg["models"]["none"] = {"kind": "baseline", "display": "No training"}


def _add_task(cfg: dict) -> None:
    demo = yaml.safe_load((ROOT / "demo" / "config.yaml").read_text())
    cfg["tasks"]["demo-nli"] = {**demo["tasks"]["demo-nli"], "finetune": cfg["tasks"]["demo-re"]["finetune"]}


# a corpus rebuilt: everything trained on it, its tables and the scores
CORPUS_DOWNSTREAM = {
    "build_corpus": 1,
    "train_vocab": 1,
    "vocab_diagnostics": 1,
    "pack": 1,
    "pack_index": 1,
    "pretrain": 2,
    "distill": 1,
    "heldout_table": 1,
    "inference_speed": MODELS,
    "finetune": 2 * MODELS,
    "corpus_table": 1,
    **TABLES,
}


def _runs(n: int) -> dict[str, int]:
    return {"finetune_settings": n, "finetune": n}


# (edit, what changes, expected jobs)
MATRIX: list[tuple[str, Callable[[dict], None], dict[str, int]]] = [
    ("a task's display label", _set("tasks.demo-ner.display", "NER (renamed)"), REPORT),
    ("a task's reference name", _set("tasks.demo-ner.reference", {"lewis": "NCBI-D."}), REPORT),
    ("a task's benchmark membership", _set("tasks.demo-re.benchmarks", ["lewis"]), REPORT),
    ("the aggregation statistic", _set("aggregation.statistic", "mean"), REPORT),
    ("the findings' level (report.alpha)", _set("report.alpha", 0.01), REPORT),
    ("the correction for many comparisons", _set("report.correction", "bonferroni"), REPORT),
    (
        "a model's display label (tables and plot legends)",
        _set("models.tiny.display", "Tiny (renamed)"),
        {**REPORT, **COST},
    ),
    ("a task's learning rate", _set("tasks.demo-re.finetune.lr", 5.0e-4), {**_runs(MODELS), **TABLES}),
    ("a task's epochs", _set("tasks.demo-re.finetune.epochs", 2), {**_runs(MODELS), **TABLES}),
    ("a task's seeds", _set("tasks.demo-re.seeds", [1, 2]), {"finetune": MODELS, **REPORT, **COST}),
    (
        "a corpus filter (min_words)",
        _set("corpora.pubmed.clean.min_words", 25),
        {"corpus_settings": 1, **CORPUS_DOWNSTREAM},
    ),
    (
        "a corpus's parsing option",
        _set("corpora.pubmed.clean.pubmed", {"include_title": False}),
        {"parse_settings": 1, "parse_corpus_file": 3, "corpus_settings": 1, **CORPUS_DOWNSTREAM},
    ),
    (
        "a model's pretraining lr",
        _set("models.tiny.pretrain.lr", 1.0e-3),
        {
            "model_settings": 2,
            "pretrain": 2,
            "distill": 1,
            "heldout_table": 1,
            "inference_speed": MODELS,
            "finetune": 2 * MODELS,
            **TABLES,
        },
    ),
    (
        "a decay branch's decay (decay_shape)",
        _set("models.tiny-decay.pretrain.decay_shape", "cosine"),
        {"model_settings": 1, "pretrain": 1, "inference_speed": 1, "finetune": 2, "heldout_table": 1, **TABLES},
    ),
    (
        "changing a model's packing reruns only the packing and what trains on it",
        _set("models.tiny.pretrain.packing", "documents"),
        {
            # the model and its decay branch, which inherits its packing
            "model_settings": 2,
            "pack": 1,
            "pack_index": 1,
            "pretrain": 2,
            "distill": 1,
            "heldout_table": 1,
            "inference_speed": MODELS,
            "finetune": 2 * MODELS,
            **TABLES,
        },
    ),
    (
        "adding a model",
        _add_model,
        {"model_settings": 1, "pretrain": 1, "heldout_table": 1, "inference_speed": 1, **_runs(2), **REPORT, **COST},
    ),
    (
        "giving a model pretraining seeds: one model per seed, each with its runs",
        _set("models.tiny-decay.pretrain_seeds", [42, 7]),
        {
            "model_settings": 2,
            "pretrain": 2,
            "heldout_table": 1,
            "inference_speed": 2,
            **_runs(4),
            **REPORT,
            **COST,
        },
    ),
    (
        "adding a no-pretraining control",
        _add_control,
        {"model_settings": 1, "control": 1, "inference_speed": 1, **_runs(2), **REPORT, **COST},
    ),
    ("adding the no-training baseline", _add_baseline, {"baseline_settings": 2, "baseline": 2, **REPORT, **COST}),
    (
        "adding a task",
        _add_task,
        {"download_task_file": 3, "task_settings": 1, "prepare_task": 1, **_runs(MODELS), **REPORT, **COST},
    ),
    ("a job size in resources:", _set("resources.finetune", {"mem_mb": 3000, "runtime": 45, "threads": 2}), {}),
    ("the CPU numerics pins", _set("numerics", {"cpu": "avx2", "deterministic": True}), {}),
]


@pytest.fixture(scope="module")
def finished(small_study_run) -> Path:
    """The session's finished small study (tests/conftest.py); each test here leaves it as it found it."""
    return small_study_run


def _plan(workdir: Path, *args: str) -> dict[str, int]:
    result = run_demo(workdir, "-n", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return planned_jobs(result.stdout + result.stderr)


def test_a_finished_study_plans_nothing(finished):
    assert _plan(finished) == {}


def _plans_of(workdir: Path, rows: list[tuple[str, Callable[[dict], None], dict[str, int]]]) -> dict:
    """Each row's planned jobs, its edits made one after another in `workdir` (a failed dry run: its error)."""
    plans: dict[str, dict[str, int] | AssertionError] = {}
    for name, edit, _ in rows:
        try:
            plans[name] = planned_after(workdir, edit)[1]
        except AssertionError as error:
            plans[name] = error
    return plans


@pytest.fixture(scope="module")
def matrix_plans(finished, tmp_path_factory) -> dict:
    """Every row's plan, two dry runs at a time: each is a snakemake process on one core, the second
    works in a copy of the finished study (times kept, so it plans exactly what the original does)."""
    second = copy_finished(finished, tmp_path_factory.mktemp("rerun-copy"))
    with ThreadPoolExecutor(2) as pool:
        halves = pool.map(_plans_of, (finished, second), (MATRIX[0::2], MATRIX[1::2]))
        return {name: plan for half in halves for name, plan in half.items()}


@pytest.mark.parametrize("name, expected", [(n, x) for n, _, x in MATRIX], ids=[name for name, _, _ in MATRIX])
def test_an_edit_plans_exactly_its_jobs(matrix_plans, name, expected):
    plan = matrix_plans[name]
    if isinstance(plan, AssertionError):
        raise plan
    assert plan == expected


# a local source file edited (demo-re's dev split): copied again, and what reads it reruns
LOCAL_SOURCE = {"download_task_file": 1, "prepare_task": 1, "finetune": MODELS, **TABLES}


def test_a_changed_local_source_file_is_copied_again_and_a_touched_one_is_not(finished):
    """A source given as a local path is a job input: its content is compared (by checksum under
    1 MB, by modification time above), so an edit plans the copy and everything downstream."""
    source = finished / "raw_source" / "tasks" / "demo-re" / "dev.tsv"
    original = source.read_bytes()
    try:
        source.write_bytes(original)  # touched: same content
        assert _plan(finished) == {}
        source.write_bytes(original.replace(b"\n", b"\r\n"))
        assert _plan(finished) == LOCAL_SOURCE
    finally:
        source.write_bytes(original)


def test_a_site_profiles_partitions_rerun_nothing(finished):
    # what a site profile adds: partitions per rule and by default
    args = ["--set-resources", "finetune:slurm_partition=gpu-b", "--default-resources", "slurm_partition=cpu-b"]
    assert _plan(finished, *args) == {}


def test_renaming_mednli_in_the_full_study_reruns_only_the_reports_settings(tmp_path):
    """The full study cannot be finished here; its settings files can (local rules, no inputs). Every
    other job reads its own settings file and upstream outputs, so these are where a rerun starts."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    files = settings_files(load_config(copy.deepcopy(config), ROOT / "schemas/config.schema.yaml"))
    assert len(files) > 500
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = run_demo(tmp_path, "--quiet", "all", "--", *files)
    assert result.returncode == 0, result.stderr[-3000:]
    config["tasks"]["mednli"] = {**(config["tasks"]["mednli"] or {}), "display": "MedNLI (renamed)"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert _plan(tmp_path, "--", *files) == {"report_settings": 1, "report_settings_of_task": 1}


# docs/reproducibility-and-provenance.md, "Re-running part of the study": what deleting, --forcerun and targets do
RUN = "results/finetune/tiny/demo-ner/fold~0/seed~1/metrics.json"
WEIGHTS = "results/pretrain/tiny/model.safetensors"
FORCED_MODEL = {
    "pretrain": 2,
    "distill": 1,
    "inference_speed": MODELS,
    "finetune": 2 * MODELS,
    "heldout_table": 1,
    **TABLES,
}


@pytest.mark.parametrize("path", [RUN, WEIGHTS, "results/pretrain/tiny/config.json"])
def test_a_deleted_output_is_rebuilt_only_when_named_or_forced(finished, path):
    """Snakemake reruns a job for a missing output only when some job it must run needs it: with
    the tables current, a plain run plans nothing; naming the file rebuilds it alone, with `all`
    the tables too; --forcerun reruns its job and everything downstream."""
    target = finished / path
    saved, mode = target.read_bytes(), target.stat().st_mode
    job = "finetune" if path == RUN else "pretrain"
    target.unlink()
    try:
        assert _plan(finished) == {}
        assert _plan(finished, "--", path) == {job: 1}
        if path == RUN:
            assert _plan(finished, "--", "all", path) == {job: 1, **TABLES}
            assert _plan(finished, "--forcerun", path) == {job: 1, **TABLES}
        else:
            assert _plan(finished, "--forcerun", path) == FORCED_MODEL
    finally:
        target.write_bytes(saved)
        target.chmod(mode)


def test_forcerun_of_a_checkpoints_record_rebuilds_it_and_its_consumers(finished):
    # what a failed checkpoint verification says to run
    assert _plan(finished, "--forcerun", "results/pretrain/tiny/provenance.json") == FORCED_MODEL


def test_after_a_killed_run_snakemake_says_unlock_and_unlock_works(finished):
    """A run killed with SIGKILL leaves Snakemake's lock files: the next run that must write the
    files they name stops with "Directory cannot be locked ... --unlock", and `--unlock` clears them."""
    settings = "results/configs/report.yaml"
    cmd = [str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(finished)]
    cmd += ["--workflow-profile", str(ROOT / "profiles" / "local"), "--cores", "1"]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd += ["--forcerun", settings, "--", settings]
    locks = finished / ".snakemake" / "locks"
    for _ in range(5):  # the job holds its locks for a fraction of a second: on a loaded machine a run can
        # finish between two looks at them, and is then started again
        run = subprocess.Popen(cmd, env=env, start_new_session=True)
        deadline = time.time() + 300
        while time.time() < deadline and not list(locks.glob("*.output.lock")) and run.poll() is None:
            time.sleep(0.01)
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            break
    assert list(locks.glob("*.lock")), "each of five runs ended before it was killed"
    stale = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert stale.returncode == 1 and "Directory cannot be locked" in stale.stderr and "--unlock" in stale.stderr
    unlocked = subprocess.run([*cmd[:-3], "--unlock"], env=env, capture_output=True, text=True)
    assert unlocked.returncode == 0 and "Unlocked working directory" in unlocked.stdout + unlocked.stderr
    again = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _plan(finished) == {}

"""The embedded demo, end to end, in a temporary copy: every stage for real on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_harness import ROOT, TEST_CORES, copy_demo, most_jobs_at_once, planned_after, run_demo

from workflow_scripts.config.plan import evaluated_models, model_dir
from workflow_scripts.config.study import Study
from workflow_scripts.config.validate import load_config
from workflow_scripts.report.findings import Finding, unsupported

pytestmark = pytest.mark.slow

# Study-wide tables and their settings: rerun whenever a run or a model is added.
AGGREGATES = {"report_settings", "tables", "plots", "heldout_table", "findings", "cost_settings", "cost", "all"}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    workdir = copy_demo(tmp_path_factory.mktemp("demo-run"))
    result = run_demo(workdir)
    assert result.returncode == 0, result.stderr[-6000:]
    return workdir


def _study(workdir: Path) -> dict:
    return yaml.safe_load((workdir / "config.yaml").read_text())


def _loaded(cfg: dict) -> Study:
    """The study as the workflow plans it: a model with pretrain_seeds is one model per seed."""
    return load_config(cfg, ROOT / "schemas/config.schema.yaml")


def _task_seeds(cfg: dict) -> dict[str, int]:
    """Seeds per task: its own list, else the study's."""
    return {task: len(entry.get("seeds") or cfg["seeds"]) for task, entry in cfg["tasks"].items()}


def test_tables_cover_every_model_and_task(demo_run):
    cfg = _study(demo_run)
    tables = demo_run / "results" / "tables"
    medians = pd.read_csv(tables / "medians.csv")
    text = medians.to_csv()
    for model, entry in cfg["models"].items():
        if entry.get("evaluate", True):
            assert (entry.get("display") or model) in text or model in text
    for task in cfg["tasks"]:
        assert task in text or cfg["tasks"][task].get("display", task) in text
    for name in ["groups.csv", "blurb.csv", "medians.md", "medians.tex", "scores.png", "pretrain_speed.png"]:
        assert (tables / name).stat().st_size > 0
    assert "BLURB" in (tables / "blurb.md").read_text() or "blurb" in (tables / "blurb.md").read_text().lower()


def test_every_run_has_dev_and_test_scores(demo_run):
    runs = sorted((demo_run / "results" / "finetune").rglob("fold~*/seed~*/metrics.json"))
    cfg = _study(demo_run)
    study = _loaded(cfg)
    assert len(runs) == len(evaluated_models(study)) * sum(_task_seeds(cfg).values())
    for path in runs:
        metrics = json.loads(path.read_text())
        trained = study.models[metrics["model"]].kind != "baseline"
        assert {"dev", "test"} <= set(metrics) if trained else "baseline" in metrics
        assert isinstance(metrics["test"]["score"], float)
        assert (path.parent / "provenance.json").is_file()


def test_each_benchmark_table_reads_its_own_metric_and_statistic(demo_run):
    """HoC: Lewis et al.'s example F1 (median) in medians.csv, BLURB's cell micro F1 (mean) in
    blurb.csv, each equal to that statistic over the runs' own figures; NER: conlleval-style."""
    tables = demo_run / "results" / "tables"
    medians, blurb = pd.read_csv(tables / "medians.csv"), pd.read_csv(tables / "blurb.csv")
    cfg = _study(demo_run)
    seeded = _loaded(cfg).seeded
    differ = []
    for model in (m for m, e in cfg["models"].items() if e.get("evaluate", True)):
        lewis = medians[(medians.model == model) & (medians.task == "demo-hoc")].iloc[0]
        ours = blurb[(blurb.model == model) & (blurb.type == "demo-hoc")].iloc[0]
        assert (lewis.metric, lewis.statistic, ours.metric, ours.statistic) == (
            "example_f1",
            "median",
            "label_micro_f1",
            "mean",
        )
        # a model with several pretraining seeds: every seed's runs, pooled
        runs = [
            json.loads(p.read_text())["test"]
            for name in seeded.get(model, [model])
            for p in (demo_run / "results" / "finetune" / name / "demo-hoc").glob("fold~0/seed~*/metrics.json")
        ]
        assert lewis.value == pytest.approx(100 * float(pd.Series([r["example_f1"] for r in runs]).median()), abs=1e-3)
        assert ours.value == pytest.approx(100 * float(pd.Series([r["label_micro_f1"] for r in runs]).mean()), abs=1e-3)
        differ.append(lewis.value != ours.value)
        ner = medians[(medians.model == model) & (medians.task == "demo-ner")].iloc[0]
        assert ner.metric == "entity_f1"
    assert any(differ)


def test_checkpoints_reload_and_everything_has_provenance(demo_run):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    cfg = _study(demo_run)
    study = _loaded(cfg)
    for model, entry in study.models.items():
        if entry.kind == "baseline":
            continue
        path = demo_run / model_dir(study, model)
        AutoModelForMaskedLM.from_pretrained(path)
        AutoTokenizer.from_pretrained(path)
        prov = json.loads((path / "provenance.json").read_text())
        assert prov["step"]
        # the demo pins its CPU numerics, and every trained model's record says so
        assert prov["numerics"]["pins"]["ATEN_CPU_CAPABILITY"] == "avx2", prov["numerics"]
        assert prov["numerics"]["torch"]["aten_capability"] == "AVX2", prov["numerics"]
    for vocab in cfg["vocabularies"]:
        AutoTokenizer.from_pretrained(demo_run / "results" / "vocab" / vocab)
    for corpus in cfg["corpora"]:
        prov = json.loads((demo_run / "results" / "corpus" / corpus / "provenance.json").read_text())
        assert prov["restricted"] == bool(cfg["corpora"][corpus].get("restricted", False))


def test_pretrained_checkpoints_fill_in_held_out_masked_tokens(demo_run):
    """Reloaded by transformers alone, each pretrained model predicts masked tokens of documents
    it never trained on far better than a uniform guess, and its training loss fell."""
    import math

    import numpy as np
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from workflow_scripts.pretrain.data import PackedCorpus

    study = _loaded(_study(demo_run))
    pretrained = [m for m, e in study.models.items() if e.kind == "pretrain"]
    assert pretrained
    for model in pretrained:
        path = demo_run / model_dir(study, model)
        mlm = AutoModelForMaskedLM.from_pretrained(path).eval()
        tok = AutoTokenizer.from_pretrained(path)
        packed: dict[str, list] = {}  # the packed shards it trained on, by sequence length
        for entry in json.loads((path / "provenance.json").read_text())["inputs"]["packed"]:
            shard = demo_run / entry["path"]
            packed.setdefault(shard.parent.parent.name, []).append(shard)
        heldout = max((PackedCorpus(dirs, "heldout") for dirs in packed.values()), key=len)
        ids = torch.from_numpy(heldout.take(np.arange(min(len(heldout), 64)))[0])
        chosen = torch.rand(ids.shape, generator=torch.Generator().manual_seed(0)) < 0.15
        chosen &= ~torch.isin(ids, torch.tensor(tok.all_special_ids))
        with torch.no_grad():
            loss = mlm(input_ids=ids.masked_fill(chosen, tok.mask_token_id), labels=torch.where(chosen, ids, -100)).loss
        assert chosen.sum() > 100
        assert loss.item() < math.log(len(tok)) - 1.0, f"{model}: held-out masked-token loss {loss.item():.3f}"
        log = [json.loads(line) for line in (path / "train_log.jsonl").read_text().splitlines()]
        assert log[-1]["loss"] < log[0]["loss"] - 1.0


def test_distilled_student_beats_its_train_longer_control(demo_run):
    # Lewis et al. section 7: the same student, the same steps, with and without the teacher
    rows = {r["model"]: r for r in pd.read_csv(demo_run / "results/tables/heldout_mlm.csv").to_dict("records")}
    student, control, teacher = rows["demo-student"], rows["demo-student-control"], rows["demo-roberta"]
    assert student["control"] == "demo-student-control"
    assert teacher["heldout_loss"] < student["heldout_loss"] < control["heldout_loss"]
    assert student["gain_over_control"] > 0.01


def test_cost_table_sums_the_records_and_the_plot_draws_the_frontier(demo_run):
    cfg = _study(demo_run)
    tables = demo_run / "results" / "tables"
    cost = pd.read_csv(tables / "cost.csv", index_col="model")
    study = _loaded(cfg)
    assert set(cost.index) == set(study.models)  # a row per pretraining seed: each seed is trained, and costs
    seeds = study.seeded["demo-roberta-m3"]
    tiny = cfg["models"]["demo-roberta"]["pretrain"]
    assert cost.loc["demo-roberta", "tokens"] == tiny["max_steps"] * tiny["batch_size"] * 64
    # a decay branch counts only its own steps past the branch; with upstream it adds its parent's share
    branch = cfg["models"]["demo-modernbert-m3"]
    assert cost.loc["demo-modernbert-m3", "tokens"] == (1000 - branch["branch"]["step"]) * tiny["batch_size"] * 64
    assert len(str(cost.loc["demo-modernbert", "tokens_per_phase"]).split(";")) == 2
    trained = [m for m, e in study.models.items() if e.kind in ("pretrain", "distill")]
    assert (cost.loc[trained, "train_flops"] > 0).all() and (cost.loc[trained, "train_device"] == "1 x cpu").all()
    assert (cost.loc[trained, "pretrain_device_hours_with_upstream"] >= cost.loc[trained, "train_device_hours"]).all()
    models = [m for m, e in study.models.items() if e.kind != "baseline"]
    assert (cost.loc[models, "sequences_per_s_at_64"] > 0).all() and (cost.loc[models, "parameters"] > 0).all()
    assert (cost.loc[models, "inference_precision"] == "fp32").all()
    # one architecture, one figure: the RoBERTa-tiny models and their control differ in weights only
    roberta = ["demo-roberta", *seeds, "demo-roberta-m3-docs", "demo-control"]
    assert cost.loc[roberta, "sequences_per_s_at_64"].nunique() == 1
    assert (cost.loc[roberta, "inference_measurements"] == len(roberta)).all()
    assert cost.loc["demo-student", "inference_measurements"] == 2  # beside its train-longer control
    assert cost.loc[seeds, "restricted"].all() and not cost.loc["demo-roberta", "restricted"]
    md = (tables / "cost.md").read_text()
    assert "| RoBERTa-tiny PM+M3 (pretraining seed 43)† |" in md and "All mean against pretraining device-hours" in md
    assert "the Pareto frontier holds" in md and (tables / "cost.png").stat().st_size > 10_000
    sources = json.loads((tables / "cost.provenance.json").read_text())["sources"]
    assert sources["demo-roberta"]["training"][0] == "results/pretrain/demo-roberta/provenance.json"
    assert len(sources["demo-roberta"]["finetune"]) == sum(_task_seeds(cfg).values())


def test_second_run_does_nothing(demo_run):
    result = run_demo(demo_run)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_the_scheduler_never_runs_more_jobs_than_cores(demo_run):
    """profiles/local asks for Snakemake's greedy scheduler (its ILP one is slow on many ready jobs):
    it still holds the run to the cores it was given."""
    assert most_jobs_at_once(demo_run) == TEST_CORES


def _planned_after(workdir: Path, change) -> tuple[dict, dict]:
    return planned_after(workdir, change)


def test_changing_one_tasks_seeds_reruns_only_that_task(demo_run):
    def change(cfg):
        cfg["tasks"][sorted(cfg["tasks"])[0]]["seeds"] = [1, 2, 7]

    cfg, jobs = _planned_after(demo_run, change)
    assert jobs.pop("finetune") + jobs.pop("baseline") == len(evaluated_models(_loaded(cfg)))
    assert set(jobs) <= AGGREGATES, jobs


def test_adding_a_model_and_a_task_to_the_finished_study_runs_only_their_jobs(demo_run):
    def change(cfg):
        cfg["models"]["demo-student-2"] = {**cfg["models"]["demo-student"], "display": "Demo student 2"}
        cfg["tasks"]["demo-ner-2"] = {**cfg["tasks"]["demo-ner"], "display": "Demo NER 2"}

    cfg, jobs = _planned_after(demo_run, change)
    models = len(evaluated_models(_loaded(cfg)))  # each pretraining seed's model fine-tuned on its own
    tasks, seeds = len(cfg["tasks"]), _task_seeds(cfg)
    new_pairs = models * tasks - (models - 1) * (tasks - 1)
    new_jobs = {
        "download_task_file": len(cfg["tasks"]["demo-ner"]["source"]["files"]),
        "task_settings": 1,
        "prepare_task": 1,
        "model_settings": 1,
        "distill": 1,
        "finetune_settings": new_pairs - 1,
        # the new student on every task, every other trained model on the new task
        "finetune": sum(seeds.values()) + (models - 2) * seeds["demo-ner-2"],
        "baseline_settings": 1,  # the new task's no-training baseline
        "baseline": seeds["demo-ner-2"],
        "inference_speed": 1,  # the new student's throughput
        # a new NER task's entity words enter every vocabulary's fragmentation figures
        "vocab_diagnostics": len(cfg["vocabularies"]),
    }
    assert {rule: jobs.pop(rule, 0) for rule in new_jobs} == new_jobs
    assert set(jobs) <= AGGREGATES, jobs


def test_provenance_traces_a_cell_to_raw_files_and_flags_tampering(demo_run):
    import subprocess
    import sys

    def audit():
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "workflow_scripts.provenance",
                "results/tables/medians.csv",
                "demo-roberta",
                "demo-ner",
            ],
            cwd=demo_run,
            capture_output=True,
            text=True,
        )

    result = audit()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "results/raw/pubmed/pubmed26n0001.xml.gz" in result.stdout
    assert "results/vocab/demo-bpe" in result.stdout
    raw = demo_run / "results/raw/pubmed/pubmed26n0001.xml.gz"
    original = raw.read_bytes()
    raw.write_bytes(original + b"tampered")
    try:
        result = audit()
        assert result.returncode == 1
        assert any("pubmed26n0001.xml.gz" in line and "changed" in line.lower() for line in result.stdout.splitlines())
    finally:
        raw.write_bytes(original)


def _kinds(cfg: dict, *kinds: str) -> list[str]:
    return [m for m, e in cfg["models"].items() if e["kind"] in kinds and e.get("evaluate", True)]


def _compared(demo_run: Path, group: str) -> dict[tuple[str, str], dict]:
    rows = pd.read_csv(demo_run / "results/tables/comparisons.csv").to_dict("records")
    return {(r["model_a"], r["model_b"]): r for r in rows if r["task"] == f"mean:{group}"}


def _train_longer_controls(demo_run: Path) -> set[str]:
    heldout = pd.read_csv(demo_run / "results/tables/heldout_mlm.csv")
    return set(heldout.loc[heldout["role"] == "control", "model"])


# The effects demo/README.md reports beyond seed noise. The others it reports within noise (the
# teacher against its distilled student, the clinical continuation against its parent on the
# clinical task): for those a sign is noise, and only the findings' statement of them is asserted.
def _beyond_noise(demo_run: Path, a: str, b: str) -> None:
    row = _compared(demo_run, "All")[(a, b)]
    assert row["verdict"] == "beyond" and row["mean_paired_difference"] > 0 and row["value_a"] > row["value_b"], row


def test_every_pretrained_model_beats_the_no_pretraining_control_beyond_noise(demo_run):
    # the train-longer student is a control of distillation, not a pretrained model of the study
    cfg = _study(demo_run)
    (control,) = _kinds(cfg, "control")
    models = [a for a, b in cfg["aggregation"]["compare"] if b == control]
    assert set(models) <= set(_kinds(cfg, "pretrain", "distill")) - _train_longer_controls(demo_run)
    assert len(models) == 3
    for model in models:
        if len(cfg["models"][model].get("pretrain_seeds") or []) > 1:
            # over two pretraining seeds the claim must also survive their variation: it need not
            row = _compared(demo_run, "All")[(model, control)]
            assert row["mean_paired_difference"] > 0 and row["value_a"] > row["value_b"], row
            continue
        _beyond_noise(demo_run, model, control)


def test_distilled_student_beats_its_train_longer_control_downstream_beyond_noise(demo_run):
    _beyond_noise(demo_run, "demo-student", "demo-student-control")


def test_no_task_sits_at_its_no_training_baseline_for_every_model(demo_run):
    cfg = _study(demo_run)
    (baseline,) = _kinds(cfg, "baseline")
    medians = pd.read_csv(demo_run / "results/tables/medians.csv").pivot(index="task", columns="model", values="value")
    real = _kinds(cfg, "pretrain", "distill")
    for task, row in medians.iterrows():
        assert row[real].max() > row[baseline] + 1.0, (task, row.to_dict())


def test_findings_state_every_comparison_with_its_test_and_verdict(demo_run):
    """Each configured pair on the All and Clinical means is one sentence of findings.md with both
    values, the test, n, the interval, raw and corrected p and the verdict the corrected p gives;
    no sentence says "beyond" unless its corrected p is below alpha."""
    cfg = _study(demo_run)
    display = {m: e.get("display", m) for m, e in cfg["models"].items()}
    lines = (demo_run / "results/tables/findings.md").read_text().splitlines()
    stated = {tuple(pair) for pair in cfg["aggregation"]["compare"]}
    for group in ("All", "Clinical"):
        compared = _compared(demo_run, group)
        assert set(compared) == stated, group
        for (a, b), row in compared.items():
            (sentence,) = [line for line in lines if f"{display[a]} vs {display[b]}, {group} mean:" in line]
            assert f"{row['value_a']:.1f} vs {row['value_b']:.1f}" in sentence
            assert f"{row['ci_low']:+.1f} to {row['ci_high']:+.1f}" in sentence
            assert f"{row['test']}, n = {row['n_pairs']}" in sentence and "Holm-corrected p = " in sentence
            verdict = {
                "beyond": "better beyond seed noise",
                "suggestive": "suggestive (p = ",
                "within": "the difference is within seed noise",
            }[row["verdict"]]
            assert verdict in sentence, sentence
    text = "\n".join(lines)
    assert "Held-out MLM loss" in text and "no-training baseline" in text and "Holm–Bonferroni correction" in text
    sentences = [Finding("", line[2:], None) for line in lines if line.startswith("- ")]
    assert unsupported(sentences, cfg.get("report", {}).get("alpha", 0.05)) == []


def test_every_interval_holds_zero_where_its_p_says_noise(demo_run):
    """An interval is the test's own: where p does not reject zero at the interval's level, zero
    lies inside it, a claim over pretraining seeds included (its two tests' intervals joined)."""
    rows = pd.read_csv(demo_run / "results/tables/comparisons.csv").dropna(subset=["p"]).to_dict("records")
    assert any(r["pretrain_seeds"] > 1 for r in rows)
    noise = [r for r in rows if r["p"] >= 1 - r["confidence"]]
    outside = [r for r in noise if not r["ci_low"] <= 0 <= r["ci_high"]]
    assert noise and not outside, [
        (r["task"], r["model_a"], r["model_b"], r["ci_low"], r["ci_high"], r["p"]) for r in outside
    ]


def test_the_model_pretrained_with_two_seeds_is_pooled_and_tested_over_both_seed_kinds(demo_run):
    """demo-roberta-m3 (pretrain_seeds: [42, 43]): two checkpoints, cells pooled over 2 x 5 runs, its
    pairs tested with the multi-bootstrap, and its findings saying whether each effect survives."""
    cfg = _study(demo_run)
    (seeded,) = [m for m, e in cfg["models"].items() if len(e.get("pretrain_seeds") or []) > 1]
    medians = pd.read_csv(demo_run / "results/tables/medians.csv")
    ner = medians[(medians.model == seeded) & (medians.task == "demo-ner")].iloc[0]
    assert ner.n == 10 and "over 2 pretraining seeds x 5 fine-tuning runs each" in ner.note
    rows = [r for (a, b), r in _compared(demo_run, "All").items() if seeded in (a, b)]
    assert rows and all(r["test"].startswith("multi-bootstrap and ") and r["pretrain_seeds"] == 2 for r in rows)
    display = cfg["models"][seeded]["display"]
    text = (demo_run / "results/tables/findings.md").read_text()
    mine = [line for line in text.splitlines() if f"{display} vs" in line or f"vs {display}," in line]
    assert mine and all("pretraining-seed variation (multi-bootstrap)" in line for line in mine)
    assert "Sellam et al. (ICLR 2022" in text


# The demo's table per CPU vendor: MKL's reproducible AVX2 branch is Intel's alone, and other
# vendors take its AUTO branch (docs/reproducibility-and-provenance.md).
COMMITTED_MEDIANS = {"AuthenticAMD": "medians.csv", "GenuineIntel": "medians-intel.csv"}


def test_medians_are_the_committed_table_byte_for_byte(demo_run):
    """With the CPU numerics pinned (numerics.cpu: avx2), every x86-64 machine with AVX2 of one vendor
    computes the demo's table committed for that vendor beside demo/README.md."""
    from workflow_scripts.numerics import describe

    cpu = describe()["cpu"]
    if "avx2" not in cpu["isa"]:
        pytest.skip("the pins need an x86-64 CPU with AVX2")
    if cpu["vendor"] not in COMMITTED_MEDIANS:
        pytest.skip(f"no demo table committed for {cpu['vendor']} processors")
    name = COMMITTED_MEDIANS[cpu["vendor"]]
    committed = (Path(__file__).resolve().parents[2] / "demo" / name).read_text()
    ours = (demo_run / "results/tables/medians.csv").read_text()
    assert ours == committed, f"the demo's medians.csv differs from demo/{name} (see demo/README.md)"


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed when missing (CI runs as root with apt)."""
    import os
    import shutil
    import subprocess

    found = shutil.which("chromium")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("chromium is not installed: apt-get install -y chromium (as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        assert result.returncode == 0, f"{' '.join(command)}: {result.stderr[-2000:]}"
    return shutil.which("chromium")


def test_report_shows_findings_tables_and_plots_in_a_browser(demo_run, chromium, tmp_path):
    import subprocess

    report = demo_run / "results" / "report.html"
    result = run_demo(demo_run, "--report", str(report))
    assert result.returncode == 0, result.stderr[-3000:]
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    shot = tmp_path / "report.png"
    dom = subprocess.run(
        [chromium, *flags, "--virtual-time-budget=10000", "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    findings = (demo_run / "results/tables/findings.md").read_text().splitlines()
    first = next(line[2:] for line in findings if line.startswith("- "))
    assert first.split(":")[0] in page  # the first finding, as rendered by the report's own page
    assert page.count("<li>") >= len([line for line in findings if line.startswith("- ")])
    assert 'id="medians"' in page and 'id="groups"' in page and "Demo NER" in page
    assert page.count("data:image/png;base64,") >= 4
    subprocess.run(
        [chromium, *flags, "--window-size=1400,2400", f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    assert shot.stat().st_size > 20_000

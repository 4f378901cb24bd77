"""Tables from synthetic metrics files: values, published numbers, missing and malformed runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from workflow_scripts.cli import run as run_cli
from workflow_scripts.errors import PipelineError
from workflow_scripts.report import tables
from workflow_scripts.report.settings import load

REPO = Path(__file__).resolve().parents[2]
LEWIS_CSV = REPO / "resources/reference/lewis2020_test_medians.csv"
BLURB_CSV = REPO / "resources/reference/gu2021_blurb_table6_test.csv"

TASKS = {
    "bc5chem": {
        "display": "BC5CDR-C.",
        "type": "ner",
        "domain": "pubmed",
        "benchmarks": ["lewis", "blurb"],
        "reference": {"lewis": "BC5CDR-C.", "blurb": "BC5-chem"},
        "metric": "entity_f1",
        "folds": 0,
        "selection_fold": None,
        "restricted": False,
        "seeds": [1, 2, 3],
    },
    "gad": {
        "display": "GAD",
        "type": "relation",
        "domain": "pubmed",
        "benchmarks": ["lewis", "blurb"],
        "reference": {"lewis": "GAD", "blurb": "GAD"},
        "metric": "micro_f1_excl_negative",
        "folds": 3,
        "selection_fold": 0,
        "restricted": False,
        "seeds": [1, 2],
    },
    "mednli": {
        "display": "MedNLI",
        "type": "nli",
        "domain": "clinical",
        "benchmarks": ["lewis"],
        "reference": {"lewis": "MedNLI", "blurb": None},
        "metric": "accuracy",
        "folds": 1,
        "selection_fold": None,
        "restricted": True,
        "seeds": [1, 2, 3],
    },
}
MODELS = {
    "pm": {
        "display": "ours-PM",
        "kind": "pretrain",
        "published": {"lewis": "ours-base+PM", "blurb": "PubMedBERT-uncased"},
        "restricted": False,
    },
    "scratch": {
        "display": "scratch",
        "kind": "external",
        "published": {"lewis": None, "blurb": None},
        "restricted": False,
    },
}


def score(model: str, task: str, fold: int, seed: int) -> float:
    base = {"pm": 0.80, "scratch": 0.70}[model] + {"bc5chem": 0.1, "mednli": 0.05}.get(task, 0.0)
    return round(base + 0.01 * seed + 0.001 * fold, 6)


def make_study(root: Path, skip=(), tasks=None, models=None, **agg) -> Path:
    """Write metrics.json for every model x task x fold x seed (but ``skip``) and report.yaml."""
    tasks = tasks or TASKS
    models = models or MODELS
    runs = []
    for model in models:
        for task, t in tasks.items():
            for fold in range(max(t.get("folds", 0), 1)):
                for seed in t["seeds"]:
                    rel = f"results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/metrics.json"
                    runs.append({"model": model, "task": task, "fold": fold, "seed": seed, "metrics": rel})
                    if (model, task, fold, seed) in skip:
                        continue
                    path = root / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    s = score(model, task, fold, seed)
                    path.write_text(
                        json.dumps(
                            {
                                "model": model,
                                "task": task,
                                "fold": fold,
                                "seed": seed,
                                "metric": t["metric"],
                                "dev": {"score": s - 0.01},
                                "test": {"score": s, "precision": s, "recall": s},
                                "best_step": 10,
                                "steps": 20,
                                "restricted": t.get("restricted", False),
                                "runtime_s": 1.0,
                            }
                        )
                    )
    settings = {
        "models": models,
        "tasks": tasks,
        "runs": runs,
        "aggregation": {
            "statistic": "median",
            "bootstrap_samples": 200,
            "confidence": 0.95,
            "bootstrap_seed": 0,
            "compare": [["pm", "scratch"]],
            **agg,
        },
        "reference": {"lewis": str(LEWIS_CSV), "blurb": str(BLURB_CSV)},
        "pretrain_logs": {},
        "vocab_diagnostics": {},
    }
    path = root / "results/configs/report.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings, sort_keys=False))
    return path


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def cell(rows: list[dict], model: str, task: str) -> dict:
    return next(r for r in rows if r["model"] == model and r["task"] == task)


def build(root: Path, settings_path: Path):
    return tables.build(load(settings_path), root / "results/tables", root)


def test_cli_writes_every_table_in_three_formats(tmp_path, monkeypatch):
    settings = make_study(tmp_path)
    monkeypatch.chdir(tmp_path)
    tables.main(["--settings", "results/configs/report.yaml", "--out", "results/tables"])
    out = tmp_path / "results/tables"
    for stem in ("medians", "groups", "blurb"):
        for ext in ("csv", "md", "tex"):
            assert (out / f"{stem}.{ext}").stat().st_size > 0
    for name in ("spread.csv", "comparisons.csv", "missing.md", "provenance.json"):
        assert (out / name).is_file()
    tex = (out / "medians.tex").read_text()
    assert r"\begin{tabular}" in tex and r"$^{\dagger}$" in tex
    rec = json.loads((out / "provenance.json").read_text())
    assert rec["step"] == "report.tables"
    assert len(rec["inputs"]["metrics"]) == len(yaml.safe_load(settings.read_text())["runs"])
    assert all(o["sha256"] for o in rec["outputs"])
    assert "Every configured run has a result." in (out / "missing.md").read_text()


def test_medians_use_seeds_and_non_selection_folds(tmp_path):
    build(tmp_path, make_study(tmp_path))
    rows = read_csv(tmp_path / "results/tables/medians.csv")
    c = cell(rows, "pm", "bc5chem")
    assert float(c["value"]) == pytest.approx(100 * 0.92)  # median of 0.91, 0.92, 0.93
    assert (c["n"], c["expected_n"], c["status"]) == ("3", "3", "ok")
    # published Lewis ours-base+PM BC5CDR-C. = 91.7
    assert float(c["published"]) == 91.7
    assert float(c["difference"]) == pytest.approx(92.0 - 91.7)
    g = cell(rows, "pm", "gad")
    # folds 1 and 2 x seeds 1 and 2; fold 0 only selects hyper-parameters
    assert g["n"] == "4"
    assert float(g["value"]) == pytest.approx(100 * (0.80 + 0.015 + 0.0015))
    assert cell(rows, "scratch", "bc5chem")["published"] == ""
    assert cell(rows, "pm", "mednli")["restricted"] == "True"


def test_group_and_blurb_rows_name_missing_member_tasks(tmp_path):
    build(tmp_path, make_study(tmp_path))
    groups = read_csv(tmp_path / "results/tables/groups.csv")
    pm_all = next(r for r in groups if r["model"] == "pm" and r["group"] == "All")
    assert float(pm_all["value"]) == pytest.approx((92.0 + 81.65 + 87.0) / 3)
    assert pm_all["restricted"] == "True"
    seq = next(r for r in groups if r["model"] == "pm" and r["group"] == "Seq. Lab.")
    assert float(seq["published"]) == 91.7
    blurb = read_csv(tmp_path / "results/tables/blurb.csv")
    score_row = next(r for r in blurb if r["model"] == "pm" and r["type"] == "BLURB score")
    assert score_row["value"] == ""
    assert "PICO" in score_row["note"] and "Question answering" in score_row["note"]
    md = (tmp_path / "results/tables/blurb.md").read_text()
    assert "missing: PICO" in md
    for name in ("medians", "groups", "blurb"):
        for ext in ("csv", "md", "tex"):
            assert "nan" not in (tmp_path / f"results/tables/{name}.{ext}").read_text().lower()


def test_missing_runs_and_fewer_seeds_are_flagged(tmp_path):
    skip = {("pm", "bc5chem", 0, 3)} | {("scratch", "mednli", 0, s) for s in (1, 2, 3)}
    built = build(tmp_path, make_study(tmp_path, skip=skip))
    rows = read_csv(tmp_path / "results/tables/medians.csv")
    c = cell(rows, "pm", "bc5chem")
    assert (c["n"], c["expected_n"], c["status"]) == ("2", "3", "incomplete")
    assert "fewer runs than configured (2/3)" in c["note"]
    gone = cell(rows, "scratch", "mednli")
    assert (gone["value"], gone["status"]) == ("", "missing")
    groups = read_csv(tmp_path / "results/tables/groups.csv")
    clinical = next(r for r in groups if r["model"] == "scratch" and r["group"] == "Clinical")
    assert clinical["value"] == "" and clinical["missing"] == "mednli"
    missing = (tmp_path / "results/tables/missing.md").read_text()
    assert "results/finetune/pm/bc5chem/fold~0/seed~3/metrics.json not found" in missing
    assert "scratch Clinical" in missing.replace(" group ", " ")
    md = (tmp_path / "results/tables/medians.md").read_text()
    assert "| BC5CDR-C. | entity F1, conlleval-style, median | 91.5 (91.7, -0.2)‡ | 82.0 |" in md
    assert "| MedNLI | accuracy, median | 87.0 (84.7, +2.3)† | —†‡ |" in md
    assert "| Mean (Clinical) | mean of the tasks' medians | 87.0 (84.7, +2.3)† | — (missing: mednli)†‡ |" in md
    assert len(built.missing) == 4


def test_fewer_seeds_listed_than_configured_is_flagged(tmp_path):
    settings = make_study(tmp_path)
    data = yaml.safe_load(settings.read_text())
    data["runs"] = [r for r in data["runs"] if not (r["task"] == "bc5chem" and r["seed"] == 3)]
    settings.write_text(yaml.safe_dump(data))
    build(tmp_path, settings)
    c = cell(read_csv(tmp_path / "results/tables/medians.csv"), "scratch", "bc5chem")
    assert (c["n"], c["expected_n"], c["status"]) == ("2", "3", "incomplete")


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda m: m["test"].pop("score"), "'score'"),
        (lambda m: m.update(test=0.9), "'test'"),
        (lambda m: m["test"].update(score=91.7), "not percentages"),
        (lambda m: m.update(seed=9), "'seed'"),
        (lambda m: m.update(metric="accuracy"), "'metric'"),
    ],
)
def test_wrong_shape_metrics_name_file_and_key(tmp_path, change, key):
    settings = make_study(tmp_path)
    path = tmp_path / "results/finetune/pm/gad/fold~1/seed~2/metrics.json"
    metrics = json.loads(path.read_text())
    change(metrics)
    path.write_text(json.dumps(metrics))
    with pytest.raises(PipelineError) as err:
        build(tmp_path, settings)
    assert "results/finetune/pm/gad/fold~1/seed~2/metrics.json" in str(err.value)
    assert key in str(err.value)


def test_cli_reports_bad_input_in_one_line(tmp_path, monkeypatch, capsys):
    settings = make_study(tmp_path)
    (tmp_path / "results/finetune/pm/gad/fold~1/seed~2/metrics.json").write_text("{not json")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        run_cli(tables.main, ["--settings", str(settings), "--out", "results/tables"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "error: results/finetune/pm/gad/fold~1/seed~2/metrics.json: not valid JSON" in err
    assert not (tmp_path / "results/tables/provenance.json").exists()


def test_settings_errors_name_the_key(tmp_path):
    settings = make_study(tmp_path)
    data = yaml.safe_load(settings.read_text())
    data["runs"][0]["model"] = "nope"
    settings.write_text(yaml.safe_dump(data))
    with pytest.raises(PipelineError, match=r"runs\[0\]\.model: 'nope' is not in models"):
        load(settings)
    data["runs"][0]["model"] = "pm"
    data["models"]["pm"]["published"]["lewis"] = "ours-huge"
    settings.write_text(yaml.safe_dump(data))
    with pytest.raises(PipelineError, match=r"models\.pm\.published\.lewis: 'ours-huge' is not a column"):
        build(tmp_path, settings)


def test_comparisons_pair_runs_by_fold_and_seed(tmp_path):
    build(tmp_path, make_study(tmp_path))
    rows = read_csv(tmp_path / "results/tables/comparisons.csv")
    bc5 = next(r for r in rows if r["task"] == "bc5chem")
    assert (bc5["model_a"], bc5["model_b"], bc5["n_pairs"]) == ("pm", "scratch", "3")
    assert float(bc5["mean_paired_difference"]) == pytest.approx(10.0)
    assert bc5["verdict"] == "beyond" and bc5["wins_a"] == "3"
    # 5 claims per task and view: the exact test needs 2 / 2^n < 0.05 / 5, n = 8
    assert bc5["test"] == "paired t-test" and bc5["seeds_for_exact"] == "8" and bc5["family_size"] == "5"


def test_mean_statistic_and_full_blurb_score(tmp_path):
    types = {
        "ner": "BC5-chem",
        "pico": "EBM PICO",
        "relation": "ChemProt",
        "similarity": "BIOSSES",
        "doc_classification": "HoC",
        "qa": "PubMedQA",
    }
    tasks = {
        ty: {
            "display": ref,
            "type": ty,
            "domain": "pubmed",
            "benchmarks": ["blurb"],
            "reference": {"blurb": ref},
            "metric": "accuracy",
            "seeds": [1, 2],
        }
        for ty, ref in types.items()
    }
    settings = make_study(tmp_path, tasks=tasks, statistic="mean", compare=[])
    data = yaml.safe_load(settings.read_text())
    for r in data["runs"]:
        path = tmp_path / r["metrics"]
        m = json.loads(path.read_text())
        m["test"] = {"score": 0.4 + 0.1 * list(types).index(r["task"]) + 0.02 * r["seed"]}
        path.write_text(json.dumps(m))
    build(tmp_path, settings)
    blurb = read_csv(tmp_path / "results/tables/blurb.csv")
    score_row = next(r for r in blurb if r["model"] == "pm" and r["type"] == "BLURB score")
    # mean over seeds adds 0.03; mean over the six types of 0.4..0.9 is 0.65
    assert float(score_row["value"]) == pytest.approx(68.0)
    published = [float(BLURB_ROW[ref]) for ref in types.values()]
    assert float(score_row["published"]) == pytest.approx(sum(published) / 6, abs=1e-3)


BLURB_ROW = {r["task"]: r["PubMedBERT-uncased"] for r in csv.DictReader(open(BLURB_CSV, encoding="utf-8"))}


def test_latex_and_markdown_escape_names():
    from workflow_scripts.report import render

    rows = [[("I2B2_2010 & 50%", ""), ("91.7", render.RESTRICTED)]]
    tex = render.latex("Scores ↔ published", "tab:x", ["Task", "A|B"], rows)
    assert r"I2B2\_2010 \& 50\%" in tex and r"91.7$^{\dagger}$" in tex
    assert r"Scores $\leftrightarrow$ published." in tex
    md = render.markdown("T", ["Task", "A|B"], rows)
    assert r"| Task | A\|B |" in md and "| I2B2_2010 & 50% | 91.7† |" in md
    assert render.number(81.65) == "81.7" and render.signed(-0.04) == "+0.0" and render.signed(1.25) == "+1.3"


def test_each_benchmark_reads_its_own_metric_and_statistic(tmp_path):
    hoc = {
        "display": "HoC",
        "type": "doc_classification",
        "domain": "pubmed",
        "benchmarks": ["lewis", "blurb"],
        "reference": {"lewis": "HOC", "blurb": "HoC"},
        "metric": {"lewis": "example_f1", "blurb": "label_micro_f1"},
        "seeds": [1, 2, 3, 4],
    }
    path = make_study(tmp_path, tasks={"hoc": hoc}, compare=[])
    data = yaml.safe_load(path.read_text())
    del data["aggregation"]["statistic"]  # the defaults: median for Lewis et al., mean for BLURB
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    example = {1: 0.80, 2: 0.81, 3: 0.82, 4: 0.90}
    micro = {1: 0.70, 2: 0.71, 3: 0.72, 4: 0.95}
    for r in data["runs"]:
        m = tmp_path / r["metrics"]
        doc = json.loads(m.read_text())
        s = r["seed"]
        doc["test"] = {
            "score": example[s],
            "example_f1": example[s],
            "label_micro_f1": micro[s],
            "label_macro_f1": 0.5,
            "by_metric": {"label_micro_f1": {"score": micro[s], "precision": 0.6}},
        }
        m.write_text(json.dumps(doc))
    build(tmp_path, path)
    out = tmp_path / "results/tables"
    lewis = cell(read_csv(out / "medians.csv"), "pm", "hoc")
    assert (lewis["benchmark"], lewis["metric"], lewis["statistic"]) == ("lewis", "example_f1", "median")
    assert float(lewis["value"]) == pytest.approx(100 * 0.815)
    blurb = next(r for r in read_csv(out / "blurb.csv") if r["model"] == "pm" and r["type"] == "hoc")
    assert (blurb["metric"], blurb["statistic"]) == ("label_micro_f1", "mean")
    assert float(blurb["value"]) == pytest.approx(100 * (0.70 + 0.71 + 0.72 + 0.95) / 4)
    spread = [r for r in read_csv(out / "spread.csv") if r["model"] == "pm"]
    assert {(r["benchmark"], r["metric"]) for r in spread} == {("lewis", "example_f1"), ("blurb", "label_micro_f1")}
    assert next(r for r in spread if r["benchmark"] == "blurb")["precision"] == "60.0"
    md = (out / "blurb.md").read_text()
    assert "| HoC | micro F1 over document x label cells, mean |" in md
    assert "| HoC | example-based F1, median |" in (out / "medians.md").read_text()


def test_folded_task_takes_the_statistic_per_fold_then_over_folds(tmp_path):
    gad = {**TASKS["gad"], "folds": 4, "seeds": [1, 2, 3]}
    path = make_study(tmp_path, tasks={"gad": gad}, compare=[])
    # fold 0 selects; folds 1..3: seeds' scores chosen so that the pooled median (0.60) differs
    # from the median of the per-fold medians (0.50, 0.52, 0.90 -> 0.52)
    scores = {1: [0.50, 0.50, 0.95], 2: [0.52, 0.52, 0.60], 3: [0.90, 0.90, 0.10]}
    for r in yaml.safe_load(path.read_text())["runs"]:
        if r["fold"]:
            m = tmp_path / r["metrics"]
            doc = json.loads(m.read_text())
            doc["test"] = {"score": scores[r["fold"]][r["seed"] - 1]}
            m.write_text(json.dumps(doc))
    build(tmp_path, path)
    g = cell(read_csv(tmp_path / "results/tables/medians.csv"), "pm", "gad")
    assert g["n"] == "9" and float(g["value"]) == pytest.approx(52.0)
    assert (
        "GAD: the statistic over the seeds of each fold, then over the folds"
        in (tmp_path / "results/tables/medians.md").read_text()
    )


def test_a_run_without_a_metric_of_the_tables_is_named(tmp_path):
    hoc = {
        "display": "HoC",
        "type": "doc_classification",
        "domain": "pubmed",
        "benchmarks": ["lewis", "blurb"],
        "metric": {"lewis": "example_f1", "blurb": "label_micro_f1"},
        "seeds": [1],
    }
    path = make_study(tmp_path, tasks={"hoc": hoc}, compare=[])
    with pytest.raises(PipelineError, match=r"seed~1/metrics.json: test: key 'example_f1' is missing"):
        build(tmp_path, path)

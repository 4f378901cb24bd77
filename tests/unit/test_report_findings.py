"""Controls in the tables, paired group comparisons and the findings written from them."""

from __future__ import annotations

import pandas as pd
import test_report_tables
import yaml
from test_report_tables import MODELS, build, make_study, read_csv

from workflow_scripts.report import anomalies, findings
from workflow_scripts.report.families import PER_TASK
from workflow_scripts.report.settings import load

CONTROLS = {
    **MODELS,
    "ctl": {
        "display": "no pretraining",
        "kind": "control",
        "published": {"lewis": None, "blurb": None},
        "restricted": False,
    },
}
BASELINE_MODEL = {"display": "no training", "kind": "baseline", "published": {"lewis": None, "blurb": None}}


def _study(tmp_path, monkeypatch, scores=None, models=CONTROLS):
    """The tables' synthetic study with a control, which scores 0.6 on every run (and the
    no-training baseline, 0.5, where ``models`` has it) unless ``scores`` gives a model's score
    per seed."""
    plain = test_report_tables.score
    scores = {"ctl": lambda task, fold, seed: 0.6, "none": lambda task, fold, seed: 0.5, **(scores or {})}
    monkeypatch.setattr(
        test_report_tables,
        "score",
        lambda model, task, fold, seed: (
            scores[model](task, fold, seed) if model in scores else plain(model, task, fold, seed)
        ),
    )
    return make_study(tmp_path, models=models, compare=[["pm", "ctl"], ["scratch", "pm"]])


def test_controls_are_labelled_and_explained_in_every_table(tmp_path, monkeypatch):
    build(tmp_path, _study(tmp_path, monkeypatch))
    for stem in ("medians", "groups", "blurb"):
        text = (tmp_path / f"results/tables/{stem}.md").read_text()
        assert "| no pretraining (control) |" in text
        assert "ours-PM (control)" not in text
        assert "never averaged with the real models" in text


def test_group_means_are_compared_pairwise_over_seeds(tmp_path, monkeypatch):
    # pm beats the control by 10 points on every task and seed; a constant shift is beyond noise
    build(tmp_path, _study(tmp_path, monkeypatch, {"ctl": lambda task, fold, seed: 0.70 + 0.01 * seed}))
    rows = {(r["task"], r["model_a"], r["model_b"]): r for r in read_csv(tmp_path / "results/tables/comparisons.csv")}
    overall = rows[("mean:All", "pm", "ctl")]
    assert overall["n_pairs"] == "2"  # seeds 1 and 2 are the ones every task has
    assert overall["verdict"] == "beyond" and float(overall["mean_paired_difference"]) > 5
    assert ("mean:Clinical", "pm", "ctl") in rows


def test_findings_state_effects_and_those_that_did_not_appear(tmp_path, monkeypatch):
    jitter = {1: 0.02, 2: -0.02, 3: 0.0}
    path = _study(
        tmp_path,
        monkeypatch,
        {
            "scratch": lambda task, fold, seed: (
                test_report_tables.score("pm", task, fold, seed) + jitter[seed] * (1 if task == "gad" else 0)
            )
        },
    )
    build(tmp_path, path)
    _, items = findings.findings(load(path), tmp_path / "results/tables", None)
    text = [f.sentence for f in items]
    won = next(s for s in text if s.startswith("ours-PM vs no pretraining, All mean"))
    assert "ours-PM is better beyond seed noise" in won and "95% CI" in won
    tie = next(s for s in text if s.startswith("scratch vs ours-PM, All mean"))
    assert "within seed noise: no effect appeared" in tie
    page = findings.to_html("", items, tmp_path / "results/tables", [])
    assert "<ul id='findings'>" in page and "<table" in page and "no pretraining" in page


def _significance(path, alpha: float, correction: str) -> None:
    data = yaml.safe_load(path.read_text())
    data["significance"] = {"alpha": alpha, "correction": correction}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_no_finding_says_beyond_unless_its_corrected_p_is_below_alpha(tmp_path, monkeypatch):
    # "near" is ours-PM plus a small gain on the clinical task only (seeds 1..3: +1.0, +1.3,
    # +0.7): raw paired t p = 0.029 on the Clinical mean, which Holm over the 4 pair claims doubles
    near = {1: 0.010, 2: 0.013, 3: 0.007}
    models = {**CONTROLS, "near": {**CONTROLS["scratch"], "display": "near"}, "none": BASELINE_MODEL}
    monkeypatch.setattr(
        test_report_tables,
        "score",
        lambda model, task, fold, seed, plain=test_report_tables.score: {
            "ctl": lambda: 0.6,
            "none": lambda: 0.5,
            "near": lambda: plain("pm", task, fold, seed) + (near[seed] if task == "mednli" else 0.0),
        }.get(model, lambda: plain(model, task, fold, seed))(),
    )
    path = make_study(tmp_path, models=models, compare=[["pm", "ctl"], ["near", "pm"]])
    verdicts = {}
    for alpha, correction in [(0.05, "holm"), (0.05, "bonferroni"), (0.05, "none"), (0.01, "holm")]:
        _significance(path, alpha, correction)
        build(tmp_path, path)
        _, items = findings.findings(load(path), tmp_path / "results/tables", None)
        assert findings.unsupported(items, alpha) == []
        rows = read_csv(tmp_path / "results/tables/comparisons.csv")
        for r in rows:
            if r["verdict"] == "beyond":
                assert float(r["p_corrected"]) < alpha, r
        clinical = next(r for r in rows if (r["task"], r["model_a"]) == ("mean:Clinical", "near"))
        verdicts[(alpha, correction)] = clinical["verdict"]
        (sentence,) = [f.sentence for f in items if f.sentence.startswith("near vs ours-PM, Clinical mean")]
        assert "paired t-test, n = 3" in sentence and f"p = {float(clinical['p']):.3f}" in sentence
    assert verdicts == {
        (0.05, "holm"): "suggestive",
        (0.05, "bonferroni"): "suggestive",
        (0.05, "none"): "beyond",
        (0.01, "holm"): "within",
    }
    # the checker itself catches a sentence that overstates its test
    bad = findings.Finding(
        "x", "A vs B: +1.0 (p = 0.030, Holm-corrected p = 0.060): A is better beyond seed noise.", True
    )
    assert findings.unsupported([bad], 0.05) == [bad.sentence]


def test_a_p_just_under_alpha_is_printed_under_alpha(tmp_path, monkeypatch):
    # 0.0498 to three decimals reads 0.050, which the verdict "beyond" at alpha 0.05 contradicts;
    # 0.0503 may read 0.050, which is not below alpha either
    path = _study(tmp_path, monkeypatch)
    build(tmp_path, path)
    comparisons = pd.read_csv(tmp_path / "results/tables/comparisons.csv")
    row = (comparisons["task"] == "mean:All") & (comparisons["model_a"] == "pm")
    comparisons.loc[row, ["p", "p_corrected", "verdict"]] = [0.0249, 0.0498, "beyond"]
    comparisons.loc[~row & (comparisons["task"] == "mean:All"), ["p", "p_corrected", "verdict"]] = [
        0.0497,
        0.0503,
        "suggestive",
    ]
    items = findings.pair_findings(load(path), comparisons)
    text = {f.sentence.split(":")[0]: f.sentence for f in items}
    won, close = text["ours-PM vs no pretraining, All mean"], text["scratch vs ours-PM, All mean"]
    assert "p = 0.025, Holm-corrected p = 0.0498" in won and "ours-PM is better beyond seed noise" in won
    assert "p = 0.0497, Holm-corrected p = 0.050;" in close and "suggestive (p = 0.0497)" in close
    assert findings.unsupported(items, 0.05) == []


def test_baseline_claims_print_their_tests_and_anomalies_are_named(tmp_path, monkeypatch):
    # the control beats both models on GAD
    gad = {"ctl": lambda task, fold, seed: 0.95 if task == "gad" else 0.6}
    path = _study(tmp_path, monkeypatch, gad, models={**CONTROLS, "none": BASELINE_MODEL})
    build(tmp_path, path)
    intro, items = findings.findings(load(path), tmp_path / "results/tables", None)
    assert "Holm–Bonferroni correction within each family" in intro and "paired t-test" in intro
    baseline = [f.sentence for f in items if f.topic == "baseline"]
    assert len(baseline) == 3
    for s in baseline:
        assert "no-training baseline (50.0)" in s and "paired t-test, n = " in s and "Holm-corrected p" in s
    anomaly = [f.sentence for f in items if f.topic == "anomaly"]
    assert any(
        s.startswith("Anomaly, GAD: the control no pretraining (95.0) scores at or above every one") for s in anomaly
    )


def test_a_task_whose_seeds_spread_wider_than_its_compared_differences_is_named(tmp_path, monkeypatch):
    settings = load(_study(tmp_path, monkeypatch))
    spread = pd.DataFrame(
        [("mednli", "lewis", m, std) for m, std in (("pm", 6.0), ("scratch", 4.0), ("ctl", 5.0))]
        + [("gad", "lewis", m, 0.5) for m in ("pm", "scratch", "ctl")],
        columns=["task", "benchmark", "model", "std"],
    )
    comparisons = pd.DataFrame(
        [(task, "lewis", PER_TASK, diff) for task in ("mednli", "gad") for diff in (3.0, -2.0)],
        columns=["task", "benchmark", "family", "difference"],
    )
    (sentence,) = anomalies.spread_anomalies(settings, spread, comparisons)
    assert sentence.startswith("Anomaly, MedNLI: its seeds spread wider (standard deviation over seeds 5.0")
    assert "median |difference| 2.5 over the 2 compared pairs" in sentence


def test_the_method_says_a_score_is_a_cell_and_a_difference_a_paired_mean(tmp_path, monkeypatch):
    # the control's seeds 0.9, 0.6, 0.6: its median cell is 0.6, but its paired differences are not a constant
    path = _study(tmp_path, monkeypatch, {"ctl": lambda task, fold, seed: 0.9 if seed == 1 else 0.6})
    build(tmp_path, path)
    method, items = findings.findings(load(path), tmp_path / "results/tables", None)
    assert "a task's median over its runs" in method and "mean over paired seeds" in method
    rows = {(r["task"], r["model_a"], r["model_b"]): r for r in read_csv(tmp_path / "results/tables/comparisons.csv")}
    row = rows[("mean:All", "pm", "ctl")]
    assert float(row["difference"]) != float(row["mean_paired_difference"])
    said = next(f.sentence for f in items if f.sentence.startswith("ours-PM vs no pretraining, All mean"))
    assert f"All mean: {float(row['value_a']):.1f} vs {float(row['value_b']):.1f}" in said
    assert f"paired difference {float(row['mean_paired_difference']):+.1f}" in said

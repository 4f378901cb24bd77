"""Controls in the tables, paired group comparisons and the findings written from them."""

from __future__ import annotations

import test_report_tables
from test_report_tables import MODELS, build, make_study, read_csv

from workflow_scripts.report import findings
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


def _study(tmp_path, monkeypatch, scores=None):
    """The tables' synthetic study with a control, which scores 0.6 on every run unless ``scores``
    gives a model's score per seed."""
    plain = test_report_tables.score
    scores = {"ctl": lambda task, fold, seed: 0.6, **(scores or {})}
    monkeypatch.setattr(
        test_report_tables,
        "score",
        lambda model, task, fold, seed: (
            scores[model](task, fold, seed) if model in scores else plain(model, task, fold, seed)
        ),
    )
    return make_study(tmp_path, models=CONTROLS, compare=[["pm", "ctl"], ["scratch", "pm"]])


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

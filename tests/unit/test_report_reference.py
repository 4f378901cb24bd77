"""The published group means and BLURB scores recomputed with the functions behind our tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow_scripts.errors import PipelineError
from workflow_scripts.report.groups import GROUPS, TaskKind, blurb_score, group_means
from workflow_scripts.report.reference import (
    BLURB_SCORE_ROW,
    BLURB_TASKS,
    LEWIS_GROUP_ROWS,
    LEWIS_TASKS,
    read_reference,
)

REFERENCE = Path(__file__).resolve().parents[2] / "resources/reference"


def test_every_lewis_group_mean_is_recomputed_within_0_1():
    ref = read_reference(REFERENCE / "lewis2020_test_medians.csv")
    task_rows = [r for r in ref.values if not r.startswith("Mean (")]
    assert sorted(task_rows) == sorted(LEWIS_TASKS)
    assert len(ref.models) == 13
    for model in ref.models:
        values = {task: ref.get(task, model) for task in LEWIS_TASKS}
        means = group_means(values, LEWIS_TASKS)
        for group in GROUPS:
            assert means[group].missing == []
            assert means[group].value == pytest.approx(ref.get(LEWIS_GROUP_ROWS[group], model), abs=0.1), (model, group)
    sizes = {g: len(v.members) for g, v in means.items()}
    assert sizes == {"Seq. Lab.": 11, "Classif.": 7, "PubMed": 13, "Clinical": 5, "All": 18}


def test_every_blurb_score_is_recomputed_within_0_01():
    ref = read_reference(REFERENCE / "gu2021_blurb_table6_test.csv")
    assert sorted(r for r in ref.values if r != BLURB_SCORE_ROW) == sorted(BLURB_TASKS)
    assert len(ref.models) == 9
    for model in ref.models:
        values = {task: ref.get(task, model) for task in BLURB_TASKS}
        score = blurb_score(values, BLURB_TASKS).score
        assert score.value == pytest.approx(ref.get(BLURB_SCORE_ROW, model), abs=0.01), model


def test_group_with_a_missing_member_names_it_and_has_no_value():
    kinds = {"a": TaskKind("ner", "pubmed"), "b": TaskKind("relation", "clinical"), "c": TaskKind("pico", "pubmed")}
    means = group_means({"a": 80.0, "b": None, "c": 70.0}, kinds)
    assert means["Seq. Lab."].value == pytest.approx(75.0)  # PICO counts as sequence labelling
    assert means["PubMed"].value == pytest.approx(75.0)
    for group in ("Classif.", "Clinical", "All"):
        assert means[group].value is None and means[group].missing == ["b"]
        assert means[group].note == "missing: b"


def test_blurb_score_needs_all_six_types():
    types = {"n1": "ner", "n2": "ner", "p": "pico", "r": "relation", "s": "similarity", "d": "doc_classification"}
    values = {"n1": 90.0, "n2": 80.0, "p": 70.0, "r": 60.0, "s": 50.0, "d": 40.0}
    result = blurb_score(values, types)
    assert result.types["ner"].value == pytest.approx(85.0)
    assert result.score.value is None
    assert result.score.note == "missing: Question answering"
    result = blurb_score({**values, "q": 30.0}, {**types, "q": "qa"})
    assert result.score.value == pytest.approx((85 + 70 + 60 + 50 + 40 + 30) / 6)


def test_reference_csv_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "ref.csv"
    bad.write_text("task,A,B\nX,1.0,2.0\nY,1.0,n/a\n")
    with pytest.raises(PipelineError, match=r"ref.csv:3: 'n/a' in column 'B' is not a number"):
        read_reference(bad)
    with pytest.raises(PipelineError, match="reference table not found"):
        read_reference(tmp_path / "absent.csv")

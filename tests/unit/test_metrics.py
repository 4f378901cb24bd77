"""Task metrics against reference implementations (seqeval, scikit-learn, SciPy) and hand counts."""

import random

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import f1_score, precision_score, recall_score
from sklearn.preprocessing import MultiLabelBinarizer

from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.metrics import METRICS, compute

HALLMARKS = ["angiogenesis", "apoptosis", "immortality", "invasion"]


def test_entity_f1_counts_whole_entities():
    gold = [["B-Disease", "I-Disease", "O", "B-Disease"], ["O", "B-Disease", "I-Disease"]]
    # One exact match, one boundary error (counts as a miss and a false positive), one miss.
    pred = [["B-Disease", "I-Disease", "O", "O"], ["O", "B-Disease", "O"]]
    result = compute("entity_f1_strict", gold, pred)
    precision, recall = 1 / 2, 1 / 3
    assert result["precision"] == pytest.approx(precision)
    assert result["recall"] == pytest.approx(recall)
    assert result["score"] == pytest.approx(2 * precision * recall / (precision + recall))


def test_strict_mode_rejects_entities_without_b_but_conlleval_mode_counts_them():
    gold = [["B-Chemical", "I-Chemical", "O"]]
    pred = [["I-Chemical", "I-Chemical", "O"]]
    assert compute("entity_f1", gold, pred)["score"] == pytest.approx(1.0)
    assert compute("entity_f1_strict", gold, pred)["score"] == 0.0


def test_entity_f1_is_zero_when_nothing_is_predicted():
    assert compute("entity_f1_strict", [["B-Gene", "O"]], [["O", "O"]])["score"] == 0.0


def test_micro_f1_excluding_negative_matches_sklearn():
    rng = random.Random(3)
    labels = ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"]
    gold = [rng.choice(labels) for _ in range(300)]
    pred = [g if rng.random() < 0.6 else rng.choice(labels) for g in gold]
    positive = labels[:-1]
    result = compute("micro_f1_excl_negative", gold, pred, labels=labels, negative_label="false")
    assert result["score"] == pytest.approx(f1_score(gold, pred, labels=positive, average="micro"))
    assert result["precision"] == pytest.approx(precision_score(gold, pred, labels=positive, average="micro"))
    assert result["recall"] == pytest.approx(recall_score(gold, pred, labels=positive, average="micro"))


def test_micro_f1_excluding_negative_is_positive_class_f1_for_binary_tasks():
    gold = ["1", "1", "0", "0", "1"]
    pred = ["1", "0", "1", "0", "1"]
    # tp 2, predicted positive 3, gold positive 3
    assert compute("micro_f1_excl_negative", gold, pred, negative_label="0")["score"] == pytest.approx(2 / 3)


def test_micro_f1_excluding_negative_needs_the_negative_label():
    with pytest.raises(PipelineError, match="negative_label"):
        compute("micro_f1_excl_negative", ["a"], ["a"])


def _random_multilabel(rng, n):
    return [sorted(rng.sample(HALLMARKS, rng.randint(0, 3))) for _ in range(n)]


def test_hoc_blurb_convention_is_mean_of_per_label_f1_like_sklearn_macro():
    rng = random.Random(7)
    gold = _random_multilabel(rng, 120)
    pred = [g if rng.random() < 0.5 else sorted(rng.sample(HALLMARKS, rng.randint(0, 2))) for g in gold]
    mlb = MultiLabelBinarizer(classes=HALLMARKS)
    expected = f1_score(mlb.fit_transform(gold), mlb.transform(pred), average="macro", zero_division=0)
    result = compute("label_macro_f1", gold, pred, labels=HALLMARKS)
    assert result["score"] == pytest.approx(expected)
    assert result["example_f1"] == pytest.approx(compute("example_f1", gold, pred, labels=HALLMARKS)["score"])


def test_hoc_blue_convention_by_hand():
    gold = [["angiogenesis", "invasion"], ["apoptosis"], ["immortality"]]
    pred = [["angiogenesis"], ["apoptosis", "invasion"], []]
    # per document precision 1, 1/2, 0 and recall 1/2, 1, 0
    p, r = (1 + 0.5 + 0) / 3, (0.5 + 1 + 0) / 3
    result = compute("example_f1", gold, pred, labels=HALLMARKS)
    assert result["precision"] == pytest.approx(p)
    assert result["recall"] == pytest.approx(r)
    assert result["score"] == pytest.approx(2 * p * r / (p + r))
    # Per label: angiogenesis and apoptosis right, immortality and invasion missed.
    assert result["label_macro_f1"] == pytest.approx((1 + 1 + 0 + 0) / 4)


def test_hoc_documents_without_labels():
    assert compute("example_f1", [[], []], [[], ["invasion"]], labels=HALLMARKS)["score"] == pytest.approx(0.5)


def test_multilabel_rejects_labels_outside_the_task():
    with pytest.raises(PipelineError, match="'metastasis' is not in the task's labels"):
        compute("label_macro_f1", [["invasion"]], [["metastasis"]], labels=HALLMARKS)


def test_pearson_matches_scipy():
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 4, 50)
    pred = gold + rng.normal(0, 0.8, 50)
    result = compute("pearson", gold.tolist(), pred.tolist())
    assert result["score"] == pytest.approx(pearsonr(gold, pred)[0])
    assert result["mse"] == pytest.approx(float(np.mean((gold - pred) ** 2)))


def test_pearson_of_constant_predictions_is_zero():
    assert compute("pearson", [0.0, 1.0, 4.0], [2.0, 2.0, 2.0])["score"] == 0.0


def test_accuracy_by_hand():
    assert compute("accuracy", ["yes", "no", "maybe", "yes"], ["yes", "yes", "maybe", "no"])["score"] == 0.5


def test_pico_word_level_macro_f1_matches_sklearn():
    rng = random.Random(11)
    tags = ["O", "PAR", "INT", "OUT"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(5, 30))] for _ in range(40)]
    pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in seq] for seq in gold]
    flat_gold = [t for seq in gold for t in seq]
    flat_pred = [t for seq in pred for t in seq]
    expected = f1_score(flat_gold, flat_pred, labels=["PAR", "INT", "OUT"], average="macro")
    result = compute("word_macro_f1", gold, pred, labels=tags, negative_label="O")
    assert result["score"] == pytest.approx(expected)
    assert set(result) >= {"f1_PAR", "f1_INT", "f1_OUT"}


def test_unknown_metric_lists_the_known_ones():
    with pytest.raises(PipelineError) as err:
        compute("f1", ["a"], ["a"])
    for name in METRICS:
        assert name in str(err.value)


def test_prediction_count_must_match_gold():
    with pytest.raises(PipelineError, match="2 gold examples but 1 predictions"):
        compute("accuracy", ["a", "b"], ["a"])
    with pytest.raises(PipelineError, match="example 0 has 2 gold tags but 1 predicted"):
        compute("entity_f1_strict", [["O", "O"]], [["O"]])

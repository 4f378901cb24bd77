"""Task metrics against reference implementations (seqeval, scikit-learn, SciPy) and hand counts."""

import random

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import f1_score, precision_score, recall_score
from sklearn.preprocessing import MultiLabelBinarizer

from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.metrics import METRICS, check_task_metric, compute, compute_all, metric_for, metric_names

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


def _chunks(tags, conlleval: bool) -> set:
    """Entities (type, start, end) of one sentence. conlleval: a chunk also starts at an I-X
    after O or after another type; strict IOB2: only B-X starts one, and a chunk is closed by
    anything but I-X of its own type (stray I- tags are no entity)."""
    out, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, typ = (tag[0], tag[2:]) if tag != "O" else ("O", None)
        continues = prefix == "I" and typ == kind and start is not None
        if start is not None and not continues:
            out.add((kind, start, i))
            start, kind = None, None
        if prefix == "B" or (conlleval and prefix == "I" and start is None):
            start, kind = i, typ
    return out


def _reference_entity_f1(gold, pred, conlleval: bool) -> float:
    g = {(n, *c) for n, seq in enumerate(gold) for c in _chunks(seq, conlleval)}
    p = {(n, *c) for n, seq in enumerate(pred) for c in _chunks(seq, conlleval)}
    tp = len(g & p)
    precision, recall = (tp / len(p) if p else 0.0), (tp / len(g) if g else 0.0)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@pytest.mark.parametrize("metric, conlleval", [("entity_f1", True), ("entity_f1_strict", False)])
def test_entity_f1_matches_our_restated_counters_on_ill_formed_random_tags(metric, conlleval):
    # Argmax predictions are not repaired (as in bio-lm and BLURB's fine-tuning code): stray
    # I- tags and type switches inside an entity reach the metric and are scored as each
    # convention defines them.
    rng = random.Random(13)
    tags = ["O", "O", "O", "B-Gene", "I-Gene", "B-Chem", "I-Chem"]
    for _ in range(30):
        gold = [[rng.choice(tags) for _ in range(rng.randint(1, 25))] for _ in range(20)]
        pred = [[t if rng.random() < 0.6 else rng.choice(tags) for t in seq] for seq in gold]
        assert compute(metric, gold, pred)["score"] == pytest.approx(_reference_entity_f1(gold, pred, conlleval))


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


def test_label_macro_f1_is_mean_of_per_label_f1_like_sklearn_macro():
    rng = random.Random(7)
    gold = _random_multilabel(rng, 120)
    pred = [g if rng.random() < 0.5 else sorted(rng.sample(HALLMARKS, rng.randint(0, 2))) for g in gold]
    mlb = MultiLabelBinarizer(classes=HALLMARKS)
    expected = f1_score(mlb.fit_transform(gold), mlb.transform(pred), average="macro", zero_division=0)
    assert compute("label_macro_f1", gold, pred, labels=HALLMARKS)["score"] == pytest.approx(expected)


def _sentences(rng, n_docs):
    """HoC as BLUE writes it: sentences with ids <PMID>_s<n>, each with its own label set."""
    ids, gold, pred = [], [], []
    for doc in range(n_docs):
        for k in range(rng.randint(1, 6)):
            ids.append(f"{1000 + doc}_s{k}")
            gold.append(sorted(rng.sample(HALLMARKS, rng.choice([0, 0, 1, 2]))))
            pred.append(sorted(rng.sample(HALLMARKS, rng.choice([0, 0, 1, 1, 2]))))
    return ids, gold, pred


def _or_per_abstract(ids, rows):
    """Our restatement of the reference step: the union of the sentence labels per abstract."""
    docs = {}
    for ident, row in zip(ids, rows, strict=True):
        docs.setdefault(ident.split("_")[0], set()).update(row)
    return docs


def test_label_micro_f1_is_linkbert_micro_f1_over_document_label_cells():
    # BLURB's HoC figure (LinkBERT src/seqcls/utils_hoc.py): sentence predictions OR-ed per
    # abstract, then true positives, predicted and gold positives counted over all cells.
    rng = random.Random(5)
    for _ in range(20):
        ids, gold, pred = _sentences(rng, rng.randint(3, 40))
        g, p = _or_per_abstract(ids, gold), _or_per_abstract(ids, pred)
        tp = sum(1 for d in g for label in HALLMARKS if label in g[d] and label in p[d])
        n_pred, n_gold = sum(len(x) for x in p.values()), sum(len(x) for x in g.values())
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        result = compute("label_micro_f1", gold, pred, labels=HALLMARKS, ids=ids)
        assert result["score"] == pytest.approx(f1)
        assert result["precision"] == pytest.approx(precision)
        mlb = MultiLabelBinarizer(classes=HALLMARKS)
        docs = list(g)
        sk = f1_score(
            mlb.fit_transform([sorted(g[d]) for d in docs]),
            mlb.transform([sorted(p[d]) for d in docs]),
            average="micro",
            zero_division=0,
        )
        assert result["score"] == pytest.approx(sk)


def test_example_f1_is_bio_lm_example_based_f1_with_sentences_or_ed_per_abstract():
    # Lewis et al.'s HoC figure (bio-lm, after BLUE's eval_hoc.py): per abstract precision
    # (0 when nothing is predicted) and recall, each averaged over abstracts, then their F1.
    rng = random.Random(9)
    for _ in range(20):
        ids, gold, pred = _sentences(rng, rng.randint(3, 40))
        g, p = _or_per_abstract(ids, gold), _or_per_abstract(ids, pred)
        keep = [d for d in g if g[d]]  # the reference divides by the gold count: every abstract has a label
        rows = [(i, a, b) for i, a, b in zip(ids, gold, pred, strict=True) if i.split("_")[0] in keep]
        precisions = [len(g[d] & p[d]) / len(p[d]) if p[d] else 0.0 for d in keep]
        recalls = [len(g[d] & p[d]) / len(g[d]) for d in keep]
        mp, mr = np.mean(precisions), np.mean(recalls)
        result = compute(
            "example_f1", [r[1] for r in rows], [r[2] for r in rows], labels=HALLMARKS, ids=[r[0] for r in rows]
        )
        assert result["precision"] == pytest.approx(mp)
        assert result["recall"] == pytest.approx(mr)
        assert result["score"] == pytest.approx(2 * mp * mr / (mp + mr) if mp + mr else 0.0)


def test_the_two_hoc_conventions_differ_on_the_same_predictions():
    ids, gold, pred = _sentences(random.Random(2), 60)
    lewis = compute("example_f1", gold, pred, labels=HALLMARKS, ids=ids)["score"]
    blurb = compute("label_micro_f1", gold, pred, labels=HALLMARKS, ids=ids)["score"]
    assert abs(lewis - blurb) > 0.01


def test_documents_are_examples_when_ids_are_not_sentence_ids():
    gold, pred = [["invasion"], ["apoptosis"]], [["invasion"], []]
    with_ids = compute("label_micro_f1", gold, pred, labels=HALLMARKS, ids=["123_4", "123_5"])
    assert with_ids == compute("label_micro_f1", gold, pred, labels=HALLMARKS)
    assert with_ids["recall"] == pytest.approx(0.5)


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
    assert compute("label_macro_f1", gold, pred, labels=HALLMARKS)["score"] == pytest.approx((1 + 1 + 0 + 0) / 4)
    # Cells: 2 true positives of 3 predicted and 4 gold.
    assert compute("label_micro_f1", gold, pred, labels=HALLMARKS)["score"] == pytest.approx(2 * 2 / (3 + 4))


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
    # 0.1 seven times has a mean of 0.09999999999999999: deviations of 1.4e-17, not zero, which
    # correlated to -1.9e-16 (a table printed -0.0)
    gold = [3.18, 1.35, 0.2, 0.08, 4.07, 4.56, 3.03]
    assert str(compute("pearson", gold, [0.1] * 7)["score"]) == "0.0"


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


def test_a_task_metric_per_benchmark():
    hoc = {"lewis": "example_f1", "blurb": "label_micro_f1"}
    assert metric_for(hoc, "lewis") == "example_f1" and metric_for(hoc, "blurb") == "label_micro_f1"
    assert metric_for("entity_f1", "blurb") == "entity_f1"
    # every metric a run computes: the named ones first (the first is the headline), then their family
    assert metric_names(hoc) == ["example_f1", "label_micro_f1", "label_macro_f1"]
    assert metric_names("entity_f1") == ["entity_f1", "entity_f1_strict"]
    assert metric_names("accuracy") == ["accuracy"]
    check_task_metric(hoc, ["lewis", "blurb"], "tasks.hoc.metric")
    with pytest.raises(PipelineError, match="tasks.hoc.metric: the task counts towards blurb but names no metric"):
        check_task_metric({"lewis": "example_f1"}, ["lewis", "blurb"], "tasks.hoc.metric")
    with pytest.raises(PipelineError, match=r"tasks.hoc.metric.blurp: unknown benchmark"):
        check_task_metric({"blurp": "example_f1"}, [], "tasks.hoc.metric")
    with pytest.raises(PipelineError, match="unknown metric 'micro_f1'"):
        check_task_metric({"lewis": "micro_f1"}, ["lewis"], "tasks.hoc.metric")


def test_compute_all_scores_the_same_predictions_with_every_metric():
    gold = [["B-Gene", "I-Gene", "O"]]
    pred = [["I-Gene", "I-Gene", "O"]]
    scores = compute_all(metric_names("entity_f1"), gold, pred)
    assert scores["entity_f1"]["score"] == 1.0 and scores["entity_f1_strict"]["score"] == 0.0

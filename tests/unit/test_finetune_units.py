"""Pure parts of fine-tuning: tag schemes, windows, entity markers, settings, data checks."""

from __future__ import annotations

import json
import random

import pytest
import torch
import yaml

from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import data, settings, tagging
from workflow_scripts.finetune.decode import decode
from workflow_scripts.finetune.features import Encoding, entity_spans, insert_markers, windows
from workflow_scripts.tasks.metrics import compute
from workflow_scripts.typed import parse, to_dict

TASK = {"name": "toy", "type": "ner", "metric": "entity_f1", "labels": ["O", "B-Disease", "I-Disease"]}


@pytest.mark.parametrize("scheme", ["bio", "io", "bioul"])
def test_tag_schemes_round_trip_to_the_same_bio_entities(scheme):
    bio = ["B-Disease", "I-Disease", "O", "B-Chemical", "B-Disease", "I-Disease", "I-Disease", "O", "B-Chemical"]
    converted = tagging.from_bio(bio, scheme)
    assert set(converted) <= set(tagging.scheme_labels(["O", "B-Disease", "I-Disease", "B-Chemical"], scheme))
    back = tagging.to_bio(converted, scheme)
    assert back == bio if scheme != "io" else back == bio[:3] + ["B-Chemical", "B-Disease"] + bio[5:]


def test_bioul_marks_unit_and_last_tokens():
    assert tagging.from_bio(["B-X", "I-X", "I-X", "O", "B-X", "B-Y", "I-Y"], "bioul") == [
        "B-X",
        "I-X",
        "L-X",
        "O",
        "U-X",
        "B-Y",
        "L-Y",
    ]
    # a model's stray inside/last tag without a start still decodes to an entity
    assert tagging.to_bio(["O", "L-X", "I-Y"], "bioul") == ["O", "B-X", "B-Y"]


def test_argmax_bio_tags_reach_the_metric_unrepaired():
    # bio-lm and BLURB's fine-tuning code score the argmax tags as predicted; a stray I- then
    # opens an entity in the conlleval-style metric and is no entity in the strict one.
    enc = Encoding(task_type="ner", labels=["O", "B-Disease", "I-Disease"], max_length=16, scheme="bio")
    logits = torch.tensor([[0.0, 0.0, 5.0], [0.0, 0.0, 5.0], [5.0, 0.0, 0.0]])
    feature = {"example": 0, "words": [(0, 0), (1, 1), (2, 2)]}
    pred = decode([logits], [feature], [{"id": "s1", "tokens": ["a", "b", "c"]}], enc, 0.5)
    assert pred == [["I-Disease", "I-Disease", "O"]]
    gold = [["B-Disease", "I-Disease", "O"]]
    assert compute("entity_f1", gold, pred)["score"] == 1.0
    assert compute("entity_f1_strict", gold, pred)["score"] == 0.0


def test_windows_cover_every_word_exactly_once_with_context():
    rng = random.Random(3)
    lengths = [rng.randint(1, 4) for _ in range(200)]
    spans = windows(lengths, budget=30, context=5)
    cores = [w for _, cs, ce, _ in spans for w in range(cs, ce)]
    assert cores == list(range(200))
    for start, cs, ce, end in spans:
        assert sum(lengths[start:end]) <= 30
        assert start <= cs < ce <= end
    assert any(start < cs for start, cs, _, _ in spans) and any(ce < end for _, _, ce, end in spans)
    assert windows([2, 3], budget=30, context=5) == [(0, 0, 2, 2)]


def test_markers_wrap_dummified_entities_and_give_marker_spans():
    row = {"id": "1", "text": "@CHEMICAL$ inhibits @GENE$ strongly", "label": "CPR:4"}
    spans = entity_spans(row)
    assert spans == [(0, 10), (20, 26)]
    text, starts, mentions = insert_markers(row["text"], spans)
    assert text == "[E1] @CHEMICAL$ [/E1] inhibits [E2] @GENE$ [/E2] strongly"
    assert [text[s:e] for s, e in starts] == ["[E1]", "[E2]"]
    assert [text[s:e] for s, e in mentions] == ["@CHEMICAL$", "@GENE$"]


def test_given_entity_spans_take_precedence_over_placeholders():
    row = {
        "text": "aspirin blocks COX1",
        "entities": [{"start": 15, "end": 19, "type": "GENE"}, {"start": 0, "end": 7, "type": "CHEMICAL"}],
    }
    text, starts, mentions = insert_markers(row["text"], entity_spans(row))
    assert text == "[E2] aspirin [/E2] blocks [E1] COX1 [/E1]"
    assert [text[s:e] for s, e in starts] == ["[E1]", "[E2]"]
    assert [text[s:e] for s, e in mentions] == ["COX1", "aspirin"]
    adjacent, _, mentions = insert_markers("AB", [(0, 1), (1, 2)])
    assert adjacent == "[E1] A [/E1][E2] B [/E2]" and [adjacent[s:e] for s, e in mentions] == ["A", "B"]


def write(tmp_path, **data):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"model": {"name": "m"}, "task": TASK, "finetune": {"max_length": 64}, **data}))
    return path


def test_settings_errors_name_the_key(tmp_path):
    for finetune, message in [
        ({"lr": 0}, r"s\.yaml\.finetune\.lr: must be > 0"),
        ({"learning_rate": 1e-5}, r"s\.yaml\.finetune: unknown key 'learning_rate'"),
        ({"tagging": "iobes"}, r"s\.yaml\.finetune\.tagging: 'iobes' is not one of"),
        ({"grid": {"lr": [1e-5, -1.0]}}, r"s\.yaml\.finetune\.grid\.lr: every learning rate"),
        ({}, r"s\.yaml\.finetune\.max_length: the resolved settings need the sequence length"),
    ]:
        with pytest.raises(PipelineError, match=message):
            settings.load(write(tmp_path, finetune=finetune))
    # labels and tables are the report's: a task label in a run's settings is refused
    with pytest.raises(PipelineError, match=r"s\.yaml\.task: unknown key 'display'"):
        settings.load(write(tmp_path, task={**TASK, "display": "Toy"}))


def test_settings_file_round_trips(tmp_path):
    grid = {"grid": {"lr": [1e-5, 3e-5], "batch_size": [16, 32]}, "max_length": 64}
    path = write(tmp_path, model={"name": "m", "restricted": True}, finetune=grid)
    loaded = settings.load(path)
    assert loaded.model.restricted and loaded.finetune.grid.batch_size == [16, 32]
    assert to_dict(loaded)["task"]["labels"] == TASK["labels"]


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "train.jsonl"
    good = {"id": "1", "tokens": ["a", "b"], "tags": ["O", "O"]}
    path.write_text(json.dumps(good) + "\n" + '{"id": "2", "tokens": ["a"]\n')
    with pytest.raises(PipelineError, match=r"train\.jsonl:2: not valid JSON"):
        data.read_split(path, "ner")
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "tags": ["O"]}) + "\n")
    with pytest.raises(PipelineError, match=r"train\.jsonl:2: 2 tokens but 1 tags"):
        data.read_split(path, "ner")
    path.write_text(json.dumps({"id": "1", "text": "x", "label": 3}) + "\n")
    with pytest.raises(PipelineError, match=r"train\.jsonl:1: field 'label' has the wrong type"):
        data.read_split(path, "relation")


def test_undeclared_label_stops_the_run():
    spec = parse(settings.FinetuneTask, {**TASK, "type": "relation", "labels": ["false", "CPR:3"]}, "task")
    splits = {"train": [{"label": "false"}], "dev": [{"label": "CPR:9"}], "test": [{"label": "CPR:3"}]}
    with pytest.raises(PipelineError, match=r"dev\.jsonl: label 'CPR:9' is not in task\.labels"):
        data.label_set(spec, splits)


def test_length_grouped_batches_cover_each_example_once_with_little_padding():
    import numpy as np

    from workflow_scripts.finetune.batching import collate, train_batches

    rng = random.Random(0)
    lengths = [rng.randint(5, 120) for _ in range(1000)]
    grouped = train_batches(lengths, 32, np.random.default_rng(1), group=True)
    plain = train_batches(lengths, 32, np.random.default_rng(1), group=False)
    for batches in (grouped, plain):
        assert sorted(i for b in batches for i in b) == list(range(1000))

    def padding(batches):
        return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)

    assert padding(grouped) < padding(plain) / 5
    features = [
        {"input_ids": [5, 6, 7], "labels": [-100, 1, -100], "example": 0},
        {"input_ids": [5, 7], "labels": [-100, 2], "example": 1},
    ]
    batch = collate(features, pad_id=0, task_type="ner", device="cpu")
    assert batch["input_ids"].tolist() == [[5, 6, 7], [5, 7, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [[-100, 1, -100], [-100, 2, -100]]


@pytest.mark.parametrize("static", [False, True])
def test_collated_batches_equal_the_row_by_row_padding(static):
    """collate builds each tensor in one call; the values are those of padding row by row into
    preallocated tensors (the earlier construction), for every key a batch carries."""
    import torch

    from workflow_scripts.finetune.batching import IGNORE, collate
    from workflow_scripts.finetune.buckets import Padding

    features = [
        {"input_ids": [5, 6, 7, 8], "token_type_ids": [0, 0, 1, 1], "labels": [IGNORE, 1, 0, IGNORE]},
        {"input_ids": [5, 7], "token_type_ids": [0, 1], "labels": [IGNORE, 2]},
        {"input_ids": [5, 9, 4], "token_type_ids": [0, 0, 0], "labels": [0, 2, IGNORE]},
    ]
    padding = Padding("graphs", 64) if static else None
    batch = collate(features, pad_id=1, task_type="ner", device="cpu", padding=padding)
    width = padding.width(4) if static else 4
    expected = {
        "input_ids": torch.full((3, width), 1, dtype=torch.long),
        "attention_mask": torch.zeros((3, width), dtype=torch.long),
        "token_type_ids": torch.zeros((3, width), dtype=torch.long),
        "labels": torch.full((3, width), IGNORE, dtype=torch.long),
    }
    for i, f in enumerate(features):
        k = len(f["input_ids"])
        expected["input_ids"][i, :k] = torch.tensor(f["input_ids"])
        expected["attention_mask"][i, :k] = 1
        expected["token_type_ids"][i, :k] = torch.tensor(f["token_type_ids"])
        expected["labels"][i, :k] = torch.tensor(f["labels"])
    assert batch.keys() == expected.keys()
    for key, tensor in expected.items():
        assert batch[key].dtype == torch.long
        assert torch.equal(batch[key], tensor), key
    full = collate(features[:1], pad_id=1, task_type="ner", device="cpu")
    assert "attention_mask" not in full  # nothing padded, no mask

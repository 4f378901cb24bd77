"""Fine-tuning end to end through the CLI on tiny BERT and RoBERTa models and toy tasks."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from pretrain_fixtures import wordpiece

from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import features as feats
from workflow_scripts.finetune.finetune import main
from workflow_scripts.tasks.metrics import CODING_METRICS, compute, metric_names

torch.set_num_threads(1)

CHEMS = ["aspirin", "metformin", "insulin", "warfarin", "heparin", "cisplatin"]
DISEASES = ["hypertension", "asthma", "sepsis", "pneumonia", "melanoma", "anemia"]
FILLER = ["the", "patients", "with", "were", "given", "and", "showed", "a", "in", "study", "of", "daily"]


# --- tiny models ---------------------------------------------------------------------


def toy_sentences() -> list[str]:
    words = (
        CHEMS
        + DISEASES
        + FILLER
        + [
            "inhibits",
            "activates",
            "measured",
            "identical",
            "unrelated",
            "yes",
            "no",
            "maybe",
            "entails",
            "contradicts",
            "possibly",
            "cancer",
            "heart",
            "does",
            "reduce",
            "risk",
            "@CHEMICAL$",
            "@GENE$",
            "population",
            "intervention",
            "outcome",
            "mortality",
            "adults",
        ]
    )
    rng = random.Random(0)
    return [" ".join(rng.sample(words, 8)) for _ in range(200)] + [" ".join(words)]


def make_bert(path: Path) -> Path:
    from tokenizers import processors
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    tok = wordpiece(toy_sentences(), 300)
    tok.post_processor = processors.BertProcessing(
        ("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]"))
    )
    fast = BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast.save_pretrained(path)
    config = BertConfig(
        vocab_size=len(fast),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(path)
    return path


def make_roberta(path: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(
        toy_sentences(),
        trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>"))
    )
    fast = RobertaTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )
    fast.save_pretrained(path)
    config = RobertaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    RobertaForMaskedLM(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    return make_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def roberta(tmp_path_factory) -> Path:
    return make_roberta(tmp_path_factory.mktemp("roberta"))


# --- toy tasks (normalised JSONL, learnable from word identity) -----------------------


def ner_row(rng: random.Random, i: int) -> dict:
    tokens, tags = [], []
    for _ in range(rng.randint(4, 9)):
        roll = rng.random()
        if roll < 0.2:
            tokens.append(rng.choice(CHEMS))
            tags.append("B-Chemical")
        elif roll < 0.3:
            tokens += [rng.choice(DISEASES), "cancer"]
            tags += ["B-Disease", "I-Disease"]
        else:
            tokens.append(rng.choice(FILLER))
            tags.append("O")
    return {"id": f"s{i}", "tokens": tokens, "tags": tags}


def pico_row(rng, i):
    vocab = {
        "adults": "PAR",
        "population": "PAR",
        "aspirin": "INT",
        "intervention": "INT",
        "mortality": "OUT",
        "outcome": "OUT",
    }
    tokens = [rng.choice(list(vocab) + FILLER) for _ in range(rng.randint(5, 10))]
    return {"id": f"p{i}", "tokens": tokens, "tags": [vocab.get(t, "O") for t in tokens]}


RELATIONS = {"inhibits": "CPR:4", "activates": "CPR:3", "measured": "false"}


def relation_row(rng, i):
    verb = rng.choice(list(RELATIONS))
    text = f"@CHEMICAL$ {verb} @GENE$ {rng.choice(FILLER)}"
    return {"id": f"r{i}", "text": text, "label": RELATIONS[verb]}


def similarity_row(rng, i):
    word = rng.choice(["identical", "unrelated"])
    a = " ".join(rng.sample(FILLER, 4))
    return {"id": f"m{i}", "text_a": a, "text_b": f"{word} {a}", "score": 4.0 if word == "identical" else 0.5}


def doc_row(rng, i):
    words = rng.sample(FILLER, 5)
    labels = []
    if rng.random() < 0.5:
        words.append("sepsis")
        labels.append("infection")
    if rng.random() < 0.5:
        words.append("melanoma")
        labels.append("cancer")
    rng.shuffle(words)
    return {"id": f"d{i}", "text": " ".join(words), "labels": sorted(labels)}


def qa_row(rng, i):
    answer = rng.choice(["yes", "no", "maybe"])
    cue = {"yes": "does", "no": "unrelated", "maybe": "possibly"}[answer]
    return {
        "id": f"q{i}",
        "question": f"{cue} {rng.choice(CHEMS)} reduce risk",
        "context": " ".join(rng.sample(FILLER, 6)),
        "label": answer,
    }


def nli_row(rng, i):
    label = rng.choice(["entailment", "contradiction", "neutral"])
    cue = {"entailment": "entails", "contradiction": "contradicts", "neutral": "possibly"}[label]
    return {
        "id": f"n{i}",
        "text_a": " ".join(rng.sample(FILLER, 5)),
        "text_b": f"{cue} {rng.choice(DISEASES)}",
        "label": label,
    }


TASKS = {
    "ner": (ner_row, "entity_f1", ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"], None),
    "pico": (pico_row, "word_macro_f1", ["O", "PAR", "INT", "OUT"], "O"),
    "relation": (relation_row, "micro_f1_excl_negative", ["false", "CPR:3", "CPR:4"], "false"),
    "similarity": (similarity_row, "pearson", [], None),
    "doc_classification": (doc_row, {"lewis": "example_f1", "blurb": "label_micro_f1"}, ["cancer", "infection"], None),
    "qa": (qa_row, "accuracy", ["yes", "no", "maybe"], None),
    "nli": (nli_row, "accuracy", ["entailment", "contradiction", "neutral"], None),
}


def write_task(root: Path, task_type: str, sizes=(96, 32, 32), seed: int = 1, folds: int = 0) -> Path:
    make, _, _, _ = TASKS[task_type]
    rng = random.Random(seed)
    task_dir = root / f"toy-{task_type}"
    for fold in range(max(folds, 1)):
        where = task_dir / f"fold~{fold}" if folds else task_dir
        where.mkdir(parents=True, exist_ok=True)
        for split, n in zip(("train", "dev", "test"), sizes, strict=True):
            rows = [make(rng, k) for k in range(n)]
            (where / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return task_dir


def task_spec(task_type: str, **extra) -> dict:
    _, metric, labels, negative = TASKS[task_type]
    spec = {
        "name": f"toy-{task_type}",
        "type": task_type,
        "metric": metric,
        "labels": labels,
        "negative_label": negative,
    }
    spec.update(extra)
    return spec


FAST = {
    "lr": 2e-3,
    "batch_size": 16,
    "epochs": 8,
    "eval_every": 6,
    "warmup_ratio": 0.0,
    "dropout": 0.0,
    "max_length": 64,
}


def write_settings(path: Path, task_type: str, finetune: dict | None = None, **task_extra) -> Path:
    data = {
        "model": {"name": "tiny", "restricted": False},
        "task": task_spec(task_type, **task_extra),
        "finetune": {**FAST, **(finetune or {})},
    }
    path.write_text(yaml.safe_dump(data))
    return path


# regression and multi-label heads first fit the label means, and a random tiny encoder finds a
# relation's verb from [CLS] late: these need more steps than the other toy tasks
LONGER = {
    "similarity": {"epochs": 20, "lr": 1e-3},
    "doc_classification": {"epochs": 20, "lr": 2e-3, "batch_size": 8},
    "relation": {"epochs": 16},
}


def run_cli(
    tmp_path: Path,
    model: Path,
    task_type: str,
    seed: int = 1,
    finetune=None,
    task_dir=None,
    name="run",
    extra_args=(),
    **task_extra,
) -> dict:
    task_dir = task_dir or write_task(tmp_path, task_type)
    finetune = {**LONGER.get(task_type, {}), **(finetune or {})}
    settings = write_settings(tmp_path / f"{name}.yaml", task_type, finetune, **task_extra)
    out = tmp_path / name
    main([*cli_args(settings, model, task_dir, out, seed), "--fold", "0", *extra_args])
    return json.loads((out / "metrics.json").read_text())


def cli_args(settings: Path, model: Path, task_dir: Path, out: Path, seed: int = 1) -> list[str]:
    paths = {"--settings": settings, "--model": model, "--task-dir": task_dir, "--out": out}
    return [*(arg for flag, path in paths.items() for arg in (flag, str(path))), "--seed", str(seed)]


CHANCE = {
    "ner": 0.2,
    "pico": 0.4,
    "relation": 0.5,
    "similarity": 0.3,
    "doc_classification": 0.6,
    "qa": 0.45,
    "nli": 0.45,
}


def test_code_ranking_metrics_read_the_probabilities(tmp_path, bert):
    metrics = run_cli(tmp_path, bert, "doc_classification", metric="code_micro_f1")
    by_metric = metrics["test"]["by_metric"]
    assert list(by_metric) == list(CODING_METRICS) and metrics["test"]["score"] > CHANCE["doc_classification"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    labels = TASKS["doc_classification"][2]
    # from the predicted label sets alone (scores 0 or 1) the area would differ, unless those sets are all right
    hard = compute("code_micro_auc", [r["gold"] for r in rows], [r["pred"] for r in rows], labels=labels)
    auc = by_metric["code_micro_auc"]["score"]
    assert 0.5 < auc <= 1 and (auc != hard["score"] or hard["score"] == 1.0)


@pytest.mark.parametrize("task_type", list(TASKS))
def test_every_task_type_learns_and_writes_its_outputs(tmp_path, bert, task_type):
    metrics = run_cli(tmp_path, bert, task_type)
    out = tmp_path / "run"
    assert metrics["task"] == f"toy-{task_type}" and metrics["seed"] == 1 and metrics["fold"] == 0
    assert metrics["dev"]["score"] > CHANCE[task_type], metrics["history"]
    assert metrics["test"]["score"] > CHANCE[task_type]
    # every metric of the task's benchmarks and its family, from the same predictions
    names = metric_names(TASKS[task_type][1])
    assert metrics["metrics"] == names and metrics["test"]["score"] == metrics["test"][names[0]]
    assert all(metrics["test"]["by_metric"][n]["score"] == metrics["test"][n] for n in names)
    assert 0 < metrics["best_step"] <= metrics["steps"]
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == 32 and {"id", "gold", "pred"} <= set(predictions[0])
    config = yaml.safe_load((out / "config.yaml").read_text())
    expected = {**FAST, **LONGER.get(task_type, {})}
    assert config["finetune"]["batch_size"] == expected["batch_size"] and config["task"]["type"] == task_type
    record = json.loads((out / "provenance.json").read_text())
    assert record["seed"] == 1 and record["restricted"] is False
    assert {o["path"].rsplit("/", 1)[-1] for o in record["outputs"]} == {
        "metrics.json",
        "predictions.jsonl",
        "config.yaml",
    }


def test_same_seed_same_metrics_and_another_seed_differs(tmp_path, bert):
    task_dir = write_task(tmp_path, "relation")
    first = run_cli(tmp_path, bert, "relation", seed=7, task_dir=task_dir, name="a")
    again = run_cli(tmp_path, bert, "relation", seed=7, task_dir=task_dir, name="b")
    other = run_cli(tmp_path, bert, "relation", seed=8, task_dir=task_dir, name="c")
    for key in ("dev", "test", "best_step", "history"):
        assert first[key] == again[key]
    assert [h["loss"] for h in first["history"]] != [h["loss"] for h in other["history"]]
    assert (tmp_path / "a" / "predictions.jsonl").read_text() == (tmp_path / "b" / "predictions.jsonl").read_text()


def test_flipped_test_labels_change_nothing_that_was_chosen(tmp_path, bert):
    """Checkpoint selection sees dev only: a test set with every label flipped leaves the
    chosen step, the dev scores and the predictions unchanged, and only the test score drops."""
    task_dir = write_task(tmp_path, "relation")
    flipped_dir = tmp_path / "flipped"
    flipped_dir.mkdir()
    swap = {"false": "CPR:3", "CPR:3": "CPR:4", "CPR:4": "false"}
    for split in ("train", "dev"):
        (flipped_dir / f"{split}.jsonl").write_text((task_dir / f"{split}.jsonl").read_text())
    rows = [json.loads(line) for line in (task_dir / "test.jsonl").read_text().splitlines()]
    (flipped_dir / "test.jsonl").write_text("".join(json.dumps({**r, "label": swap[r["label"]]}) + "\n" for r in rows))
    settings = {"eval_every": 4, "patience": 0}
    plain = run_cli(tmp_path, bert, "relation", task_dir=task_dir, name="plain", finetune=settings)
    flipped = run_cli(tmp_path, bert, "relation", task_dir=flipped_dir, name="flipped", finetune=settings)
    assert len(plain["history"]) > 3  # a real choice between evaluations was made
    assert flipped["best_step"] == plain["best_step"] and flipped["dev"] == plain["dev"]
    assert flipped["history"] == plain["history"]
    preds = [json.loads(line)["pred"] for line in (tmp_path / "plain" / "predictions.jsonl").read_text().splitlines()]
    flipped_preds = [
        json.loads(line)["pred"] for line in (tmp_path / "flipped" / "predictions.jsonl").read_text().splitlines()
    ]
    assert preds == flipped_preds
    assert plain["test"]["score"] > 0.9 and flipped["test"]["score"] < 0.1


def test_long_sentence_is_split_into_windows_and_every_word_is_predicted(tmp_path, roberta):
    task_dir = write_task(tmp_path, "ner")
    rng = random.Random(5)
    long_rows = [ner_row(rng, 0) for _ in range(12)]
    tokens = [t for r in long_rows for t in r["tokens"]]
    tags = [t for r in long_rows for t in r["tags"]]
    assert len(tokens) > 60
    with open(task_dir / "test.jsonl", "a") as fh:
        fh.write(json.dumps({"id": "long", "tokens": tokens, "tags": tags}) + "\n")
    metrics = run_cli(tmp_path, roberta, "ner", task_dir=task_dir, finetune={"max_length": 24, "window_context": 4})
    assert metrics["encoding"]["sentences_split_into_windows"] >= 1
    assert metrics["features"]["test"] > metrics["examples"]["test"]
    rows = {
        json.loads(line)["id"]: json.loads(line)
        for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    }
    assert len(rows["long"]["pred"]) == len(tokens) and rows["long"]["gold"] == tags
    assert metrics["test"]["score"] > CHANCE["ner"]


@pytest.mark.parametrize(
    "options",
    [
        {"re_input": "markers", "pooling": "cls"},
        {"re_input": "markers", "pooling": "entity_start"},
        {"re_input": "dummify", "pooling": "entity_start"},
        {"re_input": "markers", "pooling": "mention"},
    ],
)
def test_relation_input_and_pooling_options_learn(tmp_path, roberta, options):
    metrics = run_cli(tmp_path, roberta, "relation", finetune=options)
    assert metrics["test"]["score"] > CHANCE["relation"], metrics["history"]
    assert "entities_not_found_pooled_at_cls" not in metrics["encoding"]
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["finetune"]["pooling"] == options["pooling"]


@pytest.mark.parametrize("task_type", ["doc_classification", "similarity", "nli"])
def test_mean_pooling_learns_sentence_level_tasks(tmp_path, bert, task_type):
    metrics = run_cli(tmp_path, bert, task_type, finetune={"pooling": "mean"})
    assert metrics["test"]["score"] > CHANCE[task_type], metrics["history"]
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["finetune"]["pooling"] == "mean"


def test_mean_pooling_reads_every_token_and_ignores_padding(bert):

    from workflow_scripts.finetune import heads

    torch.manual_seed(0)
    model = heads.build(str(bert), "nli", ["a", "b", "c"], 0.0, "mean", 0).eval()
    ids = torch.tensor([[2, 7, 8, 9, 3]])
    padded = {"input_ids": torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], 1)}
    padded["attention_mask"] = (padded["input_ids"] != 0).long()
    with torch.no_grad():
        alone = heads.forward(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
        with_padding = heads.forward(model, padded)
        changed = heads.forward(model, {"input_ids": ids.where(ids != 8, 11), "attention_mask": torch.ones_like(ids)})
    assert torch.allclose(alone, with_padding, atol=1e-5)
    assert not torch.allclose(alone, changed, atol=1e-5)


def test_entity_pooling_on_a_task_without_entities_is_refused(tmp_path, bert):
    task_dir = write_task(tmp_path, "nli", sizes=(4, 4, 4))
    settings = write_settings(tmp_path / "s.yaml", "nli", {"pooling": "entity_start"})
    with pytest.raises(PipelineError, match="finetune.pooling: entity_start pools a relation's two entities"):
        main(cli_args(settings, bert, task_dir, tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_entity_pooling_spans_point_at_markers_mentions_and_placeholders(roberta):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(roberta)
    tokenizer.add_tokens(list(feats.MARKERS), special_tokens=True)
    rows = [{"id": "1", "text": "the @CHEMICAL$ inhibits @GENE$ daily", "label": "CPR:4"}]
    labels = ["false", "CPR:3", "CPR:4"]

    def pooled_text(re_input, pooling):
        enc = feats.Encoding("relation", labels, 64, re_input=re_input, pooling=pooling)
        (feature,) = feats.encode(tokenizer, rows, enc)
        return [tokenizer.decode(feature["input_ids"][s:e]).strip() for s, e in feature["entities"]]

    assert pooled_text("markers", "entity_start") == ["[E1]", "[E2]"]
    assert pooled_text("markers", "mention") == ["@CHEMICAL$", "@GENE$"]
    assert pooled_text("dummify", "mention") == ["@CHEMICAL$", "@GENE$"]
    first, second = pooled_text("dummify", "entity_start")
    assert "@CHEMICAL$".startswith(first) and "@GENE$".startswith(second)


@pytest.mark.parametrize("scheme", ["io", "bioul"])
def test_ner_tag_schemes_and_all_subtoken_labels_train_and_score_as_bio(tmp_path, bert, scheme):
    metrics = run_cli(tmp_path, bert, "ner", finetune={"tagging": scheme, "label_all_subtokens": True})
    assert metrics["encoding"]["scheme"] == scheme
    preds = [json.loads(line)["pred"] for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert {t for p in preds for t in p} <= {"O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}
    assert metrics["test"]["score"] > CHANCE["ner"]


def test_grid_is_chosen_on_dev(tmp_path, bert):
    metrics = run_cli(tmp_path, bert, "nli", finetune={"grid": {"lr": [1e-6, 2e-3], "batch_size": [16]}})
    assert [(g["lr"], g["batch_size"]) for g in metrics["grid"]] == [(1e-6, 16), (2e-3, 16)]
    best = max(metrics["grid"], key=lambda g: g["dev_score"])
    assert metrics["hyper"] == {"lr": best["lr"], "batch_size": 16} and metrics["dev"]["score"] == best["dev_score"]
    assert metrics["hyper"]["lr"] == 2e-3


def test_folds_and_steps_fixed_on_the_selection_fold(tmp_path, bert):
    task_dir = write_task(tmp_path, "relation", folds=3)
    settings = write_settings(tmp_path / "s.yaml", "relation", {"patience": 2}, folds=3)
    common = ["--settings", str(settings), "--model", str(bert), "--task-dir", str(task_dir), "--seed", "3"]
    main([*common, "--fold", "0", "--out", str(tmp_path / "f0")])
    chosen = json.loads((tmp_path / "f0" / "metrics.json").read_text())
    main([*common, "--fold", "2", "--out", str(tmp_path / "f2"), "--steps-from", str(tmp_path / "f0" / "metrics.json")])
    fold2 = json.loads((tmp_path / "f2" / "metrics.json").read_text())
    assert fold2["fold"] == 2 and fold2["steps"] == fold2["best_step"] == chosen["best_step"]
    assert len(fold2["history"]) == 1 and fold2["hyper"] == chosen["hyper"]
    # the selection run's schedule, stopped at its chosen step, not one squeezed into those steps
    assert fold2["schedule_steps"] == chosen["schedule_steps"] > chosen["best_step"]
    at_choice = next(h["lr"] for h in chosen["history"] if h["step"] == chosen["best_step"])
    assert fold2["history"][0]["lr"] == pytest.approx(at_choice) and at_choice > 0
    record = json.loads((tmp_path / "f2" / "provenance.json").read_text())
    assert record["inputs"]["selection"]["path"].endswith("f0/metrics.json")
    with pytest.raises(PipelineError, match="--fold 3: task toy-relation has folds 0..2"):
        main([*common, "--fold", "3", "--out", str(tmp_path / "f3")])


def test_features_are_cached_and_reused(tmp_path, bert, caplog):
    task_dir = write_task(tmp_path, "nli")
    cache_dir = tmp_path / "cache"
    first = run_cli(tmp_path, bert, "nli", task_dir=task_dir, name="a", extra_args=["--cache-dir", str(cache_dir)])
    assert len(list(cache_dir.glob("*.json"))) == 1
    caplog.set_level("INFO")
    second = run_cli(tmp_path, bert, "nli", task_dir=task_dir, name="b", extra_args=["--cache-dir", str(cache_dir)])
    assert "features from cache" in caplog.text
    assert first["dev"] == second["dev"] and first["test"] == second["test"]
    run_cli(
        tmp_path,
        bert,
        "nli",
        task_dir=task_dir,
        name="c",
        finetune={"max_length": 32},
        extra_args=["--cache-dir", str(cache_dir)],
    )
    assert len(list(cache_dir.glob("*.json"))) == 2


def test_restricted_task_marks_the_run(tmp_path, bert):
    metrics = run_cli(tmp_path, bert, "nli", restricted=True)
    assert metrics["restricted"] is True
    assert json.loads((tmp_path / "run" / "provenance.json").read_text())["restricted"] is True


def test_cli_process_reports_a_bad_setting_in_one_line(tmp_path, bert):
    task_dir = write_task(tmp_path, "nli", sizes=(4, 4, 4))
    settings = write_settings(tmp_path / "s.yaml", "nli", {"warmup_ratio": 1.5})
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.finetune.finetune",
            *cli_args(settings, bert, task_dir, tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {settings}.finetune.warmup_ratio: must be in [0, 1), got 1.5"
    )
    assert not (tmp_path / "out").exists()


def test_a_preloaded_run_writes_what_a_plain_run_writes(tmp_path, bert):
    """The demo's runs go through workflow_scripts.preload: same outputs, same error handling."""
    task_dir = write_task(tmp_path, "ner")
    plain = run_cli(tmp_path, bert, "ner", seed=3, task_dir=task_dir, name="plain")
    settings = write_settings(tmp_path / "preloaded.yaml", "ner", FAST)
    bad = write_settings(tmp_path / "bad.yaml", "ner", {"warmup_ratio": 1.5})
    env = {**os.environ, "WORKFLOW_PRELOAD": "1", "TMPDIR": str(tmp_path), "PYTHONPATH": str(Path.cwd())}
    command = [
        sys.executable,
        "-m",
        "workflow_scripts.preload",
        "workflow_scripts.finetune.finetune",
        "--model",
        str(bert),
        "--task-dir",
        str(task_dir),
        "--seed",
        "3",
    ]
    try:
        for name in ("first", "second"):
            proc = subprocess.run(
                [*command, "--settings", str(settings), "--out", str(tmp_path / name)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr
            assert "workflow_scripts.finetune.finetune INFO toy-ner fold 0 seed 3: dev" in proc.stderr
            preloaded = json.loads((tmp_path / name / "metrics.json").read_text())
            for key in ("dev", "test", "best_step", "history"):
                assert preloaded[key] == plain[key]
            assert (tmp_path / name / "predictions.jsonl").read_bytes() == (
                tmp_path / "plain" / "predictions.jsonl"
            ).read_bytes()
        proc = subprocess.run(
            [*command, "--settings", str(bad), "--out", str(tmp_path / "bad")],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines()[-1] == f"error: {bad}.finetune.warmup_ratio: must be in [0, 1), got 1.5"
    finally:
        for sock in tmp_path.glob("workflow-preload-*.sock"):
            subprocess.run(["pkill", "-f", "--", f"--serve {sock}"], check=False)

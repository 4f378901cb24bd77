"""ModernBERT-class pretraining in the shared engine: settings, masking, context extension,
reloading, fine-tuning on every task type and distillation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pretrain_fixtures as fx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file
from test_finetune_run import CHANCE, run_cli, toy_sentences
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer, PreTrainedTokenizerFast

from workflow_scripts.distill import distill as distill_cli
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune.heads import encoder_mask
from workflow_scripts.pack import format as packfmt
from workflow_scripts.pretrain.batches import mask_rows
from workflow_scripts.pretrain.data import PackedCorpus
from workflow_scripts.pretrain.masking import step_generator
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.tokenizer import Specials
from workflow_scripts.typed import parse

torch.set_num_threads(1)

# ModernBERT's own recipe at test size: no dropout, a 16-token window so local layers differ from global ones
MODERN = {
    "architecture": "modernbert",
    "dropout": 0.0,
    "attention_dropout": 0.0,
    "modernbert": {"local_attention": 16, "global_attn_every_n_layers": 2},
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The pretraining corpus and a WordPiece that also knows the fine-tuning tasks' words."""
    root = tmp_path_factory.mktemp("modernbert")
    texts = fx.documents(200) + toy_sentences()
    return {
        "root": root,
        "corpus": fx.make_corpus(root / "corpus", 200),
        "wordpiece": fx.make_wordpiece(root / "wp", texts, vocab_size=300),
    }


@pytest.fixture(scope="module")
def trained(base):
    phases = [{"seq_len": 64, "fraction": 1.0}]  # the fine-tuning tests' max_length
    return fx.pretrain(base, base["root"], "mb", max_steps=40, checkpoint_every=40, phases=phases, **MODERN)


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"architecture": "bert", "modernbert": {"local_attention": 64}}, r"p\.modernbert: .* modernbert only"),
        ({"phases": [{"seq_len": 128, "rope_theta": 160000.0}]}, r"p\.phases\[0\]\.rope_theta: .* roberta learns"),
        ({"architecture": "modernbert", "objective": "electra"}, r"p\.objective: objective electra does not go"),
        ({"architecture": "modernbert", "modernbert": {"local_attention": 127}}, r"p\.modernbert\.local_attention"),
    ],
)
def test_settings_that_make_no_sense_name_their_key(settings, key):
    with pytest.raises(PipelineError, match=key):
        parse(PretrainSettings, settings, "p")


def test_the_defaults_are_modernberts_own():
    s = parse(PretrainSettings, {"architecture": "modernbert", "size": "base"}, "p")
    own = s.modernbert_settings()
    assert (own.local_attention, own.global_attn_every_n_layers) == (128, 3)
    assert (own.global_rope_theta, own.local_rope_theta, own.bias) == (160_000.0, 10_000.0, False)
    assert s.shape() == (768, 12, 12, 1152)  # ModernBERT-base's GeGLU width


def _modernbert_style_tokenizer(directory: Path, texts: list[str]) -> Path:
    """Byte-level BPE with BERT's special tokens and an extra special one, as ModernBERT's tokenizer has."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]", "<|endoftext|>"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials, initial_alphabet=alphabet)
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.BertProcessing(("[SEP]", 2), ("[CLS]", 0))
    names = dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]")
    PreTrainedTokenizerFast(tokenizer_object=tok, **names).save_pretrained(directory)
    return directory


def test_special_tokens_are_never_masked(tmp_path):
    """The block's own [CLS]/[SEP] and the special tokens the text spells out ([MASK], [SEP],
    <|endoftext|>) are never selected, even at 90% masking; the text around them is."""
    docs = [f"{d} [MASK] the <|endoftext|> next [SEP] one" for d in fx.documents(60)]
    corpus = fx.make_corpus(tmp_path / "corpus", 60)
    ids = [f"d{i}" for i in range(len(docs))]
    pq.write_table(pa.table({"id": ids, "source": ["t"] * len(docs), "text": docs}), corpus / "shard~0.parquet")
    tokenizer_dir = _modernbert_style_tokenizer(tmp_path / "tok", docs)
    index = fx.pack(corpus, tokenizer_dir, tmp_path / "packed", seq_len=32, heldout_fraction=0.0)
    blocks = PackedCorpus([index.parent / "shard~0"], "train")
    toks, flags = blocks.take(np.arange(len(blocks)))
    specials = Specials.of(AutoTokenizer.from_pretrained(tokenizer_dir), "tok")
    special = np.isin(toks, specials.never_masked)
    assert len(specials.never_masked) == 5  # [CLS] [PAD] [SEP] [MASK] <|endoftext|>, not [UNK]
    assert (special & (flags != packfmt.SPECIAL)).sum() > 50  # spelled out in the text, not flagged by packing
    s = parse(PretrainSettings, {"architecture": "modernbert", "mask_prob": 0.9}, "p")
    _, _, selected = mask_rows(s, specials, toks, flags, step_generator(1, 0, 0), 0)
    assert not selected.numpy()[special].any()
    assert selected.numpy()[~special].mean() > 0.85


def _config_without_rope(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in ("rope_parameters", "dtype")}


def test_context_extension_changes_only_the_rotary_base_and_resumes_across_it(base, tmp_path):
    phases = [{"seq_len": 32, "fraction": 0.5}, {"seq_len": 64, "fraction": 0.5, "rope_theta": 320_000.0}]
    common = dict(max_steps=12, checkpoint_every=6, log_every=2, phases=phases, **MODERN)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    full = fx.pretrain(base, tmp_path / "a", "full", **common)
    part = fx.pretrain(base, tmp_path / "b", "part", stop_after=8, **common)  # stopped inside the extension
    fx.pretrain(base, tmp_path / "b", "part", **common)
    a, b = load_file(full / "model.safetensors"), load_file(part / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    rows = [json.loads(line) for line in (full / "train_log.jsonl").read_text().splitlines()]
    assert [r["seq_len"] for r in rows] == [32, 32, 32, 64, 64, 64]
    before = json.loads((full / "training_state" / "step~00000006" / "model" / "config.json").read_text())
    after = json.loads((full / "config.json").read_text())
    assert before["rope_parameters"]["full_attention"]["rope_theta"] == 160_000.0
    assert after["rope_parameters"]["full_attention"]["rope_theta"] == 320_000.0
    assert before["rope_parameters"]["sliding_attention"] == after["rope_parameters"]["sliding_attention"]
    assert _config_without_rope(before) == _config_without_rope(after)
    rotary = AutoModelForMaskedLM.from_pretrained(full).model.rotary_emb
    dim = 64 // 4
    expected = 1.0 / (320_000.0 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
    assert torch.allclose(rotary.full_attention_inv_freq, expected)


def test_a_checkpoint_reloads_and_continues_through_init(trained, base, tmp_path):
    model = AutoModelForMaskedLM.from_pretrained(trained)
    tokenizer = AutoTokenizer.from_pretrained(trained)
    assert type(model).__name__ == "ModernBertForMaskedLM" and len(tokenizer) == model.config.vocab_size
    assert model.config.layer_types == ["full_attention", "sliding_attention"] and model.config.local_attention == 16
    assert not any(m.bias is not None for m in model.model.modules() if isinstance(m, torch.nn.Linear))
    assert "token_type_ids" not in tokenizer("a pair", "of sentences")
    prov = json.loads((trained / "provenance.json").read_text())
    assert prov["step"] == "pretrain" and prov["model"]["config"]["model_type"] == "modernbert"
    result = json.loads((trained / "eval.json").read_text())
    assert result["heldout_loss"] < np.log(len(tokenizer)) - 1.0
    phases = [{"seq_len": 128, "fraction": 1.0, "rope_theta": 320_000.0}]
    more = fx.pretrain(base, tmp_path, "more", init=trained, max_steps=4, phases=phases, **MODERN)
    continued = AutoModelForMaskedLM.from_pretrained(more).config
    assert continued.max_position_embeddings == 128  # rotary positions: the longest context trained
    assert continued.rope_parameters["full_attention"]["rope_theta"] == 320_000.0
    bert = fx.pretrain(base, tmp_path, "bert", max_steps=2)
    with pytest.raises(PipelineError, match=r"architecture: modernbert, but .* is a bert checkpoint"):
        fx.pretrain(base, tmp_path, "wrong", init=bert, max_steps=2, **MODERN)


def test_fine_tuning_keeps_the_local_layers_windows(trained):
    """The padding mask fine-tuning passes leaves ModernBERT's sliding windows in place."""
    encoder = AutoModel.from_pretrained(trained).eval()
    ids = torch.randint(5, encoder.config.vocab_size, (2, 40))
    mask = torch.ones_like(ids)
    mask[1, 30:] = 0
    with torch.no_grad():
        plain = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        passed = encoder(input_ids=ids, attention_mask=encoder_mask(encoder, mask)).last_hidden_state
        unwindowed = encoder(input_ids=ids, attention_mask=mask.bool()[:, None, None, :].expand(-1, 1, 40, -1))
    torch.testing.assert_close(passed, plain)
    assert not torch.allclose(unwindowed.last_hidden_state, plain, atol=1e-4)  # the window matters here


FINETUNE_CASES = [
    ("ner", {}),
    ("pico", {}),
    ("similarity", {}),
    ("doc_classification", {}),
    # sentence pairs: at the toy tasks' 2e-3 the tiny model stays near chance at [CLS]. Seeds 1-4
    # measured: qa at [CLS], 5e-4 for 30 epochs, 0.938 to 1.0; nli at [CLS] 0.16 to 1.0 in any
    # setting tried, mean-pooled at 2e-3 for 16 epochs 0.969 to 1.0
    ("qa", {"lr": 5e-4, "epochs": 30}),
    ("nli", {"lr": 2e-3, "epochs": 16, "pooling": "mean"}),
    ("relation", {"re_input": "markers", "pooling": "cls"}),
    ("relation", {"re_input": "markers", "pooling": "entity_start"}),
    ("relation", {"re_input": "markers", "pooling": "mention"}),
    ("relation", {"re_input": "dummify", "pooling": "mean"}),
]


@pytest.mark.parametrize(("task_type", "options"), FINETUNE_CASES, ids=lambda c: str(c))
def test_a_pretrained_modernbert_fine_tunes_on_every_task_type(trained, tmp_path, task_type, options):
    metrics = run_cli(tmp_path, trained, task_type, finetune=options)
    assert metrics["test"]["score"] > CHANCE[task_type], metrics["history"]


@pytest.fixture(scope="module")
def teacher(trained):
    return trained


def _distill(base, teacher: Path, tmp_path: Path, name: str, **overrides) -> Path:
    settings = fx.write_settings(tmp_path / f"{name}.yaml", name, key="distill", max_steps=6, **overrides)
    out = tmp_path / name
    argv = ["--settings", str(settings), "--teacher", str(teacher), "--corpus", str(base["corpus"]), "--out", str(out)]
    distill_cli.main(argv)
    return out


def test_distillation_with_a_modernbert_teacher_and_student(base, teacher, tmp_path):
    copied = _distill(base, teacher, tmp_path, "copied", student={"layers": [1]})
    student = AutoModelForMaskedLM.from_pretrained(copied)
    assert type(student).__name__ == "ModernBertForMaskedLM"
    assert student.config.layer_types == ["sliding_attention"]  # teacher layer 1 keeps its local window
    rows = [json.loads(line) for line in (copied / "train_log.jsonl").read_text().splitlines()]
    assert rows[-1]["loss_kl"] > 0 and rows[-1]["loss_cosine"] >= 0
    scratch = _distill(
        base, teacher, tmp_path, "scratch", student={"init": "random"}, hidden_size=32, num_layers=1, **MODERN
    )
    assert AutoModelForMaskedLM.from_pretrained(scratch).config.hidden_size == 32
    with pytest.raises(PipelineError, match=r"attention terms .* is a ModernBERT"):
        _distill(base, teacher, tmp_path, "maps", student={"layers": [1]}, loss={"attention_mse": 1.0})

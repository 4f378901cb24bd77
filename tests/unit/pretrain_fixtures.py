"""Small corpora, tokenizers and settings for the pretraining and distillation tests.

Imported as ``pretrain_fixtures`` (tests/unit is on pytest's pythonpath): the tests run
with ``--import-mode=importlib`` and the name ``tests`` belongs to another package.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
import yaml
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

from workflow_scripts.pack import pack as pack_cli
from workflow_scripts.pack.index import build_index
from workflow_scripts.pack.keys import packed_subdir
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.vocab import bpe_wordpiece, spm
from workflow_scripts.vocab.settings import VocabSettings

DRUGS = ["metformin", "insulin", "aspirin", "warfarin", "cisplatin", "tamoxifen", "heparin", "lisinopril"]
DISEASES = ["hypertension", "asthma", "diabetes", "sepsis", "pneumonia", "melanoma", "cirrhosis", "epilepsy"]
GENES = ["BRCA1", "TP53", "EGFR", "KRAS", "BRAF", "PTEN", "MYC", "STAT3"]
ORGANS = ["liver", "kidney", "heart", "lung", "brain", "pancreas"]
TEMPLATES = [
    "Treatment with {drug} reduced {disease} in patients.",
    "Expression of {gene} was increased in the {organ} of mice with {disease}.",
    "We studied {drug} in patients with {disease} and measured {gene} levels.",
    "Mutations in {gene} are associated with {disease} of the {organ}.",
    "The {organ} responded to {drug} within two weeks.",
]


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(TEMPLATES).format(
            drug=rng.choice(DRUGS), disease=rng.choice(DISEASES), gene=rng.choice(GENES), organ=rng.choice(ORGANS)
        )
        for _ in range(n)
    ]


def documents(n_docs: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    sents = sentences(n_docs * 6, seed)
    return [" ".join(sents[i * 6 : i * 6 + rng.randint(2, 6)]) for i in range(n_docs)]


def make_corpus(directory: Path, n_docs: int = 300, seed: int = 0, shards: int = 1) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    docs = documents(n_docs, seed)
    per = (len(docs) + shards - 1) // shards
    for k in range(shards):
        chunk = docs[k * per : (k + 1) * per]
        table = pa.table(
            {"id": [f"doc{seed}-{k}-{i}" for i in range(len(chunk))], "source": ["test"] * len(chunk), "text": chunk}
        )
        pq.write_table(table, directory / f"shard~{k}.parquet")
    (directory / "stats.json").write_text(json.dumps({"documents": len(docs)}))
    (directory / "provenance.json").write_text(json.dumps({"step": "test-corpus", "seed": seed, "restricted": False}))
    return directory


def _save(tok: Tokenizer, directory: Path, **special) -> Path:
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **special)
    fast.save_pretrained(directory)
    return directory


def wordpiece(texts: list[str], vocab_size: int) -> Tokenizer:
    """An uncased BERT WordPiece learnt by the workflow's own trainer. ``tokenizers``' trainer
    alone breaks ties in hash-map order, so each test process would learn other ids and train
    other weights; the workflow fixes its alphabet first and learns the same vocabulary always."""
    settings = VocabSettings(algorithm="wordpiece", size=vocab_size, min_frequency=0)
    return bpe_wordpiece.train_wordpiece(settings, lambda: texts)


def make_wordpiece(directory: Path, texts: list[str], vocab_size: int = 200) -> Path:
    tok = wordpiece(texts, vocab_size)
    tok.post_processor = processors.BertProcessing(
        ("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]"))
    )
    return _save(
        tok, directory, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"
    )


def make_bpe(directory: Path, texts: list[str], vocab_size: int = 300) -> Path:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>"))
    )
    return _save(
        tok,
        directory,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )


def make_sentencepiece(directory: Path, texts: list[str], vocab_size: int = 100) -> Path:
    # SentencePiece itself, seeded, as the workflow learns one: the same pieces in every process
    settings = VocabSettings(algorithm="sentencepiece_unigram", size=vocab_size, lowercase=False)
    tok = spm.to_tokenizer(spm.train_model(settings, texts, "test corpus"), settings)
    return _save(
        tok, directory, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"
    )


def corpus_and_tokenizers(root: Path, shards: int = 1) -> dict:
    """A 300-document corpus and a WordPiece, a byte-level BPE and a SentencePiece tokenizer learnt on it."""
    texts = documents(300)
    return {
        "root": root,
        "corpus": make_corpus(root / "corpus", 300, shards=shards),
        "wordpiece": make_wordpiece(root / "wordpiece", texts),
        "bpe": make_bpe(root / "bpe", texts),
        "sentencepiece": make_sentencepiece(root / "sentencepiece", texts),
    }


def corpus_and_wordpiece(root: Path, n_docs: int = 200, shards: int = 1) -> dict:
    """A corpus of ``n_docs`` documents and a WordPiece learnt on them: what most fault tests train on."""
    return {
        "root": root,
        "corpus": make_corpus(root / "corpus", n_docs, shards=shards),
        "wordpiece": make_wordpiece(root / "wp", documents(n_docs)),
    }


TINY = {
    "architecture": "bert",
    "size": "tiny",
    "max_steps": 30,
    "batch_size": 8,
    "phases": [{"seq_len": 32, "fraction": 1.0}],
    "lr": 2e-3,
    "warmup_ratio": 0.1,
    "log_every": 5,
    "checkpoint_every": 10,
    "precision": "fp32",
    "heldout_fraction": 0.1,
    "num_threads": 1,
    "seed": 7,
}


def flags(**values) -> list[str]:
    """A command line from keywords, in their order: ``flags(settings=s, stop_after=3)`` is
    ``["--settings", str(s), "--stop-after", "3"]``."""
    return [item for key, value in values.items() for item in (f"--{key.replace('_', '-')}", str(value))]


def write_settings(path: Path, name: str = "m", key: str = "pretrain", **overrides) -> Path:
    body = {**TINY, **overrides}
    path.write_text(yaml.safe_dump({"model": {"name": name, key: body}}))
    return path


def pretrain(
    base: dict,
    tmp_path: Path,
    name: str = "m",
    tokenizer: str = "wordpiece",
    init: Path | None = None,
    stop_after: int | None = None,
    **overrides,
) -> Path:
    """Run the pretraining CLI on ``base["corpus"]`` from a tokenizer of ``base`` or from ``init``."""
    settings = write_settings(tmp_path / f"{name}.yaml", name, **overrides)
    out = tmp_path / name
    source = flags(init=init) if init else flags(tokenizer=base[tokenizer])
    argv = [*flags(settings=settings, corpus=base["corpus"]), *source, *flags(out=out)]
    if stop_after:
        argv += flags(stop_after=stop_after)
    pretrain_cli.main(argv)
    return out


def pack(corpus: Path, tokenizer: Path, root: Path, seq_len: int = 32, heldout_fraction: float = 0.1) -> Path:
    """Pack every shard of ``corpus`` as the workflow's pack jobs do; return the index a training job opens."""
    base = root / corpus.name / packed_subdir(seq_len, heldout_fraction)
    dirs = []
    for shard in sorted(corpus.glob("shard~*.parquet")):
        dirs.append(base / shard.stem)
        pack_cli.main(
            [
                "--shard",
                str(shard),
                "--tokenizer",
                str(tokenizer),
                "--seq-len",
                str(seq_len),
                "--heldout-fraction",
                str(heldout_fraction),
                "--out",
                str(dirs[-1]),
            ]
        )
    build_index(corpus.name, dirs, base / "index.json")
    return base / "index.json"


def tiny_bert(
    hidden: int,
    layers: int,
    heads: int,
    vocab: int,
    *,
    seq_len: int = 16,
    intermediate: int | None = None,
    dropout: float = 0.0,
    attention: str = "sdpa",
    seed: int = 0,
):
    """A freshly initialised BertForMaskedLM of the given shape (seeded), built from its config."""
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate or 4 * hidden,
        max_position_embeddings=seq_len,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    cfg._attn_implementation = attention
    return BertForMaskedLM(cfg)

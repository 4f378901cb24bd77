"""The pack stage: vectorised word starts and blocks, equal to a per-token reference; content keys; the index."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pretrain_fixtures as fx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from transformers import AutoTokenizer

from workflow_scripts.config import plan
from workflow_scripts.config.validate import load_config
from workflow_scripts.corpus.medline import Citation, document_text, iter_medline
from workflow_scripts.errors import PipelineError
from workflow_scripts.pack import format as packfmt
from workflow_scripts.pack import pack as pack_cli
from workflow_scripts.pack.encode import Encoder, _doc_starts, word_flags
from workflow_scripts.pack.index import build_index, read_index
from workflow_scripts.pack.local import index_paths, pack_corpora
from workflow_scripts.pack.pack import pack_shard
from workflow_scripts.pretrain import data as pdata

ROOT = Path(__file__).resolve().parents[2]
REAL = Path(os.environ["REAL_DATA_DIR"]) if os.environ.get("REAL_DATA_DIR") else None
# what the byte-level pattern treats specially: contractions, runs of whitespace, characters of several
# bytes and classes, added tokens written in the text, empty and whitespace-only documents
TRICKY = [
    "Crohn's disease isn't rare; they'll say we've seen it, I'm sure he'd agree you're right.",
    "3'-UTR and 5' end, l'sat, ''s, .'s, 's start 'res 'systemic' ('treated')",
    "a  b   c\n\nd \n e\t\tf  \n",
    " leading space",
    "trailing spaces   ",
    "\u00a0nbsp\u2009thin x\u3000y  \u00a0 z",
    "α-helix β2 µg/ml at 37 °C ± 5 × 10⁻³, naïve café, 中文 日本語 😀 e\u0301 Ω≥≤",
    "IL6 IL-6 p<0.05 1,000.5 ½ ² CD4+CD25+ [**Name**] ____",
    "foo<mask>bar  <s> x </s>",
    "",
    "   ",
    "'",
    "x'",
]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return fx.corpus_and_tokenizers(tmp_path_factory.mktemp("pack"), shards=2)


def reference_pack(docs, tok, seq_len, fraction):
    """The packing rule written plainly, one document and one token at a time."""
    streams = {"train": ([], []), "heldout": ([], [])}
    for doc_id, text in docs:
        enc = tok([text], add_special_tokens=False)
        ids, wids = enc["input_ids"][0], enc.word_ids(0)
        if not ids:
            continue
        flags = [packfmt.WORD_START if i == 0 or w != wids[i - 1] else packfmt.CONTINUATION for i, w in enumerate(wids)]
        toks, flgs = streams["heldout" if packfmt.is_heldout(doc_id, fraction) else "train"]
        toks += ids + [tok.sep_token_id]
        flgs += flags + [packfmt.SPECIAL]
    out = {}
    c = seq_len - 2
    for split, (toks, flgs) in streams.items():
        n = len(toks) // c
        blocks = [[tok.cls_token_id] + toks[i * c : (i + 1) * c] + [tok.sep_token_id] for i in range(n)]
        fblocks = [[packfmt.SPECIAL] + flgs[i * c : (i + 1) * c] + [packfmt.SPECIAL] for i in range(n)]
        out[split] = (np.array(blocks).reshape(n, seq_len), np.array(fblocks).reshape(n, seq_len))
    return out


@pytest.mark.parametrize("family", ["wordpiece", "bpe", "sentencepiece"])
def test_packed_shard_equals_the_per_token_reference(base, tmp_path, family):
    tok = AutoTokenizer.from_pretrained(base[family])
    texts = fx.documents(400, seed=3)
    texts[5], texts[9] = "", None  # empty documents add nothing, not even a separator
    shard = tmp_path / "shard~0.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}), shard)
    meta = pack_shard(shard, tok, 24, 0.2, tmp_path / "packed")
    expected = reference_pack([(f"d{i}", t or "") for i, t in enumerate(texts)], tok, 24, 0.2)
    for split in ("train", "heldout"):
        blocks = pdata.PackedBlocks(tmp_path / "packed", split)
        toks, flags = blocks.take(np.arange(len(blocks)))
        assert len(blocks) == meta["blocks"][split] == len(expected[split][0]) > 10
        assert np.array_equal(toks, expected[split][0]) and np.array_equal(flags, expected[split][1])


@pytest.mark.parametrize("family, continuation_mark", [("wordpiece", "##"), ("bpe", None), ("sentencepiece", None)])
def test_word_starts_by_word_ids_agree_with_spelling(base, family, continuation_mark):
    tok = AutoTokenizer.from_pretrained(base[family])
    encoder = Encoder(tok)
    enc = encoder.encode(["Cardiomyopathy with hepatotoxicity", "Nephrotoxicity in cardiomyocytes"])  # rare words
    by_spelling = word_flags(np.full(len(enc.ids), np.nan), enc.lengths, enc.ids, encoder.starts)
    assert np.array_equal(enc.flags, by_spelling)
    assert enc.flags.sum() == 6 and len(enc.ids) > 6  # six words, more pieces
    tokens = tok.convert_ids_to_tokens(enc.ids.tolist())
    starts = [t for t, f in zip(tokens, enc.flags, strict=True) if f == packfmt.WORD_START]
    if continuation_mark:
        assert not any(t.startswith(continuation_mark) for t in starts)
    elif family == "bpe":
        assert sum(t.startswith("Ġ") for t in starts) == 4  # all but the two document starts
    else:
        assert all(t.startswith("▁") for t in starts)


def test_blocks_wrap_separate_documents_and_shards_are_read_in_place(base, tmp_path):
    tok = AutoTokenizer.from_pretrained(base["bpe"])
    pack_corpora([base["corpus"]], tok, [32], 0.1, tmp_path)
    [index_file] = index_paths([base["corpus"]], [32], 0.1, tmp_path)
    index, dirs = read_index(index_file)
    assert [d.name for d in dirs] == ["shard~0", "shard~1"] and index["corpus"] == "corpus"
    train, held = pdata.PackedCorpus(dirs, "train"), pdata.PackedCorpus(dirs, "heldout")
    assert len(train) > 50 and 0 < len(held) < len(train) / 3
    toks, flags = train.take(np.arange(len(train)))
    assert (toks[:, 0] == tok.cls_token_id).all() and (toks[:, -1] == tok.sep_token_id).all()
    assert (toks[:, 1:-1] == tok.sep_token_id).sum() >= 250 * 0.85  # one separator per training document
    assert (((toks == tok.sep_token_id) | (toks == tok.cls_token_id)) == (flags == packfmt.SPECIAL)).all()
    # the index is the shards one after the other, in any order of reading
    parts = [pdata.PackedBlocks(d, "train") for d in dirs]
    whole = np.concatenate([p.take(np.arange(len(p)))[0] for p in parts])
    order = np.random.default_rng(0).permutation(len(train))
    assert np.array_equal(train.take(order)[0], whole[order])


def test_keys_follow_content_not_file_times(base, tmp_path):
    tok = AutoTokenizer.from_pretrained(base["wordpiece"])
    corpus = tmp_path / "corpus"
    shutil.copytree(base["corpus"], corpus)
    pack_corpora([corpus], tok, [32], 0.1, tmp_path / "a")
    [a] = index_paths([corpus], [32], 0.1, tmp_path / "a")
    meta = a.parent / "shard~0" / "meta.json"
    mtime = meta.stat().st_mtime_ns
    # the same bytes with new times (a rebuild, a restored backup): same keys, nothing repacked
    for shard in corpus.glob("shard~*.parquet"):
        shard.write_bytes(shard.read_bytes())
        os.utime(shard, (1, 1))
    pack_corpora([corpus], tok, [32], 0.1, tmp_path / "a")
    assert meta.stat().st_mtime_ns == mtime
    pack_corpora([corpus], tok, [32], 0.1, tmp_path / "b")
    [b] = index_paths([corpus], [32], 0.1, tmp_path / "b")
    keys = lambda p: [s["key"] for s in json.loads(p.read_text())["shards"]]  # noqa: E731
    assert keys(a) == keys(b)
    # one changed document changes its shard's key only
    table = pq.read_table(corpus / "shard~1.parquet").to_pylist()
    table[0]["text"] += " Aspirin."
    pq.write_table(pa.Table.from_pylist(table), corpus / "shard~1.parquet")
    pack_corpora([corpus], tok, [32], 0.1, tmp_path / "a")
    assert keys(a)[0] == keys(b)[0] and keys(a)[1] != keys(b)[1]


def test_bad_inputs_are_named(base, tmp_path):
    tok = AutoTokenizer.from_pretrained(base["wordpiece"])
    with pytest.raises(PipelineError, match="corpus directory not found"):
        pack_corpora([tmp_path / "nope"], tok, [32], 0.0, tmp_path / "d")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "shard~0.parquet").write_text("not parquet")
    with pytest.raises(PipelineError, match=r"shard~0\.parquet: not a readable parquet"):
        pack_corpora([tmp_path / "bad"], tok, [32], 0.0, tmp_path / "d")
    with pytest.raises(PipelineError, match="no meta.json; pack this shard first"):
        build_index("c", [tmp_path / "bad"], tmp_path / "index.json")


def test_pack_cli_records_the_shard_it_read(base, tmp_path):
    out = tmp_path / "seq~32" / "shard~0"
    shard = base["corpus"] / "shard~0.parquet"
    pack_cli.main(
        [
            "--shard",
            str(shard),
            "--tokenizer",
            str(base["bpe"]),
            "--seq-len",
            "32",
            "--heldout-fraction",
            "0.1",
            "--threads",
            "2",
            "--out",
            str(out),
        ]
    )
    prov = json.loads((out / "provenance.json").read_text())
    meta = json.loads((out / "meta.json").read_text())
    assert prov["step"] == "pack" and prov["inputs"]["shard"]["sha256"] == meta["shard"]["sha256"]
    written = {o["path"].rsplit("/", 1)[-1] for o in prov["outputs"]}
    assert written >= {"meta.json", "train.tokens.bin", "heldout.flags.bin"}
    assert prov["key"] == meta["key"] and meta["blocks"]["train"] > 0


def test_models_share_packs_and_continual_models_pack_with_their_checkpoints_tokenizer():
    root = Path(__file__).resolve().parents[2]
    study = load_config(yaml.safe_load((root / "config.yaml").read_text()), root / "schemas/config.schema.yaml")
    assert plan.model_tokenizer(study, "ours-base-pm-voc") == ("vocab~pm-bpe50k", "results/vocab/pm-bpe50k")
    # continual pretraining from an external checkpoint: that checkpoint's tokenizer, in its snapshot,
    # whose download job the pack jobs wait for
    assert plan.model_tokenizer(study, "ours-base-pm") == ("model~roberta-base", "results/raw/models/roberta-base")
    assert plan.pack_tokenizer_marker(study, "model~roberta-base") == [
        "results/raw/models/roberta-base/provenance.json"
    ]
    # continuing a model built here, or distilling from it: the vocabulary it was built with
    assert plan.model_tokenizer(study, "ours-base-train-longer")[0] == "vocab~pm-m3-bpe50k"
    assert plan.model_tokenizer(study, "distil-pubmedbert")[0] == "vocab~pm-wordpiece30k-uncased"
    teacher, students = plan.model_packed(study, "pubmedbert-ours"), plan.model_packed(study, "tiny-pubmedbert")
    assert teacher[0] == "results/packed/vocab~pm-wordpiece30k-uncased/pubmed/seq~128/heldout~0.01/index.json"
    assert set(students) <= set(teacher)  # the students open the teacher's packs
    assert plan.model_packed(study, "ours-base-pm-m3") == [
        f"results/packed/model~roberta-base/{c}/seq~512/heldout~0.01/index.json" for c in ("pubmed", "pmc", "mimic")
    ]


def _word_id_flags(tok, texts):
    """WORD_START/CONTINUATION by the tokenizer's word ids, document by document: the pack format's definition."""
    flags = []
    for text in texts:
        words = tok([text], add_special_tokens=False).word_ids(0)
        flags += [
            packfmt.WORD_START if i == 0 or w != words[i - 1] else packfmt.CONTINUATION for i, w in enumerate(words)
        ]
    return np.array(flags, dtype=np.uint8)


def _texts(source):
    if source == "real":
        if REAL is None:
            pytest.skip("REAL_DATA_DIR is not set")
        records = iter_medline(REAL / "medline" / "medline16n0902.xml.gz")
        return [document_text(c) for c in records if isinstance(c, Citation)]
    records = iter_medline(ROOT / "demo/raw_source/pubmed/baseline/pubmed26n0001.xml.gz")
    notes = pd.read_csv(ROOT / "demo/raw_source/mimic/NOTEEVENTS.csv.gz")["TEXT"].tolist()
    return [document_text(c) for c in records if isinstance(c, Citation)] + notes


@pytest.mark.parametrize("source", ["demo", "real"])
@pytest.mark.parametrize("vocab_size", [300, 3000])
def test_byte_level_word_starts_from_ids_equal_the_word_ids(tmp_path, source, vocab_size):
    texts = _texts(source) + TRICKY
    tok = AutoTokenizer.from_pretrained(fx.make_bpe(tmp_path / "bpe", texts, vocab_size))
    encoder = Encoder(tok)
    assert encoder.pieces is not None
    expected = _word_id_flags(tok, texts)
    enc = encoder.encode(texts)
    assert np.array_equal(enc.flags, expected)
    # the rule alone, before the documents it leaves undecided are encoded again with word ids
    starts, undecided = encoder.pieces.boundaries(enc.ids, _doc_starts(enc.lengths, len(enc.ids)))
    doc_of = np.repeat(np.arange(len(texts)), enc.lengths)
    redone = np.unique(doc_of[undecided])
    decided = ~np.isin(doc_of, redone)
    assert np.array_equal(starts[decided], expected[decided] == packfmt.WORD_START)
    assert len(redone) < 0.15 * len(texts)
    # a vocabulary too small to hold "'s" leaves contractions undecided: those documents take the word ids
    assert len(redone) > 0 or vocab_size > 300


@pytest.mark.parametrize("source", ["demo", "real"])
def test_wordpiece_word_starts_by_spelling_equal_the_word_ids(tmp_path, source):
    texts = _texts(source) + TRICKY
    tok = AutoTokenizer.from_pretrained(fx.make_wordpiece(tmp_path / "wp", texts, 2000))
    enc = Encoder(tok).encode(texts)
    assert np.array_equal(enc.flags, _word_id_flags(tok, texts))

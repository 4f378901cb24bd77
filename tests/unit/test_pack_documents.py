"""packing: documents in the pack stage: every document wrapped on its own, each block's document starts
stored with the blocks and checked, the mode in the content key and the path, one packing per mode."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pretrain_fixtures as fx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from transformers import AutoTokenizer

from workflow_scripts.config import plan
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError
from workflow_scripts.integrity import IntegrityError
from workflow_scripts.pack import format as packfmt
from workflow_scripts.pack import pack as pack_cli
from workflow_scripts.pack.index import build_index
from workflow_scripts.pack.keys import pack_key
from workflow_scripts.pack.pack import pack_shard
from workflow_scripts.pretrain import data as pdata
from workflow_scripts.pretrain.engine import load_phases
from workflow_scripts.pretrain.settings import Phase, PretrainSettings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """A shard of documents of every length (some longer than a block, two empty) packed both ways."""
    root = tmp_path_factory.mktemp("docpack")
    texts = fx.documents(120, seed=5)
    texts[3], texts[7] = "", " ".join(fx.sentences(20, seed=9))  # nothing, and a document of several blocks
    shard = root / "shard~0.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}), shard)
    vocab = fx.make_wordpiece(root / "wp", texts)
    tok = AutoTokenizer.from_pretrained(vocab)
    args = ["--shard", str(shard), "--tokenizer", str(vocab), "--seq-len", "24", "--heldout-fraction", "0.2"]
    pack_cli.main([*args, "--packing", "documents", "--out", str(root / "documents")])  # as the pack rule runs it
    metas = {
        "concatenate": pack_shard(shard, tok, 24, 0.2, root / "concatenate"),
        "documents": json.loads((root / "documents" / "meta.json").read_text()),
    }
    return {"root": root, "texts": texts, "tok": tok, "metas": metas}


def reference_stream(texts, tok, fraction, split):
    """The documents of one split as [CLS] tokens [SEP] one after another, with their word-start flags."""
    ids, flags = [], []
    for i, text in enumerate(texts):
        enc = tok([text], add_special_tokens=False)
        held = packfmt.is_heldout(f"d{i}", fraction)
        if not enc["input_ids"][0] or held != (split == "heldout"):
            continue
        words = enc.word_ids(0)
        ids += [tok.cls_token_id, *enc["input_ids"][0], tok.sep_token_id]
        flags += [packfmt.SPECIAL]
        flags += [
            packfmt.WORD_START if k == 0 or w != words[k - 1] else packfmt.CONTINUATION for k, w in enumerate(words)
        ]
        flags += [packfmt.SPECIAL]
    return np.array(ids), np.array(flags)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_blocks_hold_each_document_wrapped_and_positions_restart_at_each_one(packed, split):
    blocks = pdata.PackedBlocks(packed["root"] / "documents", split)
    n = len(blocks)
    toks, flags = blocks.take(np.arange(n))
    positions = blocks.positions(np.arange(n))
    ids, ref_flags = reference_stream(packed["texts"], packed["tok"], 0.2, split)
    assert n == len(ids) // 24 > 3
    # the blocks are the stream of wrapped documents cut every 24 tokens; word starts as concatenate has them
    assert np.array_equal(toks.reshape(-1), ids[: n * 24]) and np.array_equal(flags.reshape(-1), ref_flags[: n * 24])
    # a position restarts at every [CLS] (a document's first token) and at each block's start, nowhere else
    restarts = positions == 0
    assert np.array_equal(restarts[:, 1:], toks[:, 1:] == packed["tok"].cls_token_id)
    assert restarts[:, 0].all() and (np.diff(positions, axis=1)[~restarts[:, 1:]] == 1).all()
    # the document several blocks long runs on into the next block, counted from 0 again there
    assert (positions.max(axis=1) == 23).any()


def test_the_meta_names_the_mode_and_concatenate_keeps_its_format(packed):
    docs, concat = packed["metas"]["documents"], packed["metas"]["concatenate"]
    assert docs["packing"] == "documents" and docs["version"] == "pack_v3"
    assert "packing" not in concat and concat["version"] == "pack_v2"
    assert set(docs["sha256"]) == {
        f"{s}.{f}.bin" for s in ("train", "heldout") for f in ("tokens", "flags", "starts", "starts_index")
    }
    assert set(concat["sha256"]) == {f"{s}.{f}.bin" for s in ("train", "heldout") for f in ("tokens", "flags")}
    assert docs["key"] != concat["key"]
    # concatenate's key is the one it had before packing modes: packed data of earlier runs still resumes
    assert concat["key"] == pack_key(concat["shard"]["sha256"], concat["tokenizer"], 24, 0.2)
    assert pdata.PackedCorpus([packed["root"] / "concatenate"], "train").positions(np.arange(3)) is None


def test_damaged_document_starts_are_refused(packed, tmp_path):
    copy_dir = tmp_path / "shard~0"
    copy_dir.mkdir()
    for f in (packed["root"] / "documents").iterdir():
        copy_dir.joinpath(f.name).write_bytes(f.read_bytes())
    starts = copy_dir / "train.starts.bin"
    data = bytearray(starts.read_bytes())
    data[4] ^= 1
    starts.write_bytes(bytes(data))
    # the message says how to pack it again, in its mode
    with pytest.raises(IntegrityError, match="train.starts.bin: changed since it was packed.*--packing documents"):
        pdata.PackedBlocks(copy_dir, "train")


def test_a_model_refuses_blocks_packed_the_other_way(packed, tmp_path):
    index = build_index("c", [packed["root"] / "concatenate"], tmp_path / "index.json")
    assert "packing" not in index
    settings = PretrainSettings(phases=[Phase(24, 1.0)], heldout_fraction=0.2, packing="documents")
    with pytest.raises(PipelineError, match="packed with packing concatenate, the settings say documents"):
        load_phases(settings, [tmp_path / "index.json"], packed["tok"])


def test_the_packing_mode_is_in_the_packed_path_and_documents_models_share_one():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    base = config["models"]["ours-base-pm-voc"]
    for name, seed in (("docs-a", 1), ("docs-b", 2)):
        config["models"][name] = {**copy.deepcopy(base), "display": name, "published": {}}
        config["models"][name]["pretrain"] = {**base["pretrain"], "packing": "documents", "seed": seed}
    study = load_config(config, ROOT / "schemas/config.schema.yaml")
    a, b, concat = (plan.model_packed(study, m) for m in ("docs-a", "docs-b", "ours-base-pm-voc"))
    assert a == b  # one packing job per shard for both
    assert a == [p.replace("/seq~", "/packing~documents/seq~") for p in concat] != concat
    assert json.dumps(concat).count("packing~") == 0  # concatenate keeps the paths it always had
    assert plan.packing_args("packing~documents/") == " --packing documents" and plan.packing_args("") == ""

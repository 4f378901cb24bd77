"""Vocabulary learning: every algorithm and family reloads with AutoTokenizer, runs repeat exactly,
and a corpus too small for the vocabulary stops with a clear error."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from transformers import AutoTokenizer

from workflow_scripts.errors import PipelineError
from workflow_scripts.vocab import sample as vsample
from workflow_scripts.vocab import train_vocab as vtrain

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]


def _lexicon():
    spec = importlib.util.spec_from_file_location("demo_lexicon", ROOT / "demo/generator/lexicon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def biomedical_docs(n: int, seed: int = 1) -> list[str]:
    lx, rng = _lexicon(), random.Random(seed)

    def sentence() -> str:
        return rng.choice(
            [
                f"Patients with {rng.choice(lx.DISEASES)} received {rng.choice(lx.CHEMICALS)} and showed "
                f"{rng.choice(lx.VERBS_DECREASE)} {rng.choice(lx.OUTCOMES)}.",
                f"Expression of {rng.choice(lx.GENES)} in {rng.choice(lx.CELLS)} from {rng.choice(lx.SPECIES)} was "
                f"{rng.choice(lx.VERBS_INCREASE)}.",
                f"We enrolled {rng.randint(10, 999)} {rng.choice(lx.POPULATIONS)} with {rng.choice(lx.DISEASES)}.",
            ]
        )

    return [" ".join(sentence() for _ in range(4)) for _ in range(n)]


def write_corpus(path: Path, docs: list[str], shards: int = 2) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    per = -(-len(docs) // shards) if docs else 0
    for n in range(shards):
        part = docs[n * per : (n + 1) * per]
        table = pa.table(
            {
                "id": pa.array([f"doc{n}-{i}" for i in range(len(part))], pa.string()),
                "source": pa.array(["pubmed"] * len(part), pa.string()),
                "text": pa.array(part, pa.string()),
            }
        )
        pq.write_table(table, path / f"shard~{n}.parquet")
    (path / "stats.json").write_text(json.dumps({"documents": len(docs)}))
    return path


def write_settings(path: Path, name: str, **train) -> Path:
    train = {"size": 400, "min_frequency": 1, **train}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"vocab": {"name": name, "train": train}}))
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "pubmed", biomedical_docs(300))


def learn(tmp: Path, corpus: Path, name: str = "v", **train) -> Path:
    out = tmp / "vocab" / name
    vtrain.main(
        [
            "--settings",
            str(write_settings(tmp / f"{name}.yaml", name, **train)),
            "--corpus",
            str(corpus),
            "--out",
            str(out),
        ]
    )
    return out


BERT = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}
ROBERTA = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>", "mask_token": "<mask>"}


@pytest.mark.parametrize(
    "algorithm,family,lowercase,cls_name",
    [
        ("bpe", "roberta", False, "RobertaTokenizer"),
        ("wordpiece", "bert", True, "BertTokenizer"),
        ("wordpiece", "bert", False, "BertTokenizer"),
        ("sentencepiece_unigram", "bert", True, "TokenizersBackend"),
        ("sentencepiece_bpe", "roberta", False, "TokenizersBackend"),
        ("bpe", "bert", True, "TokenizersBackend"),
    ],
)
def test_vocabulary_reloads_with_family_special_tokens(tmp_path, corpus, algorithm, family, lowercase, cls_name):
    out = learn(tmp_path, corpus, algorithm=algorithm, family=family, lowercase=lowercase)
    assert (out / "tokenizer_config.json").is_file()
    tok = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert type(tok).__name__ == cls_name
    specials = BERT if family == "bert" else ROBERTA
    for attr, token in specials.items():
        assert getattr(tok, attr) == token
    assert [tok.convert_tokens_to_ids(t) for t in specials.values()] == [0, 1, 2, 3, 4]
    assert len(tok) == 400

    text = "Patients with asthma received metformin"
    ids = tok(text)["input_ids"]
    first, last = (specials["cls_token"], specials["sep_token"]) if family == "bert" else ("<s>", "</s>")
    assert tok.convert_ids_to_tokens([ids[0], ids[-1]]) == [first, last]
    assert tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True) == (text.lower() if lowercase else text)

    record = json.loads((out / "provenance.json").read_text())
    assert record["params"]["sample"]["documents_sampled"] == 300
    assert [s["path"] for s in record["params"]["sample"]["shards"]] == [
        str(corpus / "shard~0.parquet"),
        str(corpus / "shard~1.parquet"),
    ]
    assert {o["path"].rsplit("/", 1)[1] for o in record["outputs"]} >= {"tokenizer.json", "tokenizer_config.json"}
    if algorithm.startswith("sentencepiece"):
        # the converted fast tokenizer segments the sample exactly as SentencePiece does
        assert record["vocab"]["sentencepiece_agreement"] == 1.0
        assert (out / "sentencepiece.model").is_file()


def test_frequent_corpus_words_are_whole_and_unseen_ones_split(tmp_path, corpus):
    tok = AutoTokenizer.from_pretrained(str(learn(tmp_path, corpus, algorithm="wordpiece", size=500)))
    pieces = tok.tokenize("Patients received zygomorphic")
    assert pieces[:2] == ["patients", "received"]
    assert len(pieces) > 3 and all(p.startswith("##") for p in pieces[3:])


@pytest.mark.parametrize("algorithm", ["bpe", "wordpiece", "sentencepiece_unigram", "sentencepiece_bpe"])
def test_same_seed_gives_identical_files(tmp_path, corpus, algorithm):
    family = "roberta" if algorithm == "bpe" else "bert"
    a = learn(tmp_path / "a", corpus, algorithm=algorithm, family=family, sample_documents=200, seed=7)
    b = learn(tmp_path / "b", corpus, algorithm=algorithm, family=family, sample_documents=200, seed=7)
    files = sorted(p.name for p in a.iterdir() if p.name != "provenance.json")
    assert files == sorted(p.name for p in b.iterdir() if p.name != "provenance.json")
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_sample_is_seeded_bounded_and_drawn_from_all_shards(corpus):
    a = vsample.plan_sample([corpus], "v", 50, seed=3)
    texts = list(vsample.iter_texts(a))
    assert len(texts) == 50 == a.size and a.available == 300
    assert list(vsample.iter_texts(vsample.plan_sample([corpus], "v", 50, seed=3))) == texts
    assert list(vsample.iter_texts(vsample.plan_sample([corpus], "v", 50, seed=4))) != texts
    assert a.rows.min() < 150 <= a.rows.max()  # both shards contribute
    every = biomedical_docs(300)
    assert set(texts) <= set(every)
    assert list(vsample.iter_texts(vsample.plan_sample([corpus], "v", None, seed=0))) == every


def test_several_corpora_are_learned_together(tmp_path, corpus):
    other = write_corpus(tmp_path / "pmc", biomedical_docs(40, seed=2), shards=1)
    out = tmp_path / "vocab" / "mixed"
    vtrain.main(
        [
            "--settings",
            str(write_settings(tmp_path / "m.yaml", "mixed")),
            "--corpus",
            str(corpus),
            "--corpus",
            str(other),
            "--out",
            str(out),
        ]
    )
    record = json.loads((out / "provenance.json").read_text())
    assert [i["path"] for i in record["inputs"]["corpus"]] == [str(corpus), str(other)]
    assert record["params"]["sample"]["documents_sampled"] == 340


def test_too_small_corpus_names_vocabulary_and_corpus(tmp_path):
    small = write_corpus(tmp_path / "tiny_corpus", ["the cat sat on the mat"] * 20)
    with pytest.raises(PipelineError, match=r"vocabulary 'tiny'.*tiny_corpus.*only 5 distinct words.*400"):
        learn(tmp_path, small, name="tiny")
    assert not (tmp_path / "vocab" / "tiny").exists()


def test_empty_or_missing_corpus_stops_clearly(tmp_path):
    empty = write_corpus(tmp_path / "empty_corpus", [], shards=1)
    with pytest.raises(PipelineError, match=r"vocabulary 'v'.*empty_corpus.*no documents"):
        learn(tmp_path, empty)
    with pytest.raises(PipelineError, match=r"corpus directory .*absent does not exist"):
        learn(tmp_path, tmp_path / "absent")


def test_unknown_setting_names_the_key(tmp_path, corpus):
    with pytest.raises(PipelineError, match=r"vocab\.train: unknown key 'vocab_size'"):
        learn(tmp_path, corpus, vocab_size=10)


def test_cli_reports_error_in_one_line(tmp_path):
    small = write_corpus(tmp_path / "tiny_corpus", ["a b c"] * 3)
    settings = write_settings(tmp_path / "s.yaml", "tiny")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.vocab.train_vocab",
            "--settings",
            str(settings),
            "--corpus",
            str(small),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: vocabulary 'tiny': corpus")

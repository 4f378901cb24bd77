"""Vocabulary diagnostics: fragmentation, term coverage and overlap on hand-checked tokenizers, the
CLI end to end, and the papers' finding that a domain vocabulary fragments entity names less."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, BertTokenizer

from workflow_scripts.errors import PipelineError
from workflow_scripts.vocab import bpe_wordpiece, metrics
from workflow_scripts.vocab import vocab_diagnostics as diagnostics
from workflow_scripts.vocab.save import wrap
from workflow_scripts.vocab.settings import VocabSettings

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hand_tokenizer(words: list[str]) -> BertTokenizer:
    return BertTokenizer(vocab={w: i for i, w in enumerate(SPECIALS + words)})


NER_ROWS = [
    {"id": "1", "tokens": ["the", "patient", "has", "hypertension"], "tags": ["O", "O", "O", "B-Disease"]},
    {"id": "2", "tokens": ["hypertension", "and", "asthma"], "tags": ["B-Disease", "O", "B-Disease"]},
]


def test_fragmentation_counts_subtokens_per_word_occurrence():
    tok = hand_tokenizer(["the", "patient", "has", "and", "hyper", "##tension", "asthma", "as", "##th", "##ma"])
    words, entities = metrics.ner_words(NER_ROWS)
    assert entities == ["hypertension", "hypertension", "asthma"]
    # the patient has hyper+tension hyper+tension and asthma -> 9 pieces for 7 words
    assert metrics.fragmentation(tok, words) == {"tokens_per_word": 9 / 7, "whole_words": 5 / 7, "words": 7}
    assert metrics.fragmentation(tok, entities) == {"tokens_per_word": 5 / 3, "whole_words": 1 / 3, "words": 3}
    assert metrics.fragmentation(tok, [])["tokens_per_word"] is None


def test_term_coverage_counts_single_known_tokens_only():
    tok = hand_tokenizer(["asthma", "hyper", "##tension"])
    coverage, pieces = metrics.term_coverage(tok, ["asthma", "hypertension", "zzz"])
    assert pieces == {"asthma": 1, "hypertension": 2, "zzz": 1}  # zzz is one [UNK]
    assert coverage == pytest.approx(1 / 3)


def test_overlap_compares_strings_without_boundary_markers():
    a = hand_tokenizer(["asthma", "##tension", "lung"])
    b = hand_tokenizer(["asthma", "tension", "heart"])
    vocabs = {"a": metrics.surface_vocab(a), "b": metrics.surface_vocab(b)}
    assert vocabs["a"] == {"asthma", "tension", "lung"}
    assert metrics.overlap(vocabs) == [{"a": "a", "b": "b", "shared": 2, "jaccard": 0.5}]


def test_task_reading_skips_other_task_types_and_names_bad_lines(tmp_path):
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "train.jsonl").write_text(json.dumps({"id": "1", "text": "x", "label": "y"}) + "\n")
    assert diagnostics.read_ner(tmp_path / "cls") is None
    (tmp_path / "ner").mkdir()
    (tmp_path / "ner" / "train.jsonl").write_text(json.dumps(NER_ROWS[0]) + "\n{broken\n")
    with pytest.raises(PipelineError, match=r"ner/train.jsonl:2: not valid JSON"):
        diagnostics.read_ner(tmp_path / "ner")
    with pytest.raises(PipelineError, match=r"absent: no train.jsonl"):
        diagnostics.read_ner(tmp_path / "absent")


def test_shipped_term_list_includes_pubmedbert_table1():
    terms = diagnostics.load_terms(diagnostics.DEFAULT_TERMS)
    table1 = [
        "diabetes",
        "leukemia",
        "lithium",
        "insulin",
        "DNA",
        "promoter",
        "hypertension",
        "nephropathy",
        "lymphoma",
        "lidocaine",
        "oropharyngeal",
        "cardiomyocyte",
        "chloramphenicol",
        "RecA",
        "acetyltransferase",
        "clonidine",
        "naloxone",
    ]
    assert terms[:17] == table1
    assert len(terms) >= 300 and len(set(terms)) == len(terms)
    assert all(" " not in t for t in terms)


def biomedical_docs(n: int) -> list[str]:
    lx, rng = _load("demo_lexicon", ROOT / "demo/generator/lexicon.py"), random.Random(5)
    return [
        " ".join(
            rng.choice(
                [
                    f"Patients with {rng.choice(lx.DISEASES)} received {rng.choice(lx.CHEMICALS)}.",
                    f"Treatment with {rng.choice(lx.CHEMICALS)} {rng.choice(lx.VERBS_DECREASE)} {rng.choice(lx.GENES)} "
                    f"expression in {rng.choice(lx.CELLS)} of patients with {rng.choice(lx.DISEASES)}.",
                    f"We enrolled {rng.randint(10, 999)} {rng.choice(lx.POPULATIONS)} in the "
                    f"{rng.choice(lx.ORGANS)} study.",
                ]
            )
            for _ in range(6)
        )
        for _ in range(n)
    ]


def ner_rows(n: int) -> list[dict]:
    lx, rng = _load("demo_lexicon", ROOT / "demo/generator/lexicon.py"), random.Random(9)
    rows = []
    for i in range(n):
        disease, chemical = rng.choice(lx.DISEASES).split(), rng.choice(lx.CHEMICALS).split()
        tokens = ["Patients", "with", *disease, "were", "given", *chemical, "."]
        tags = (
            ["O", "O"]
            + ["B-Disease"]
            + ["I-Disease"] * (len(disease) - 1)
            + ["O", "O"]
            + ["B-Chemical"]
            + ["I-Chemical"] * (len(chemical) - 1)
            + ["O"]
        )
        rows.append({"id": str(i), "tokens": tokens, "tags": tags})
    return rows


def save_vocab(directory: Path, docs: list[str], size: int) -> Path:
    settings = VocabSettings(algorithm="wordpiece", size=size, min_frequency=1)
    wrap(bpe_wordpiece.train(settings, lambda: iter(docs)), settings).save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="module")
def vocab_pair(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("vocabs")
    general = _load("demo_general_english", ROOT / "demo/generator/general_english.py")
    return save_vocab(root / "domain", biomedical_docs(300), 600), save_vocab(
        root / "general", general.documents(250), 600
    )


def test_diagnostics_cli_domain_vocab_fragments_entities_less(tmp_path, vocab_pair):
    domain, general = vocab_pair
    ner, cls = tmp_path / "tasks" / "demo_ner", tmp_path / "tasks" / "demo_cls"
    ner.mkdir(parents=True)
    cls.mkdir(parents=True)
    (ner / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ner_rows(80)))
    (cls / "train.jsonl").write_text(json.dumps({"id": "1", "text": "x", "label": "y"}) + "\n")
    out = tmp_path / "diagnostics.json"
    diagnostics.main(
        [
            "--vocab",
            str(domain),
            "--name",
            "bio",
            "--task-dir",
            str(ner),
            "--task-dir",
            str(cls),
            "--compare",
            f"general={general}",
            "--out",
            str(out),
        ]
    )
    result = json.loads(out.read_text())
    assert result["vocab"] == "bio" and result["tasks"] == ["demo_ner"]
    bio, gen = result["tokenizers"]["bio"], result["tokenizers"]["general"]
    assert bio["size"] == gen["size"] == 600
    assert bio["fragmentation"]["demo_ner"]["entity_words"] < gen["fragmentation"]["demo_ner"]["entity_words"]
    assert bio["fragmentation"]["demo_ner"]["entity_whole"] > gen["fragmentation"]["demo_ner"]["entity_whole"]
    assert bio["term_coverage"] > gen["term_coverage"]
    assert result["term_pieces"]["hypertension"]["bio"] == 1 < result["term_pieces"]["hypertension"]["general"]
    (row,) = result["overlap"]
    assert (row["a"], row["b"]) == ("bio", "general") and 0 < row["jaccard"] < 1
    assert (tmp_path / "diagnostics.json.provenance.json").is_file()


def test_compare_needs_a_loadable_tokenizer(tmp_path, vocab_pair):
    domain, _ = vocab_pair
    with pytest.raises(PipelineError, match=r"--compare 'general': expected NAME=PATH"):
        diagnostics.main(
            ["--vocab", str(domain), "--name", "bio", "--compare", "general", "--out", str(tmp_path / "d.json")]
        )
    empty = tmp_path / "not_a_tokenizer"
    empty.mkdir()
    with pytest.raises(PipelineError, match=r"tokenizer 'general': cannot load"):
        diagnostics.main(
            [
                "--vocab",
                str(domain),
                "--name",
                "bio",
                "--compare",
                f"general={empty}",
                "--out",
                str(tmp_path / "d.json"),
            ]
        )
    assert not (tmp_path / "d.json").exists()


def test_domain_vocab_keeps_disease_names_whole(vocab_pair):
    domain, _ = vocab_pair
    tok = AutoTokenizer.from_pretrained(str(domain))
    assert tok.tokenize("Patients with hypertension") == ["patients", "with", "hypertension"]

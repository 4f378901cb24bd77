"""Language guess, sentence splitting, exact and near deduplication, decontamination index, settings."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import yaml

from workflow_scripts.corpus.decontam import NgramIndex
from workflow_scripts.corpus.dedup import ExactDedup, MinHasher, find_near_duplicates, lsh_params
from workflow_scripts.corpus.settings import load
from workflow_scripts.corpus.text import detect_language, split_sentences, word_tokens
from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.prepare_task import TEST_TEXTS, split_texts

ENGLISH = "The patients were treated with aspirin and the outcome of the trial was recorded in this cohort."
FRENCH = "Les patients ont été traités par aspirine et les résultats de l'étude sont présentés dans cet article."
GERMAN = "Die Patienten wurden mit Aspirin behandelt und die Ergebnisse der Studie sind in der Tabelle."
SPANISH = "Los pacientes fueron tratados con aspirina y los resultados del estudio se presentan en la tabla."


@pytest.mark.parametrize(
    "text,lang",
    [(ENGLISH, "en"), (FRENCH, "fr"), (GERMAN, "de"), (SPANISH, "es"), ("Sinus rhythm. Normal ECG.", "und")],
)
def test_detect_language(text, lang):
    assert detect_language(text) == lang


def test_sentence_split_respects_abbreviations_and_lines():
    text = (
        "Dose was 5 mg, e.g. in adults. Smith et al. reported it. See Fig. 2 for details.\n"
        "METHODS: We ran it. It worked!"
    )
    assert split_sentences(text).split("\n") == [
        "Dose was 5 mg, e.g. in adults.",
        "Smith et al. reported it.",
        "See Fig. 2 for details.",
        "METHODS: We ran it.",
        "It worked!",
    ]


def test_exact_dedup_ignores_case_and_spacing():
    d = ExactDedup()
    assert not d.is_duplicate("Aspirin lowers  blood pressure.")
    assert d.is_duplicate("aspirin lowers blood\npressure.")
    assert not d.is_duplicate("Aspirin raises blood pressure.")


def _doc(rng: random.Random, n: int = 120) -> str:
    vocab = [f"w{i}" for i in range(3000)]
    return " ".join(rng.choice(vocab) for _ in range(n))


def test_minhash_finds_near_duplicates_only():
    rng = random.Random(0)
    docs = [_doc(rng) for _ in range(50)]
    one_word = docs[7].split()
    one_word[60] = "changed"
    half = docs[9].split()[:60] + _doc(rng, 60).split()
    docs += [" ".join(one_word), " ".join(half), _doc(rng)]  # Jaccard ~0.92, ~0.33, ~0
    hasher = MinHasher(num_perm=128, shingle=5, seed=1)
    sigs = np.stack([hasher.signature(d) for d in docs])
    assert np.flatnonzero(find_near_duplicates(sigs, threshold=0.8)).tolist() == [50]
    # the earlier copy is kept whichever way round they come
    assert np.flatnonzero(find_near_duplicates(sigs[[50, 7]], threshold=0.8)).tolist() == [1]


def test_minhash_is_deterministic_for_a_seed():
    assert (MinHasher(seed=3).signature(ENGLISH) == MinHasher(seed=3).signature(ENGLISH)).all()
    assert not (MinHasher(seed=3).signature(ENGLISH) == MinHasher(seed=4).signature(ENGLISH)).all()


def test_lsh_params_put_the_curve_near_the_threshold():
    b, r = lsh_params(0.8, 128)
    assert b * r <= 128 and abs((1 / b) ** (1 / r) - 0.8) < 0.05


def _task(tmp_path, name, rows, fold=False):
    """A prepared task's test texts, as task preparation writes them."""
    d = tmp_path / name
    d.mkdir(parents=True)
    path = d / TEST_TEXTS
    path.write_text("".join(json.dumps(r) + "\n" for r in split_texts(rows, "fold~0/" if fold else "")))
    return path


def test_decontamination_index_matches_test_texts(tmp_path):
    ner = _task(
        tmp_path,
        "bc5cdr",
        [
            {
                "id": "1",
                "tokens": "Cisplatin induced nephropathy in patients with "
                "lung adenocarcinoma treated at two centres".split(),
                "tags": [],
            }
        ],
    )
    qa = _task(
        tmp_path,
        "pubmedqa",
        [
            {
                "id": "q",
                "question": "Does aspirin work?",
                "context": "Aspirin reduced the risk of stroke in elderly patients with "
                "atrial fibrillation in a large randomised trial.",
                "label": "yes",
            }
        ],
        fold=True,
    )
    idx = NgramIndex(ngram=5, threshold=0.5, min_words=8)
    assert idx.add_task(ner) == 1 and idx.add_task(qa) == 1
    assert idx.skipped_short == 1  # the short question
    doc = "Background. Cisplatin-induced nephropathy in patients with lung adenocarcinoma treated at two centres."
    assert idx.match(doc) == "bc5cdr"
    assert (
        idx.match(
            "In a large randomised trial, aspirin reduced the risk of stroke in elderly patients "
            "with atrial fibrillation."
        )
        == "pubmedqa"
    )
    assert idx.match("Aspirin reduced the risk of stroke in elderly patients.") is None  # under half
    assert word_tokens("Cisplatin-induced (CDDP)") == ["cisplatin", "induced", "cddp"]


def test_task_without_test_texts_is_an_error(tmp_path):
    with pytest.raises(PipelineError, match="no test texts to decontaminate against"):
        NgramIndex(ngram=5, threshold=0.5).add_task(tmp_path / "t" / TEST_TEXTS)
    (tmp_path / TEST_TEXTS).write_text(json.dumps({"id": "1", "tokens": ["a"]}) + "\n")
    with pytest.raises(PipelineError, match=r"test_texts\.jsonl:1: expected a record with a list 'texts'"):
        NgramIndex(ngram=5, threshold=0.5).add_task(tmp_path / TEST_TEXTS)


def test_settings_errors_name_the_key(tmp_path):
    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump({"corpus": {"name": "pubmed", "type": "pubmed", "clean": {"min_wrds": 3}}}))
    with pytest.raises(PipelineError, match=r"s\.yaml:corpus\.clean: unknown key 'min_wrds'"):
        load(s)
    s.write_text(yaml.safe_dump({"corpus": {"name": "pmc", "type": "pmc", "clean": {"pmc": {"licence": "cc"}}}}))
    with pytest.raises(PipelineError, match=r"s\.yaml:corpus\.clean\.pmc\.licence"):
        load(s)
    s.write_text(yaml.safe_dump({"corpus": {"name": "x", "type": "pubmed", "shards": 0}}))
    with pytest.raises(PipelineError, match=r"shards: must be >= 1"):
        load(s)

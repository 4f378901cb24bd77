"""Every reader and ``prepare`` on real public release files, when REAL_DATA_DIR points at a
folder laid out as shared/real-data (``tasks/<task>/...`` and ``tasks/MANIFEST.json``).

The counts we compare with are taken from the files by other means (the csv module, pandas,
json), never by our readers. Files cut to a prefix (MANIFEST ``complete: false``) are read and
counted, but the registry's counts for them are not applied.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import pandas as pd
import pytest
import text_variations

from workflow_scripts.tasks.prepare_task import prepare
from workflow_scripts.tasks.readers import get_reader
from workflow_scripts.tasks.registry import deep_merge, load_registry
from workflow_scripts.tasks.spec import TaskSpec
from workflow_scripts.typed import parse

REAL = Path(os.environ.get("REAL_DATA_DIR") or "/nonexistent") / "tasks"
HAVE = bool(os.environ.get("REAL_DATA_DIR")) and (REAL / "MANIFEST.json").is_file()
pytestmark = pytest.mark.skipif(not HAVE, reason="REAL_DATA_DIR is not set to a folder with tasks/MANIFEST.json")
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["tasks"] if HAVE else {}


def needs(task: str) -> None:
    """Skip a check whose task the folder does not hold (a user's own downloads may be fewer)."""
    if task not in MANIFEST:
        pytest.skip(f"{task} is not in {REAL / 'MANIFEST.json'}")


def spec_of(task: str, overrides: dict | None = None) -> TaskSpec:
    entry = deep_merge(load_registry()[task], overrides or {})
    return parse(TaskSpec, dict(entry, name=task), f"tasks.{task}")


def complete(task: str, file: str) -> bool:
    return MANIFEST[task]["files"][file]["complete"]


def conll_counts(path: Path) -> tuple[int, int]:
    """(sentences, mentions) of a token<TAB>tag file: runs of non-blank lines, and B- tags."""
    sentences = mentions = 0
    inside = False
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            if not row or not "".join(row).strip() or row[0].startswith("-DOCSTART-"):
                inside = False
                continue
            sentences += not inside
            inside = True
            mentions += row[-1].startswith("B")
    return sentences, mentions


NER = {
    "ncbi-disease": {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"},
    "bc5cdr-chem": {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"},
    "bc5cdr-disease": {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"},
}


@pytest.mark.parametrize("task", sorted(NER))
def test_ner_releases_parse_and_prepare_with_the_registry_counts(task, tmp_path):
    needs(task)
    spec = spec_of(task)
    assert spec.expected_counts_checked
    found = {}
    for split, file in NER[task].items():
        records = get_reader(spec.format)(REAL / task / file, spec, name=file)
        sentences, mentions = conll_counts(REAL / task / file)
        assert len(records) == sentences, file
        assert sum(t.startswith("B-") for r in records for t in r["tags"]) == mentions, file
        assert all(len(r["tokens"]) == len(r["tags"]) for r in records)
        found[f"{split}_mentions"] = mentions
    card = prepare(spec, REAL / task, tmp_path / task)
    assert card["count_check"]["status"] == "ok"
    assert found == spec.expected_counts


def test_species_800_prefix_parses():
    needs("species-800")
    spec = spec_of("species-800")
    path = REAL / "species-800" / "datasets" / "NER" / "s800" / "test.tsv"
    records = get_reader(spec.format)(path, spec, name="s800/test.tsv")
    sentences, mentions = conll_counts(path)
    assert len(records) == sentences
    assert sum(t == "B-Species" for r in records for t in r["tags"]) == mentions > 0


def hoc_documents(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return len({row["index"].split("_", 1)[0] for row in rows})


def test_hoc_blue_release_parses_and_prepares(tmp_path):
    needs("hoc")
    folder = REAL / "hoc" / "bert_data" / "hoc"
    counts = {split: hoc_documents(folder / f"{split}.tsv") for split in ("train", "dev", "test")}
    overrides = {"splits": {s: f"bert_data/hoc/{s}.tsv" for s in counts}}
    if not complete("hoc", "bert_data/hoc/train.tsv"):
        overrides["expected_counts"] = {"train": None}
    card = prepare(spec_of("hoc", overrides), REAL / "hoc", tmp_path / "hoc")
    assert {s: card["splits"][s]["examples"] for s in counts} == counts
    assert card["count_check"]["status"] == "ok"
    full = MANIFEST["hoc"]["files"]["bert_data/hoc/train.tsv"].get("full_file", {})
    assert spec_of("hoc").expected_counts["train"] == full.get("documents", counts["train"])


def test_biosses_blue_tsvs_parse_with_their_quoted_sentences(tmp_path):
    needs("biosses")
    spec = spec_of("biosses", {"splits": {s: f"{s}.tsv" for s in ("train", "dev", "test")}, "expected_counts": None})
    for split in ("train", "dev", "test"):
        frame = pd.read_csv(REAL / "biosses" / f"{split}.tsv", sep="\t", index_col=0)
        records = get_reader("biosses")(REAL / "biosses" / f"{split}.tsv", spec, name=f"{split}.tsv")
        assert len(records) == len(frame)
        assert [r["text_a"] for r in records] == [s.strip() for s in frame["sentence1"]]
        assert [r["score"] for r in records] == list(frame["score"])
    card = prepare(spec, REAL / "biosses", tmp_path / "biosses")
    assert [card["splits"][s]["examples"] for s in ("train", "dev", "test")] == [
        len(pd.read_csv(REAL / "biosses" / f"{s}.tsv", sep="\t")) for s in ("train", "dev", "test")
    ]


def gad_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if r]
    return len(rows) - (rows[0] == ["index", "sentence", "label"])


def test_gad_fold_one_as_lewis_and_as_blurb(tmp_path):
    needs("gad")
    fold = REAL / "gad" / "datasets" / "RE" / "GAD" / "1"
    train, test = gad_rows(fold / "train.tsv"), gad_rows(fold / "test.tsv")
    lewis = spec_of(
        "gad",
        {
            **MANIFEST["gad"].get("overrides", {}),
            "splits": {
                "train": "datasets/RE/GAD/{fold1}/train.tsv",
                "dev": "holdout:0.1:datasets/RE/GAD/{fold1}/train.tsv",
                "test": "datasets/RE/GAD/{fold1}/test.tsv",
            },
        },
    )
    card = prepare(lewis, REAL / "gad", tmp_path / "gad")["folds"]["0"]["splits"]
    assert card["train"]["examples"] + card["dev"]["examples"] == train and card["test"]["examples"] == test
    blurb = spec_of(
        "gad-blurb",
        {
            "splits": {
                "train": "rows:0-4261:datasets/RE/GAD/1/train.tsv",
                "dev": "rows:4261-:datasets/RE/GAD/1/train.tsv",
                "test": "datasets/RE/GAD/1/test.tsv",
            }
        },
    )
    card = prepare(blurb, REAL / "gad", tmp_path / "gad-blurb")
    assert card["count_check"]["status"] == "ok" and card["count_check"]["checked_against_release"]
    assert card["count_check"]["found"] == {"train": 4261, "dev": train - 4261, "test": test}


def test_pubmedqa_release_prepares_with_the_registry_counts(tmp_path):
    needs("pubmedqa")
    questions = json.loads((REAL / "pubmedqa" / "ori_pqal.json").read_text())
    test_ids = json.loads((REAL / "pubmedqa" / "test_ground_truth.json").read_text())
    card = prepare(spec_of("pubmedqa"), REAL / "pubmedqa", tmp_path / "pubmedqa")
    sizes = {s: card["splits"][s]["examples"] for s in ("train", "dev", "test")}
    assert sizes["test"] == len(set(questions) & set(test_ids))
    assert sizes["train"] + sizes["dev"] == len(set(questions) - set(test_ids))
    assert card["count_check"]["status"] == "ok"


def test_pinned_checksums_are_those_of_the_real_files():
    """A registry URL naming a file of a repository we hold complete is pinned to its sha256."""
    urls = {
        src["url"]: (task, name, src.get("sha256"))
        for task, entry in load_registry().items()
        for name, src in entry["source"]["files"].items()
        if src and src.get("url")
    }
    pinned = 0
    for task, meta in MANIFEST.items():
        for file, info in meta["files"].items():
            data = (REAL / task / file).read_bytes()
            assert hashlib.sha256(data).hexdigest() == info["sha256"], f"{task}/{file}"
            repo, _, path = info["source"].partition(":")
            url = f"https://raw.githubusercontent.com/{repo.split('@')[0]}/master/{path}"
            if url in urls and info["complete"]:
                assert urls[url][2] == info["sha256"], f"{urls[url][0]}: {urls[url][1]}"
                pinned += 1
    if "ncbi-disease" in MANIFEST:  # shared/real-data: the NCBI, BC5CDR and PubMedQA files
        assert pinned == 11


def test_every_real_task_file_is_exercised():
    """A file added to the folder without a check here fails, rather than passing unread."""
    covered = (
        {f"{task}/{file}" for task, files in NER.items() for file in files.values()}
        | {
            "species-800/datasets/NER/s800/test.tsv",
            "gad/datasets/RE/GAD/1/train.tsv",
            "gad/datasets/RE/GAD/1/test.tsv",
            "pubmedqa/ori_pqal.json",
            "pubmedqa/test_ground_truth.json",
        }
        | {f"hoc/bert_data/hoc/{s}.tsv" for s in ("train", "dev", "test")}
        | {f"biosses/{s}.tsv" for s in ("train", "dev", "test")}
    )
    assert {f"{task}/{file}" for task, meta in MANIFEST.items() for file in meta["files"]} <= covered


def release_prefix(path: Path, lines: int, sentences: bool) -> bytes:
    """The file's first ``lines`` lines; with ``sentences``, up to the next blank line (a CoNLL sentence end)."""
    kept = []
    with open(path, "rb") as fh:
        for line in fh:
            kept.append(line)
            if len(kept) >= lines and (not sentences or not line.strip()):
                break
    return b"".join(kept)


# The readers of public releases: format -> (task, release file, lines kept).
REAL_FILES = {
    "conll": ("ncbi-disease", "train.tsv", 300),
    "conll_untyped": ("species-800", "datasets/NER/s800/test.tsv", 300),
    "biobert_tsv": ("gad", "datasets/RE/GAD/1/train.tsv", 200),
    "hoc": ("hoc", "bert_data/hoc/train.tsv", 200),
    "biosses": ("biosses", "dev.tsv", 0),
    "pubmedqa": ("pubmedqa", "ori_pqal.json", 0),
}


def real_prefix(fmt: str, task: str, file: str, lines: int) -> bytes:
    path = REAL / task / file
    if task == "pubmedqa":  # one JSON object: keep its first questions, written as the release writes them
        data = json.loads(path.read_text(encoding="utf-8"))
        return json.dumps(dict(list(data.items())[:40]), indent=4).encode()
    return release_prefix(path, lines, fmt.startswith("conll")) if lines else path.read_bytes()


@pytest.mark.parametrize("variation", text_variations.VARIATIONS)
@pytest.mark.parametrize("fmt", sorted(REAL_FILES))
def test_real_release_files_as_users_save_them(fmt, variation, tmp_path):
    """A BOM, CRLF, trailing spaces or no final newline read as the release; other encodings,
    a NUL byte or a cut character stop naming the file and line."""
    task, file, lines = REAL_FILES[fmt]
    needs(task)
    spec = spec_of(task, {"format": fmt, "labels": ["O", "B-Disease", "I-Disease"]} if fmt == "conll" else {})
    copy = tmp_path / file
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(real_prefix(fmt, task, file, lines))
    reference = get_reader(fmt)(copy, spec, name=file)
    assert len(reference) > 10
    text_variations.check(lambda: get_reader(fmt)(copy, spec, name=file), copy, file, variation, reference)

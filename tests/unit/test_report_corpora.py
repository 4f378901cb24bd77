"""The corpus table: our stats.json files beside the papers' corpus sizes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from workflow_scripts.errors import PipelineError
from workflow_scripts.report.corpus_table import human, main, read_published

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "resources" / "reference" / "corpora_published.csv"


def corpus(
    tmp_path: Path, name: str, type_: str, documents: int, words: int, restricted: bool = False, **extra
) -> Path:
    d = tmp_path / "corpus" / name
    d.mkdir(parents=True)
    stages = [
        {"stage": "input", "documents": documents + 3, "words": words + 30, "bytes": 10 * words + 300},
        {"stage": "after_too_short", "documents": documents, "words": words, "bytes": 10 * words},
    ]
    (d / "stats.json").write_text(
        json.dumps(
            {
                "corpus": name,
                "type": type_,
                "documents": documents,
                "words": words,
                "bytes": 10 * words,
                "dropped": {"malformed": 0, "too_short": 3},
                "stages": stages,
                **extra,
            }
        )
    )
    (d / "provenance.json").write_text(json.dumps({"restricted": restricted}))
    return d


def test_published_figures_are_the_papers():
    rows = {(p.type, p.citation.split(",")[0]): p for p in read_published(PUBLISHED)}
    lewis = rows[("pubmed", "Lewis et al. 2020")]
    assert (lewis.documents, lewis.words) == (22_000_000, 4_200_000_000)
    gu = rows[("pubmed", "Gu et al. 2021")]
    assert (gu.documents, gu.words) == (14_000_000, 3_200_000_000)
    assert (rows[("pmc", "Lewis et al. 2020")].documents, rows[("pmc", "Lewis et al. 2020")].words) == (
        3_400_000,
        9_600_000_000,
    )
    assert rows[("mimic", "Lewis et al. 2020")].words == 500_000_000


def test_table_puts_each_corpus_beside_the_published_ones(tmp_path):
    pm = corpus(tmp_path, "pubmed", "pubmed", 608, 93355)
    mimic = corpus(tmp_path, "mimic", "mimic", 165, 7000, restricted=True)
    pmc = corpus(
        tmp_path,
        "pmc",
        "pmc",
        12,
        9000,
        source_selection={"listed": 20, "dropped": {"older_version": 1, "licence": 6, "retracted": 0}},
    )
    out = tmp_path / "tables"
    main(
        [
            "--corpus",
            str(pm),
            "--corpus",
            str(pmc),
            "--corpus",
            str(mimic),
            "--published",
            str(PUBLISHED),
            "--out",
            str(out),
        ]
    )
    rows = list(csv.DictReader((out / "corpora.csv").open()))
    assert [(r["row"], r["type"]) for r in rows] == [
        ("ours", "pubmed"),
        ("published", "pubmed"),
        ("published", "pubmed"),
        ("published", "pubmed"),
        ("ours", "pmc"),
        ("published", "pmc"),
        ("published", "pmc"),
        ("ours", "mimic"),
        ("published", "mimic"),
    ]
    assert rows[0]["documents"] == "608" and rows[0]["words"] == "93355" and rows[0]["dropped"] == "too_short 3"
    assert rows[4]["dropped"] == "too_short 3, older_version 1 before download, licence 6 before download"
    assert rows[7]["restricted"] == "True"
    md = (out / "corpora.md").read_text()
    assert "| pubmed (ours) | pubmed | 608 | 93.4k |" in md
    assert "| PubMed abstracts as of March 2020 [Lewis et al. 2020] | pubmed | 22.0M | 4.2B | 27.0 |" in md
    assert "| mimic (ours)† |" in md and "† derived from credentialed data" in md
    assert r"\label{tab:corpora}" in (out / "corpora.tex").read_text()
    stages = list(csv.DictReader((out / "corpora_stages.csv").open()))
    assert [(s["corpus"], s["stage"], s["documents"]) for s in stages[:2]] == [
        ("pubmed", "input", "611"),
        ("pubmed", "after_too_short", "608"),
    ]
    record = json.loads((out / "corpora.provenance.json").read_text())
    assert record["step"] == "report.corpora" and len(record["inputs"]["stats"]) == 3


def test_human_numbers():
    assert [human(v) for v in (4.2e9, 22e6, 93355, 608, None)] == ["4.2B", "22.0M", "93.4k", "608", "—"]


def test_missing_stats_and_bad_reference_name_the_file(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PipelineError, match=r"empty/stats.json: unreadable corpus statistics"):
        main(["--corpus", str(tmp_path / "empty"), "--published", str(PUBLISHED), "--out", str(tmp_path / "t")])
    bad = tmp_path / "ref.csv"
    bad.write_text("type,corpus,documents,unit,words,gigabytes,note,citation\npubmed,x,many,abstracts,1,,,c\n")
    with pytest.raises(PipelineError, match=r"ref.csv:2: 'many' is not a number"):
        read_published(bad)

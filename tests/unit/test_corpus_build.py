"""Build step: update/delete semantics, filters with exact counts, decontamination, shards."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from corpus_fixtures import parse_settings

from workflow_scripts.corpus.build_corpus import main as build_main
from workflow_scripts.corpus.dedup import MinHasher
from workflow_scripts.corpus.parse_corpus_file import main as parse_main
from workflow_scripts.corpus.records import row, write_parsed
from workflow_scripts.corpus.updates import resolve_updates
from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.prepare_task import TEST_TEXTS

FIX = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "corpus"


def settings(tmp_path: Path, **clean) -> Path:
    shards = clean.pop("shards", 1)
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump({"corpus": {"name": "pm", "type": "pubmed", "shards": shards, "clean": clean}}))
    return path


def parsed(tmp_path: Path, s: Path, *fixtures: str) -> list[str]:
    out = []
    for name in fixtures:
        raw = tmp_path / (Path(name).stem + ".xml.gz")
        raw.write_bytes(gzip.compress((FIX / name).read_bytes(), mtime=0))
        target = tmp_path / (Path(name).stem + ".parquet")
        parse_main(["--settings", str(parse_settings(s)), "--in", str(raw), "--out", str(target)])
        out.append(str(target))
    return out


def read_docs(corpus: Path) -> list[dict]:
    rows = []
    for shard in sorted(corpus.glob("shard~*.parquet")):
        rows += pq.read_table(shard).to_pylist()
    return rows


def test_updates_versions_and_deletions(tmp_path):
    s = settings(tmp_path, min_words=0, near_dedup={"enabled": False})
    files = parsed(tmp_path, s, "medline_edge.xml", "medline_update.xml")
    out = tmp_path / "corpus"
    build_main(["--settings", str(s), "--in", *files, "--out", str(out)])
    stats = json.loads((out / "stats.json").read_text())
    assert {
        k: stats["input"][k]
        for k in ("rows", "replaced", "deleted", "delete_not_found", "superseded_versions", "documents")
    } == {"rows": 8, "replaced": 1, "deleted": 2, "delete_not_found": 1, "superseded_versions": 1, "documents": 4}
    assert {k: v for k, v in stats["dropped"].items() if v} == {"language": 1}
    docs = {d["id"]: d for d in read_docs(out)}
    assert sorted(docs) == ["pubmed:101", "pubmed:102", "pubmed:106"]
    assert docs["pubmed:101"]["text"].startswith("Binding of TP53 to cisplatin adducts (corrected)")
    assert json.loads(docs["pubmed:102"]["metadata"])["version"] == 2
    assert stats["documents"] == 3 and stats["words"] == sum(d["words"] for d in docs.values())
    assert stats["stages"][-1]["documents"] == 3
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["step"] == "corpus.build" and prov["restricted"] is False
    assert [o["path"].rsplit("/", 1)[1] for o in prov["outputs"]] == ["shard~0.parquet", "stats.json"]


def test_application_order_matters(tmp_path):
    s = settings(tmp_path, min_words=0, languages=[])
    files = parsed(tmp_path, s, "medline_edge.xml", "medline_update.xml")
    out = tmp_path / "reversed"
    build_main(["--settings", str(s), "--in", *reversed(files), "--out", str(out)])
    docs = {d["id"]: d for d in read_docs(out)}
    # applied first, the update's deletion of 105 finds nothing; the baseline then wins for 101
    assert docs["pubmed:101"]["text"].startswith("Binding of TP53 to cisplatin adducts\n")
    assert "pubmed:105" not in docs  # still dropped, now as retracted
    stats = json.loads((out / "stats.json").read_text())
    assert stats["input"]["delete_not_found"] == 2 and stats["dropped"]["retracted"] == 1


def test_min_words_sentence_split_and_shards(tmp_path):
    s = settings(tmp_path, min_words=12, languages=[], sentence_split=True, shards=4)
    files = parsed(tmp_path, s, "medline_edge.xml")
    out = tmp_path / "c"
    build_main(["--settings", str(s), "--in", *files, "--out", str(out)])
    stats = json.loads((out / "stats.json").read_text())
    assert stats["dropped"]["empty"] == 0  # 104 was deleted in the same file
    assert stats["dropped"]["retracted"] == 1 and stats["dropped"]["too_short"] == 0
    assert [sh["documents"] for sh in stats["shards"]] == [1, 1, 1, 0]
    assert len(list(out.glob("shard~*.parquet"))) == 4
    docs = read_docs(out)
    assert sorted(d["id"] for d in docs) == ["pubmed:101", "pubmed:102", "pubmed:103"]
    first = next(d for d in docs if d["id"] == "pubmed:101")
    assert first["text"].split("\n")[1] == "BACKGROUND: Cisplatin binds DNA in tumour cells."


def test_decontamination_drops_documents_holding_test_text(tmp_path):
    s = settings(tmp_path, min_words=0, languages=[], decontamination={"ngram": 8})
    files = parsed(tmp_path, s, "medline_edge.xml", "medline_update.xml")
    task = tmp_path / "tasks" / "ncbi_disease" / TEST_TEXTS
    task.parent.mkdir(parents=True)
    words = "Insulin resistance developed in the liver of Danio rerio exposed to glucose"
    task.write_text(json.dumps({"id": "t1", "texts": [words]}) + "\n")
    other = tmp_path / "tasks" / "hoc" / TEST_TEXTS
    other.parent.mkdir()
    other.write_text(
        json.dumps({"id": "h1", "texts": ["Revised: plasma warfarin decayed exponentially in all subjects."]}) + "\n"
    )
    out = tmp_path / "c"
    build_main(
        [
            "--settings",
            str(s),
            "--in",
            *files,
            "--out",
            str(out),
            "--decontaminate",
            str(task),
            "--decontaminate",
            str(other),
        ]
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["dropped"]["contaminated"] == 2
    assert stats["decontamination"]["tasks"] == {"ncbi_disease": 1, "hoc": 1}
    assert stats["decontamination"]["dropped_by_task"] == {"ncbi_disease": 1, "hoc": 1}
    assert {d["id"] for d in read_docs(out)} == {"pubmed:101", "pubmed:103"}


def test_input_that_is_not_a_parsed_file_is_named(tmp_path):
    s = settings(tmp_path)
    bogus = tmp_path / "bogus.parquet"
    pq.write_table(pq.read_table(parsed(tmp_path, s, "medline_update.xml")[0]).select(["id"]), bogus)
    with pytest.raises(PipelineError, match=r"bogus\.parquet: not a parsed corpus file"):
        build_main(["--settings", str(s), "--in", str(bogus), "--out", str(tmp_path / "c")])
    assert not (tmp_path / "c").exists()


def test_resolve_updates_event_semantics(tmp_path):
    def parsed_file(name, events):
        path = tmp_path / name
        write_parsed(path, [row(i, name, "t", op=op, version=v) for i, v, op in events], {"malformed": 0})
        return path

    a = parsed_file("a.parquet", [("x", 1, "add"), ("y", 1, "add"), ("z", 1, "add"), ("z", 2, "add")])
    b = parsed_file("b.parquet", [("x", 1, "delete"), ("y", 1, "add"), ("w", 1, "delete"), ("z", 2, "delete")])
    c = parsed_file("c.parquet", [("x", 1, "add")])  # re-added after its deletion
    up = resolve_updates([a, b, c])
    assert (up.rows, up.replaced, up.deleted, up.delete_not_found, up.superseded_versions) == (6, 1, 2, 1, 0)
    assert [m.tolist() for m in up.winners] == [[False, False, True, False], [False, True, False, False], [True]]
    assert up.documents == 3


def test_signatures_from_parse_are_reused_unless_parameters_differ(tmp_path, monkeypatch):
    s = settings(tmp_path, min_words=0, languages=[])
    files = parsed(tmp_path, s, "medline_edge.xml", "medline_update.xml")
    stored = pq.read_table(files[0], columns=["op", "minhash"]).to_pylist()
    assert all(len(r["minhash"]) == 128 for r in stored if r["op"] == "add" and r["minhash"] is not None)

    calls = []
    real = MinHasher.signature
    monkeypatch.setattr(MinHasher, "signature", lambda self, text: calls.append(text) or real(self, text))
    build_main(["--settings", str(s), "--in", *files, "--out", str(tmp_path / "same")])
    assert calls == []
    other = settings(tmp_path, min_words=0, languages=[], near_dedup={"num_perm": 64})
    build_main(["--settings", str(other), "--in", *files, "--out", str(tmp_path / "other")])
    assert len(calls) == 4  # the four documents that reach the near-duplicate step
    same = json.loads((tmp_path / "same" / "stats.json").read_text())
    assert same["documents"] == json.loads((tmp_path / "other" / "stats.json").read_text())["documents"] == 4

"""The bundled demo raw data: regenerated identically, and built into corpora with exact counts."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

import datasets
import pytest
import yaml
from corpus_fixtures import parse_settings

from workflow_scripts.corpus.build_corpus import main as build_main
from workflow_scripts.corpus.parse_corpus_file import main as parse_main
from workflow_scripts.download.checksums import expected_for

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "demo" / "raw_source"
PUBMED_FILES = ["baseline/pubmed26n0001.xml.gz", "baseline/pubmed26n0002.xml.gz", "updatefiles/pubmed26n0003.xml.gz"]


def load_generator():
    gen_dir = ROOT / "demo" / "generator"
    sys.path.insert(0, str(gen_dir))
    try:
        spec = importlib.util.spec_from_file_location("demo_corpus_generator", gen_dir / "corpus.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(gen_dir))
    return module


def content(name: str, data: bytes) -> object:
    """Comparable content: decompressed data, tar members by name, checksum files as parsed."""
    if name.endswith(".tar.gz"):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    if name.endswith(".gz"):
        return gzip.decompress(data)
    return data


def test_committed_demo_files_match_the_generator():
    generated = load_generator().generate()
    committed = {
        str(p.relative_to(RAW)) for sub in ("pubmed", "pmc", "mimic") for p in (RAW / sub).rglob("*") if p.is_file()
    }
    assert committed == set(generated)
    for name, data in generated.items():
        if name.endswith((".md5", "SHA256SUMS.txt")):
            continue  # compressed bytes may differ between zlib builds; checked against the files below
        assert content(name, (RAW / name).read_bytes()) == content(name, data), name
    total = sum((RAW / n).stat().st_size for n in generated)
    assert total < 1_500_000


def test_committed_checksum_files_match_the_committed_data():
    for name in PUBMED_FILES + ["oa_demo.tar.gz"]:
        path = RAW / ("pmc/" + name if name.startswith("oa_") else "pubmed/" + name)
        md5 = path.with_name(path.name + ".md5").read_text()
        assert md5.startswith(f"MD5({path.name})= ")
        assert expected_for(md5, "md5", path.name, "md5") == hashlib.md5(path.read_bytes()).hexdigest()
    sums = (RAW / "mimic" / "SHA256SUMS.txt").read_text()
    data = (RAW / "mimic" / "NOTEEVENTS.csv.gz").read_bytes()
    assert expected_for(sums, "SHA256SUMS", "NOTEEVENTS.csv.gz", "sha256") == hashlib.sha256(data).hexdigest()


def _corpus(
    tmp_path: Path, name: str, type_: str, raws: list[Path], shards: int, clean: dict, extra: tuple[str, ...] = ()
) -> dict:
    s = tmp_path / f"{name}.yaml"
    s.write_text(yaml.safe_dump({"corpus": {"name": name, "type": type_, "shards": shards, "clean": clean}}))
    parsed = []
    for raw in raws:
        out = tmp_path / f"{name}-{raw.name}.parquet"
        parse_main(["--settings", str(parse_settings(s)), "--in", str(raw), "--out", str(out), *extra])
        parsed.append(str(out))
    build_main(["--settings", str(s), "--in", *parsed, "--out", str(tmp_path / name)])
    return json.loads((tmp_path / name / "stats.json").read_text())


def nonzero(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


def test_demo_pubmed_corpus(tmp_path):
    stats = _corpus(tmp_path, "pubmed", "pubmed", [RAW / "pubmed" / f for f in PUBMED_FILES], 2, {"min_words": 50})
    # 600 baseline + 22 update records; one re-issue replaces its original, version 2 supersedes
    # version 1 of another PMID, three DeleteCitation PMIDs are removed
    assert {
        k: stats["input"][k]
        for k in ("rows", "replaced", "deleted", "delete_not_found", "superseded_versions", "documents")
    } == {"rows": 622, "replaced": 1, "deleted": 3, "delete_not_found": 0, "superseded_versions": 1, "documents": 617}
    assert nonzero(stats["dropped"]) == {
        "retracted": 1,
        "empty": 1,
        "too_short": 3,
        "language": 2,
        "exact_duplicate": 1,
        "near_duplicate": 1,
    }
    assert (stats["documents"], stats["words"], stats["bytes"]) == (608, 86110, 597236)
    assert [s["documents"] for s in stats["shards"]] == [304, 304]
    ds = datasets.load_dataset(
        "parquet",
        data_files=sorted(str(p) for p in (tmp_path / "pubmed").glob("shard~*")),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )
    assert ds.num_rows == 608 and {"id", "source", "text", "metadata"} <= set(ds.column_names)
    ids = set(ds["id"])
    assert "pubmed:31000150" not in ids and "pubmed:31000620" in ids  # deleted; added by the update
    v2 = next(r for r in ds if r["id"] == "pubmed:31000200")
    assert v2["text"].startswith("Version 2: TP53 and breast cancer") and json.loads(v2["metadata"])["version"] == 2


def test_demo_pmc_commercial_subset(tmp_path):
    stats = _corpus(
        tmp_path, "pmc", "pmc", [RAW / "pmc" / "oa_demo.tar.gz"], 1, {"min_words": 50, "pmc": {"licence": "commercial"}}
    )
    assert stats["input"]["documents"] == 20
    assert nonzero(stats["dropped"]) == {"licence": 6, "retracted": 1}
    assert stats["documents"] == 13


def test_demo_pmc_with_file_list(tmp_path):
    stats = _corpus(
        tmp_path,
        "pmc",
        "pmc",
        [RAW / "pmc" / "oa_demo.tar.gz"],
        1,
        {"min_words": 50, "pmc": {"licence": "commercial"}},
        ("--filelist", str(RAW / "pmc" / "oa_demo.filelist.csv")),
    )
    # the list also marks an article retracted after deposit
    assert nonzero(stats["dropped"]) == {"licence": 6, "retracted": 2}
    assert stats["documents"] == 12


@pytest.mark.parametrize(
    "placeholders,dropped,documents",
    [
        ("keep", {"iserror": 13, "exact_duplicate": 68, "near_duplicate": 4}, 415),
        # type tags make notes that differ only in names or dates identical
        ("tag", {"iserror": 13, "exact_duplicate": 92}, 395),
    ],
)
def test_demo_mimic_corpus_is_restricted(tmp_path, placeholders, dropped, documents):
    stats = _corpus(
        tmp_path,
        "mimic",
        "mimic",
        [RAW / "mimic" / "NOTEEVENTS.csv.gz"],
        1,
        {"min_words": 3, "mimic": {"placeholders": placeholders}},
    )
    assert stats["input"]["documents"] == 500
    assert nonzero(stats["dropped"]) == dropped and stats["documents"] == documents
    assert json.loads((tmp_path / "mimic" / "provenance.json").read_text())["restricted"] is True


def test_demo_pmc_as_the_workflow_builds_it(tmp_path):
    """demo/config.yaml's settings and file list, as the rules pass them: all licences kept;
    article 7 is retracted in its XML and article 4 only in the file list."""
    from workflow_scripts.config import plan, step_settings
    from workflow_scripts.config.validate import load_config

    study = load_config(
        yaml.safe_load((ROOT / "demo" / "config.yaml").read_text()), ROOT / "schemas" / "config.schema.yaml"
    )
    [package] = [f.name for f in plan.corpus_files(study, "pmc")]
    listed = plan.parse_extra_inputs(study, "pmc", package)["filelist"]
    settings = step_settings.corpus_settings(study, "pmc")["corpus"]
    stats = _corpus(
        tmp_path,
        "pmc",
        "pmc",
        [RAW / "pmc" / package],
        settings["shards"],
        settings["clean"],
        ("--filelist", str(RAW / "pmc" / Path(listed).name)),
    )
    assert stats["input"]["documents"] == 20
    assert nonzero(stats["dropped"]) == {"retracted": 2}
    assert stats["documents"] == 18

"""PMC in the per-article cloud layout, against a real HTTP server on 127.0.0.1 serving the
bucket's layout: metadata/PMC<id>.<v>.json and PMC<id>.<v>/PMC<id>.<v>.xml."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import json
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from corpus_fixtures import parse_settings

from workflow_scripts.corpus.build_corpus import main as build_main
from workflow_scripts.corpus.parse_corpus_file import main as parse_main
from workflow_scripts.download.download_pmc_batch import (
    batch_of,
    decide,
    fetch_batch,
    latest_versions,
    main,
    read_inventory,
)
from workflow_scripts.download.fetch import Options
from workflow_scripts.errors import PipelineError

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = (ROOT / "tests" / "fixtures" / "corpus" / "jats_article.nxml").read_text()
FAST = Options(retries=1, backoff=0.01, timeout=5)

# pmcid -> (version, license_code, is_retracted, is_pmc_openaccess); PMC101 also has an older version 1
ARTICLES = {
    "PMC101": (2, "CC BY", False, True),
    "PMC102": (1, "CC0", False, True),
    "PMC103": (1, "CC BY-NC-SA", False, True),
    "PMC104": (1, "CC BY", True, True),
    "PMC105": (1, "CC BY", False, False),
    "PMC106": (1, "CC BY-SA", False, True),
}


def jats(pmcid: str, version: int) -> bytes:
    return (
        TEMPLATE.replace("PMC9900001", pmcid)
        .replace("Tacrolimus exposure depends", f"Version {version} of {pmcid}: tacrolimus exposure depends")
        .encode()
    )


def bucket() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    lines = []
    for pmcid, (version, lic, retracted, oa) in ARTICLES.items():
        for v in range(1, version + 1):
            key = f"{pmcid}.{v}/{pmcid}.{v}.xml"
            xml = jats(pmcid, v)
            files[key] = xml
            files[f"metadata/{pmcid}.{v}.json"] = json.dumps(
                {
                    "pmcid": pmcid,
                    "version": v,
                    "pmid": int(pmcid[3:]) + 37000000,
                    "doi": f"10.5555/{pmcid}",
                    "is_pmc_openaccess": oa,
                    "is_manuscript": False,
                    "is_historical_ocr": False,
                    "is_retracted": retracted,
                    "license_code": lic,
                    "xml_url": f"s3://pmc-oa-opendata/{key}?md5={hashlib.md5(xml).hexdigest()}",
                    "text_url": f"s3://pmc-oa-opendata/{pmcid}.{v}/{pmcid}.{v}.txt",
                }
            ).encode()
            # the S3 inventory CSV: bucket, key, size, last modified
            lines.append(f'"pmc-oa-opendata","metadata/{pmcid}.{v}.json","512","2026-05-01T00:00:00.000Z"')
    files["inventory.csv.gz"] = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
    return files


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.files, srv.requests = bucket(), []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def base(srv) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}"


def inventory(tmp_path: Path, srv) -> Path:
    path = tmp_path / "inventory.csv.gz"
    path.write_bytes(srv.files["inventory.csv.gz"])
    return path


def test_inventory_keeps_the_latest_version_of_each_article(tmp_path):
    listing = tmp_path / "ls.txt"  # `aws s3 ls --recursive` output
    listing.write_text(
        "2026-05-01 10:00:00        512 metadata/PMC7.1.json\n"
        "2026-05-02 10:00:00        530 metadata/PMC7.3.json\n"
        "2026-05-02 10:00:00        530 PMC8.1/PMC8.1.json\n"
        "2026-05-02 10:00:00       9000 PMC8.1/PMC8.1.xml\n"
    )
    latest, older = latest_versions(read_inventory(listing))
    assert [(a.pmcid, a.version, a.key) for a in latest] == [
        ("PMC7", 3, "metadata/PMC7.3.json"),
        ("PMC8", 1, "PMC8.1/PMC8.1.json"),
    ]
    assert older == 1
    listing.write_text("README.txt\n")
    with pytest.raises(PipelineError, match="ls.txt: names no metadata"):
        read_inventory(listing)


def test_licence_and_retraction_are_decided_from_metadata():
    meta = {"is_pmc_openaccess": True, "license_code": "CC BY-NC", "is_retracted": False, "xml_url": "s3://x"}
    assert decide(meta, "m", "commercial", True) == ("licence", "noncommercial", False)
    assert decide(meta, "m", "all", True) == (None, "noncommercial", False)
    assert decide({**meta, "license_code": "CC0", "is_retracted": True}, "m", "commercial", True)[0] == "retracted"
    assert decide({**meta, "license_code": "CC0", "is_retracted": True}, "m", "commercial", False)[0] is None
    with pytest.raises(PipelineError, match="PMC1.1.json.*'xml_url'"):
        decide({"is_pmc_openaccess": True, "license_code": "CC BY"}, "PMC1.1.json", "all", True)


def test_commercial_batch_is_selected_before_download_then_parsed(tmp_path, server):
    out = tmp_path / "batch~0"
    counts = fetch_batch(inventory(tmp_path, server), base(server), 0, 1, out, "commercial", True, FAST)
    assert counts == {
        "listed": 7,
        "articles": 6,
        "fetched": 3,
        "dropped": {"older_version": 1, "not_open_access": 1, "licence": 1, "retracted": 1},
    }
    assert sorted(p.name for p in out.glob("*.xml")) == ["PMC101.2.xml", "PMC102.1.xml", "PMC106.1.xml"]
    xml_requests = sorted(p for p in server.requests if p.endswith(".xml"))
    assert xml_requests == ["/PMC101.2/PMC101.2.xml", "/PMC102.1/PMC102.1.xml", "/PMC106.1/PMC106.1.xml"]
    assert not out.with_name("batch~0.partial").exists()

    settings = tmp_path / "s.yaml"
    # the fixture articles differ in one sentence only: no near-duplicate removal here
    clean = {"min_words": 5, "near_dedup": {"enabled": False}}
    settings.write_text(yaml.safe_dump({"corpus": {"name": "pmc", "type": "pmc", "clean": clean}}))
    parsed = tmp_path / "batch~0.parquet"
    parse_main(
        [
            "--settings",
            str(parse_settings(settings)),
            "--in",
            str(out),
            "--filelist",
            str(tmp_path / "batch~0.filelist.csv"),
            "--out",
            str(parsed),
        ]
    )
    rows = pq.read_table(parsed).to_pylist()
    # the file list (from the metadata) overrides the NC licence written in the fixture's XML
    assert {r["id"]: r["licence"] for r in rows} == {
        "pmc:PMC101": "commercial",
        "pmc:PMC102": "commercial",
        "pmc:PMC106": "commercial",
    }
    assert next(r for r in rows if r["id"] == "pmc:PMC101")["text"].count("Version 2 of PMC101") == 1
    info = json.loads(pq.ParquetFile(parsed).metadata.metadata[b"corpus_parse"])
    assert info["selection"]["dropped"]["licence"] == 1 and info["from_filelist"] == 3
    build_main(["--settings", str(settings), "--in", str(parsed), "--out", str(tmp_path / "pmc")])
    stats = json.loads((tmp_path / "pmc" / "stats.json").read_text())
    assert stats["documents"] == 3 and stats["source_selection"] == {
        "listed": 7,
        "articles": 6,
        "fetched": 3,
        "dropped": {"older_version": 1, "not_open_access": 1, "licence": 1, "retracted": 1},
    }


def test_batches_partition_the_articles(tmp_path, server):
    inv = inventory(tmp_path, server)
    fetched, listed = [], 0
    for k in range(3):
        counts = fetch_batch(inv, base(server), k, 3, tmp_path / f"batch~{k}", "all", False, FAST)
        listed += counts["listed"]
        fetched += sorted(p.name for p in (tmp_path / f"batch~{k}").glob("*.xml"))
        assert all(batch_of(p.split(".")[0], 3) == k for p in fetched[-counts["fetched"] :])
    assert listed == 7
    assert sorted(fetched) == ["PMC101.2.xml", "PMC102.1.xml", "PMC103.1.xml", "PMC104.1.xml", "PMC106.1.xml"]


def test_interrupted_batch_resumes_without_fetching_again(tmp_path, server):
    inv = inventory(tmp_path, server)
    del server.files["PMC106.1/PMC106.1.xml"]  # the connection to the last article fails
    with pytest.raises(PipelineError, match="PMC106.1.xml: not found"):
        fetch_batch(inv, base(server), 0, 1, tmp_path / "batch~0", "commercial", True, FAST)
    assert not (tmp_path / "batch~0").exists()
    server.files["PMC106.1/PMC106.1.xml"] = bucket()["PMC106.1/PMC106.1.xml"]
    server.requests.clear()
    fetch_batch(inv, base(server), 0, 1, tmp_path / "batch~0", "commercial", True, FAST)
    assert [p for p in server.requests if p.endswith(".xml")] == ["/PMC106.1/PMC106.1.xml"]


def test_checksum_mismatch_is_never_passed_on(tmp_path, server):
    server.files["PMC102.1/PMC102.1.xml"] = b"<article>changed</article>"
    with pytest.raises(PipelineError, match="md5 mismatch for PMC102.1.xml"):
        fetch_batch(inventory(tmp_path, server), base(server), 0, 1, tmp_path / "b", "all", True, FAST)
    assert not (tmp_path / "b.partial" / "PMC102.1.xml").exists()


def test_cli_records_selection_in_provenance(tmp_path, server):
    settings = tmp_path / "s.yaml"
    settings.write_text(
        yaml.safe_dump({"corpus": {"name": "pmc", "type": "pmc", "clean": {"pmc": {"licence": "noncommercial"}}}})
    )
    out = tmp_path / "batch~0"
    main(
        [
            "--settings",
            str(settings),
            "--inventory",
            str(inventory(tmp_path, server)),
            "--url",
            base(server),
            "--batch",
            "0",
            "--batches",
            "1",
            "--out",
            str(out),
            "--retries",
            "0",
        ]
    )
    assert [p.name for p in out.glob("*.xml")] == ["PMC103.1.xml"]
    record = json.loads((out / "provenance.json").read_text())
    assert record["selection"]["dropped"]["licence"] == 4
    with pytest.raises(PipelineError, match="--batch 2: must lie in 0..1"):
        fetch_batch(inventory(tmp_path, server), base(server), 2, 2, out, "all", True, FAST)

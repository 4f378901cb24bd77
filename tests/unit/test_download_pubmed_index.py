"""Listing a PubMed release from the server's directory index."""

from __future__ import annotations

import json

import pytest

from workflow_scripts.download.pubmed_index import main, parse_index, release_files
from workflow_scripts.errors import PipelineError

LISTING = """<html><head><title>Index of /pubmed/baseline</title></head><body><h1>Index of /pubmed/baseline</h1>
<pre>Name                        Last modified      Size  <hr><a href="/pubmed/">Parent Directory</a>
<a href="README.txt">README.txt</a>                  2025-12-10 10:00  4.1K
<a href="pubmed26n0002.xml.gz">pubmed26n0002.xml.gz</a>        2025-12-10 14:02   19M
<a href="pubmed26n0002.xml.gz.md5">pubmed26n0002.xml.gz.md5</a>    2025-12-10 14:02   60
<a href="pubmed26n0001.xml.gz">pubmed26n0001.xml.gz</a>        2025-12-10 14:02   18M
<a href="pubmed26n0001.xml.gz.md5">pubmed26n0001.xml.gz.md5</a>    2025-12-10 14:02   60
<a href="pubmed26n1334.xml.gz">pubmed26n1334.xml.gz</a>        2025-12-11 02:13  7.9M
<a href="pubmed25n1274.xml.gz">pubmed25n1274.xml.gz</a>        2024-12-11 02:13  7.9M
</pre></body></html>
"""


def test_parse_index_keeps_data_files_in_order():
    assert parse_index(LISTING, 26) == ["pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz", "pubmed26n1334.xml.gz"]
    assert len(parse_index(LISTING)) == 4


def test_release_files_for_dry_runs():
    assert release_files(2026, 1, 3) == ["pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz", "pubmed26n0003.xml.gz"]


def test_cli_writes_manifest_and_provenance(tmp_path):
    page = tmp_path / "index.html"
    page.write_text(LISTING)
    out = tmp_path / "baseline.txt"
    main(["--url", page.as_uri(), "--out", str(out), "--year", "2026"])
    assert out.read_text().split() == ["pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz", "pubmed26n1334.xml.gz"]
    assert json.loads((tmp_path / "baseline.txt.provenance.json").read_text())["params"]["files"] == 3
    with pytest.raises(PipelineError, match="no pubmedYYnNNNN.xml.gz files listed for year 24"):
        main(["--url", page.as_uri(), "--out", str(tmp_path / "none.txt"), "--year", "24", "--retries", "0"])

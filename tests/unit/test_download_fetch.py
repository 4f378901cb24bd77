"""The downloader against a real HTTP server on 127.0.0.1 serving our own files."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from workflow_scripts.download import credentials
from workflow_scripts.download.checksums import expected_for, parse_checksums
from workflow_scripts.download.fetch import Options, fetch, main, split_credentials
from workflow_scripts.errors import PipelineError

PAYLOAD = gzip.compress(b"".join(b"<PubmedArticle>%d</PubmedArticle>\n" % i for i in range(20000)), mtime=0)
MD5 = hashlib.md5(PAYLOAD).hexdigest()
FAST = Options(retries=3, backoff=0.01, timeout=5)


class Handler(http.server.BaseHTTPRequestHandler):
    """Paths: /ok/NAME, /drop/NAME (first response cut mid-file), /flaky/NAME (first two 503),
    /badmd5/NAME.md5, /trunc/NAME (truncated gzip), /auth/NAME (basic auth), else 404."""

    def log_message(self, *args):  # keep test output clean
        pass

    def _send_body(self, body: bytes, cut: int | None = None) -> None:
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        data = body[start:]
        if cut is not None:
            self.wfile.write(data[:cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(data)

    def do_GET(self):
        state = self.server.state
        state["requests"].append((self.path, self.headers.get("Range"), self.headers.get("Authorization")))
        kind, _, name = self.path.strip("/").partition("/")
        if name.endswith(".md5"):
            digest = "0" * 32 if kind == "badmd5" else MD5
            return self._send_body(f"MD5({name[:-4]})= {digest}\n".encode())
        if kind == "ok":
            return self._send_body(PAYLOAD)
        if kind == "badmd5":
            return self._send_body(PAYLOAD)
        if kind == "drop":
            state["drops"] += 1
            return self._send_body(PAYLOAD, cut=len(PAYLOAD) // 3 if state["drops"] == 1 else None)
        if kind == "flaky":
            state["flaky"] += 1
            if state["flaky"] <= 2:
                self.send_error(503)
                return
            return self._send_body(PAYLOAD)
        if kind == "trunc":
            return self._send_body(PAYLOAD[: len(PAYLOAD) // 2])
        if kind == "auth":
            expected = "Basic " + base64.b64encode(b"alice:s3cret-pw").decode()
            if self.headers.get("Authorization") != expected:
                self.send_error(401)
                return
            return self._send_body(PAYLOAD)
        self.send_error(404)


@pytest.fixture()
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.state = {"requests": [], "drops": 0, "flaky": 0}
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_plain_download_with_md5_url_saves_file_md5_and_provenance(server, tmp_path):
    _, base = server
    out = tmp_path / "pubmed26n0001.xml.gz"
    main(
        [
            "--url",
            f"{base}/ok/pubmed26n0001.xml.gz",
            "--out",
            str(out),
            "--md5-url",
            f"{base}/ok/pubmed26n0001.xml.gz.md5",
            "--backoff",
            "0.01",
        ]
    )
    assert out.read_bytes() == PAYLOAD
    assert (tmp_path / "pubmed26n0001.xml.gz.md5").read_text() == f"MD5(pubmed26n0001.xml.gz)= {MD5}\n"
    rec = json.loads((tmp_path / "pubmed26n0001.xml.gz.provenance.json").read_text())
    assert rec["params"]["expected"] == MD5 and rec["restricted"] is False
    assert not list(tmp_path.glob("*.part"))


def test_dropped_connection_resumes_with_range(server, tmp_path):
    srv, base = server
    out = tmp_path / "f.xml.gz"
    result = fetch(f"{base}/drop/f.xml.gz", out, algo="md5", digest=MD5, opts=FAST)
    assert out.read_bytes() == PAYLOAD
    assert result["attempts"] == 2
    ranges = [r for p, r, _ in srv.state["requests"] if p.startswith("/drop")]
    assert ranges[0] is None and ranges[1] == f"bytes={len(PAYLOAD) // 3}-"


def test_server_errors_are_retried(server, tmp_path):
    _, base = server
    out = tmp_path / "f.xml.gz"
    assert fetch(f"{base}/flaky/f.xml.gz", out, opts=FAST)["attempts"] == 3
    assert out.read_bytes() == PAYLOAD


def test_checksum_mismatch_deletes_file_and_names_both_digests(server, tmp_path):
    srv, base = server
    out = tmp_path / "f.xml.gz"
    with pytest.raises(PipelineError) as err:
        main(
            [
                "--url",
                f"{base}/badmd5/f.xml.gz",
                "--out",
                str(out),
                "--md5-url",
                f"{base}/badmd5/f.xml.gz.md5",
                "--retries",
                "1",
                "--backoff",
                "0.01",
            ]
        )
    msg = str(err.value)
    assert "f.xml.gz" in msg and "0" * 32 in msg and MD5 in msg
    assert not out.exists() and not list(tmp_path.glob("*.part")) and not (tmp_path / "f.xml.gz.md5").exists()
    assert sum(p == "/badmd5/f.xml.gz" for p, _, _ in srv.state["requests"]) == 2


def test_404_fails_at_once_naming_the_url(server, tmp_path):
    srv, base = server
    with pytest.raises(PipelineError, match=r"/missing/x\.gz: not found"):
        fetch(f"{base}/missing/x.gz", tmp_path / "x.gz", opts=FAST)
    assert len(srv.state["requests"]) == 1


def test_truncated_gzip_is_rejected(server, tmp_path):
    _, base = server
    out = tmp_path / "t.xml.gz"
    with pytest.raises(PipelineError, match="truncated or corrupt gzip"):
        fetch(f"{base}/trunc/t.xml.gz", out, opts=Options(retries=1, backoff=0.01, timeout=5))
    assert not out.exists() and not list(tmp_path.glob("*.part"))


def test_file_url_and_sha256(tmp_path):
    src = tmp_path / "src" / "NOTEEVENTS.csv.gz"
    src.parent.mkdir()
    src.write_bytes(PAYLOAD)
    out = tmp_path / "raw" / "NOTEEVENTS.csv.gz"
    main(["--url", src.as_uri(), "--out", str(out), "--sha256", hashlib.sha256(PAYLOAD).hexdigest(), "--restricted"])
    assert out.read_bytes() == PAYLOAD
    assert json.loads((tmp_path / "raw" / "NOTEEVENTS.csv.gz.provenance.json").read_text())["restricted"] is True


def test_credentials_from_netrc_are_sent_and_never_recorded(server, tmp_path, monkeypatch):
    _, base = server
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login alice password s3cret-pw\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    out = tmp_path / "n.csv.gz"
    main(["--url", f"{base}/auth/n.csv.gz", "--out", str(out), "--restricted"])
    assert out.read_bytes() == PAYLOAD
    assert "s3cret" not in (tmp_path / "n.csv.gz.provenance.json").read_text()


def test_access_denied_explains_how_to_get_access_without_leaking(server, tmp_path, monkeypatch):
    _, base = server
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    with pytest.raises(PipelineError) as err:
        fetch(f"http://bob:wrong-pw@{base[7:]}/auth/n.csv.gz", tmp_path / "n.csv.gz", opts=FAST)
    assert "HTTP 401" in str(err.value) and "PHYSIONET_USERNAME" in str(err.value)
    assert "wrong-pw" not in str(err.value)


def test_physionet_env_credentials_apply_to_physionet_only(monkeypatch, tmp_path):
    monkeypatch.setenv("PHYSIONET_USERNAME", "alice")
    monkeypatch.setenv("PHYSIONET_PASSWORD", "pw")
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    assert credentials.lookup("https://physionet.org/files/mimiciii/1.4/NOTEEVENTS.csv.gz") == ("alice", "pw")
    assert credentials.lookup("https://ftp.ncbi.nlm.nih.gov/pubmed/baseline/x.xml.gz") is None


def test_cli_error_is_one_line_with_status_2(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.download.fetch",
            "--url",
            (tmp_path / "nope.gz").as_uri(),
            "--out",
            str(tmp_path / "o.gz"),
            "--retries",
            "0",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ") and "nope.gz" in proc.stderr


def test_checksum_file_formats():
    assert parse_checksums(f"MD5(a.xml.gz)= {MD5}\n", "s") == {"a.xml.gz": MD5}
    assert parse_checksums(f"{MD5}  a.xml.gz\n{MD5.upper()} *b.gz\n", "s") == {"a.xml.gz": MD5, "b.gz": MD5}
    assert expected_for(f"MD5(other-name.gz)= {MD5}", "s", "a.gz", "md5") == MD5
    with pytest.raises(PipelineError, match="s:1: not a checksum line"):
        parse_checksums("garbage\n", "s")


def test_split_credentials():
    assert split_credentials("https://u:p%40ss@physionet.org:443/x") == ("https://physionet.org:443/x", ("u", "p@ss"))
    assert split_credentials("https://physionet.org/x") == ("https://physionet.org/x", None)


def test_sha256sums_file_from_a_local_path(tmp_path, monkeypatch):
    """As the demo runs it: relative paths, a PhysioNet-style SHA256SUMS.txt."""
    src = tmp_path / "raw_source" / "mimic"
    src.mkdir(parents=True)
    (src / "NOTEEVENTS.csv.gz").write_bytes(PAYLOAD)
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    (src / "SHA256SUMS.txt").write_text(f"{'0' * 64} LICENSE.txt\n{digest} NOTEEVENTS.csv.gz\n")
    monkeypatch.chdir(tmp_path)
    main(
        [
            "--url",
            "raw_source/mimic/NOTEEVENTS.csv.gz",
            "--out",
            "results/raw/mimic/NOTEEVENTS.csv.gz",
            "--sha256-url",
            "raw_source/mimic/SHA256SUMS.txt",
            "--restricted",
        ]
    )
    assert (tmp_path / "results/raw/mimic/NOTEEVENTS.csv.gz").read_bytes() == PAYLOAD
    (src / "NOTEEVENTS.csv.gz").write_bytes(PAYLOAD[:-1] + b"x")
    with pytest.raises(PipelineError, match="NOTEEVENTS.csv.gz: download failed.*sha256 mismatch for again.csv.gz"):
        main(
            [
                "--url",
                "raw_source/mimic/NOTEEVENTS.csv.gz",
                "--out",
                "results/raw/mimic/again.csv.gz",
                "--sha256",
                hashlib.sha256(PAYLOAD).hexdigest(),
                "--retries",
                "0",
            ]
        )


def test_file_without_source_says_how_to_get_access(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "train.tsv"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.download.fetch",
            "--out",
            str(out),
            "--access",
            "Sign the n2c2 data use agreement at the DBMI portal.",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: {out}: no download source")
    assert "n2c2" in result.stderr and not out.exists()

"""Credentials never leak: a study whose MIMIC download needs a password, served by a
credentialed HTTP server on 127.0.0.1, runs with the password supplied through netrc, and the
password appears in no file under results/ or .snakemake/ and nowhere in the console; a
password written into a configured URL is refused with one line naming the key."""

from __future__ import annotations

import base64
import http.server
import threading
from pathlib import Path

import pytest
import yaml
from workflow_harness import copy_demo, run_demo

USER, SECRET = "alice", "pw-9f3kq-never-leak"
TARGET = "results/parsed/mimic/NOTEEVENTS.csv.gz.parquet"


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves a directory to clients presenting the expected Basic credentials only."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        expected = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="physionet"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


@pytest.fixture()
def server(tmp_path):
    root = Path(__file__).resolve().parents[2] / "demo" / "raw_source"
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: _Files(*a, directory=str(root)))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _with_mimic_url(demo: Path, url: str) -> None:
    cfg = yaml.safe_load((demo / "config.yaml").read_text())
    cfg["corpora"]["mimic"]["source"]["url"] = url
    (demo / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _leaks(directory: Path, needles: list[bytes]) -> list[str]:
    return [
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.is_file() and any(n in p.read_bytes() for n in needles)
    ]


def test_netrc_credentials_reach_the_server_and_nothing_else(server, tmp_path, monkeypatch):
    demo = copy_demo(tmp_path)
    _with_mimic_url(demo, f"http://{server}/mimic")
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {SECRET}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    result = run_demo(demo, "--cores", "1", TARGET)
    console = result.stdout + result.stderr
    assert result.returncode == 0, console[-3000:]
    assert (demo / TARGET).is_file()
    needles = [SECRET.encode(), base64.b64encode(f"{USER}:{SECRET}".encode())]
    assert not any(n.decode() in console for n in needles)
    assert _leaks(demo / "results", needles) == []
    assert _leaks(demo / ".snakemake", needles) == []


def test_a_password_in_a_configured_url_is_refused_in_one_line(server, tmp_path):
    demo = copy_demo(tmp_path)
    _with_mimic_url(demo, f"http://{USER}:{SECRET}@{server}/mimic")
    result = run_demo(demo, "-n")
    console = result.stdout + result.stderr
    assert result.returncode != 0
    errors = [line for line in console.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(
        "error: config: corpora.mimic.source.url: credentials inside a URL are refused"
    ), console[-2000:]
    assert "netrc" in errors[0]
    assert SECRET not in console
    assert not (demo / "results").exists()
    if (demo / ".snakemake").exists():
        assert _leaks(demo / ".snakemake", [SECRET.encode()]) == []

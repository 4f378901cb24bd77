"""Bad input stops the run with one line naming the file or key, and keeps finished work."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from workflow_harness import copy_demo, run_demo

FIRST = "results/raw/pubmed/pubmed26n0001.xml.gz"
SECOND = "results/raw/pubmed/pubmed26n0002.xml.gz"


@pytest.fixture()
def demo(tmp_path) -> Path:
    return copy_demo(tmp_path)


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


def test_malformed_config_names_the_key(demo):
    cfg = yaml.safe_load((demo / "config.yaml").read_text())
    cfg["models"]["demo-roberta"]["vocab"] = "no-such-vocab"
    (demo / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    result = run_demo(demo, "-n")
    assert result.returncode != 0
    errors = _error_lines(result.stdout + result.stderr)
    assert errors and "models.demo-roberta.vocab" in errors[0], result.stderr[-2000:]


def test_missing_raw_file_is_named_and_finished_downloads_stay(demo):
    assert run_demo(demo, FIRST).returncode == 0
    (demo / "raw_source/pubmed/baseline/pubmed26n0002.xml.gz").unlink()
    result = run_demo(demo, SECOND)
    assert result.returncode != 0
    errors = _error_lines(result.stdout + result.stderr)
    assert errors and "pubmed26n0002.xml.gz" in errors[0], (result.stdout + result.stderr)[-3000:]
    assert (demo / FIRST).is_file()
    assert not (demo / SECOND).exists()


def test_checksum_mismatch_is_named_and_nothing_is_passed_on(demo):
    assert run_demo(demo, FIRST).returncode == 0
    md5 = demo / "raw_source/pubmed/baseline/pubmed26n0002.xml.gz.md5"
    md5.write_text("MD5(pubmed26n0002.xml.gz)= " + "0" * 32 + "\n")
    result = run_demo(demo, SECOND)
    assert result.returncode != 0
    errors = _error_lines(result.stdout + result.stderr)
    assert errors and "pubmed26n0002.xml.gz" in errors[0] and "0" * 32 in errors[0], (result.stdout + result.stderr)[
        -3000:
    ]
    assert not (demo / SECOND).exists()
    assert (demo / FIRST).is_file()

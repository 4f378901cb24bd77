"""Which jobs a corpus becomes: PMC file lists beside their packages, cloud batches."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from workflow_scripts.config.plan import (
    cloud_corpora,
    corpus_downloads,
    corpus_files,
    fetch_table,
    parse_extra_inputs,
)
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "config.schema.yaml"
FULL = yaml.safe_load((ROOT / "config.yaml").read_text())
DEMO = yaml.safe_load((ROOT / "demo" / "config.yaml").read_text())


def test_demo_package_gets_its_file_list_downloaded_and_passed_to_the_parser():
    study = load_config(copy.deepcopy(DEMO), SCHEMA)
    assert [f.name for f in corpus_files(study, "pmc")] == ["oa_demo.tar.gz"]
    assert [f.name for f in corpus_downloads(study, "pmc")] == ["oa_demo.tar.gz", "oa_demo.filelist.csv"]
    assert fetch_table(study, "pmc")["oa_demo.filelist.csv"] == (
        "--url raw_source/pmc/oa_demo.filelist.csv --md5-url raw_source/pmc/oa_demo.filelist.csv.md5"
    )
    assert parse_extra_inputs(study, "pmc", "oa_demo.tar.gz") == {"filelist": "results/raw/pmc/oa_demo.filelist.csv"}
    assert parse_extra_inputs(study, "pubmed", "pubmed26n0001.xml.gz") == {}
    assert cloud_corpora(study) == []


def test_bulk_package_file_list_follows_the_published_naming():
    cfg = copy.deepcopy(FULL)
    cfg["corpora"]["pmc"]["source"] = {
        "url": "https://ftp.ncbi.nlm.nih.gov/pub/pmc/deprecated/oa_bulk/oa_comm/xml",
        "checksums": "none",
        "files": ["oa_comm_xml.PMC000xxxxxx.baseline.2024-12-18.tar.gz"],
        "filelist": "{package}.filelist.csv",
    }
    study = load_config(cfg, SCHEMA)
    assert fetch_table(study, "pmc")["oa_comm_xml.PMC000xxxxxx.baseline.2024-12-18.filelist.csv"] == (
        "--url https://ftp.ncbi.nlm.nih.gov/pub/pmc/deprecated/oa_bulk/oa_comm/xml/"
        "oa_comm_xml.PMC000xxxxxx.baseline.2024-12-18.filelist.csv"
    )


def test_full_study_reads_pmc_from_the_cloud_in_batches():
    study = load_config(copy.deepcopy(FULL), SCHEMA)
    assert cloud_corpora(study) == ["pmc"]
    batches = corpus_files(study, "pmc")
    assert len(batches) == 512 and batches[0].name == "batch~0"
    assert [f.name for f in corpus_downloads(study, "pmc")] == ["pmc-metadata.txt"]
    assert parse_extra_inputs(study, "pmc", "batch~7") == {"filelist": "results/raw/pmc/batch~7.filelist.csv"}


@pytest.mark.parametrize(
    "source,message",
    [
        ({"url": "u", "layout": "cloud"}, "corpora.pmc.source.inventory: the cloud layout needs"),
        ({"url": "u", "files": ["a.tar.gz"], "filelist": "list.csv"}, "corpora.pmc.source.filelist: must contain"),
        ({"url": "u", "layout": "cloud", "inventory": "i.txt", "batches": 0}, "corpora.pmc.source.batches"),
    ],
)
def test_bad_pmc_sources_name_the_key(source, message):
    cfg = copy.deepcopy(FULL)
    cfg["corpora"]["pmc"]["source"] = source
    with pytest.raises(PipelineError, match=message):
        load_config(cfg, SCHEMA)


def test_cloud_layout_is_for_pmc_only():
    cfg = copy.deepcopy(FULL)
    cfg["corpora"]["mimic"]["source"].update(layout="cloud", inventory="i.txt")
    with pytest.raises(PipelineError, match="corpora.mimic.source: layout cloud and filelist apply to pmc"):
        load_config(cfg, SCHEMA)

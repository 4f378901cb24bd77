"""A user's own task whose local dev file is empty: the run stops naming the config key that
points at the file, and once the user corrects the file, the rerun copies it again and prepares
the task from it (a stale copy under results/raw is never read)."""

from __future__ import annotations

import json
import shutil

import yaml
from workflow_harness import ROOT, copy_demo, run_demo

CARD = "results/tasks/my-ner/data_card.json"


def test_a_corrected_local_task_file_is_read_again(tmp_path):
    demo = copy_demo(tmp_path)
    mine = tmp_path / "my task files"
    shutil.copytree(ROOT / "demo" / "raw_source" / "tasks" / "demo-ner", mine)
    dev = (mine / "devel.tsv").read_bytes()
    (mine / "devel.tsv").write_bytes(b"")
    config = yaml.safe_load((demo / "config.yaml").read_text())
    task = {k: v for k, v in config["tasks"]["demo-ner"].items() if k not in ("expected_counts", "reference")}
    task["source"] = {"files": {f: {"url": str(mine / f)} for f in ("train.tsv", "devel.tsv", "test.tsv")}}
    config["tasks"]["my-ner"] = {**task, "display": "My NER"}
    (demo / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    failed = run_demo(demo, "-c1", CARD)
    assert failed.returncode != 0
    log = (demo / "results/logs/prepare_task/my-ner.log").read_text()
    assert "task my-ner: split dev is empty; check tasks.my-ner.source.files.devel.tsv in your config" in log

    (mine / "devel.tsv").write_bytes(dev)
    fixed = run_demo(demo, "-c1", CARD)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    card = json.loads((demo / CARD).read_text())
    assert card["splits"]["dev"]["examples"] == 50

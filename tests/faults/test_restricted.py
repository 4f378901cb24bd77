"""Restricted marks follow the data: a MIMIC corpus without `restricted: true`, a vocabulary
learned from it, models pretrained, continued or distilled from either, their runs, the
table cells and the plot labels are all marked; nothing else is."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import matplotlib.text
import pytest
import yaml

from workflow_scripts.config import plan, step_settings
from workflow_scripts.config.pretrain_seeds import instance
from workflow_scripts.config.restricted import restricted
from workflow_scripts.config.study import load_study
from workflow_scripts.report import plots, tables
from workflow_scripts.report.settings import load
from workflow_scripts.tasks.metrics import metric_names

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def study():
    cfg = copy.deepcopy(yaml.safe_load((ROOT / "demo" / "config.yaml").read_text()))
    del cfg["corpora"]["mimic"]["restricted"]  # the key a user forgets
    cfg["tasks"]["demo-nli"]["restricted"] = True  # as the registry's MedNLI, a credentialed task
    cfg["vocabularies"]["clin-voc"] = {"corpora": ["mimic"], "train": cfg["vocabularies"]["demo-wordpiece"]["train"]}
    tiny = cfg["models"]["demo-roberta"]["pretrain"]
    cfg["models"]["clin-voc-pm"] = {"kind": "pretrain", "vocab": "clin-voc", "corpora": ["pubmed"], "pretrain": tiny}
    student = cfg["models"]["demo-student"]
    cfg["models"]["m3-student"] = {**student, "teacher": "demo-roberta-m3", "display": "M3 student"}
    return load_study(cfg)


def test_marks_are_derived_from_the_graph(study):
    marks = restricted(study)
    assert marks.corpora == {"mimic"}
    assert marks.vocabularies == {"clin-voc"}
    seeds = study.seeded["demo-roberta-m3"]  # one model per pretraining seed, and the student follows them
    assert marks.models == {
        "demo-roberta-m3",  # the name its pooled rows and plot labels carry
        *seeds,
        "demo-roberta-m3-docs",
        "demo-modernbert-m3",
        "clin-voc-pm",
        "m3-student",
        *(seed.replace("demo-roberta-m3", "m3-student") for seed in seeds),
    }
    credentialed = {"demo-nli"}
    assert marks.tasks == credentialed
    assert step_settings.corpus_settings(study, "mimic")["corpus"]["restricted"] is True
    assert "--restricted" in plan.fetch_table(study, "mimic")["NOTEEVENTS.csv.gz"]
    task = next(t for t in study.resolved_tasks if t not in credentialed)
    assert step_settings.finetune_settings(study, "clin-voc-pm", task)["model"]["restricted"] is True
    assert step_settings.finetune_settings(study, "demo-roberta", task)["model"]["restricted"] is False


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


def test_tables_and_plots_mark_every_cell_and_label_from_mimic(study, tmp_path, monkeypatch):
    settings = step_settings.report_settings(study, str(ROOT))
    for r in settings["runs"]:
        model = instance(r["model"], r["pretrain_seed"]) if r["pretrain_seed"] is not None else r["model"]
        fs = step_settings.finetune_settings(study, model, r["task"])
        path = tmp_path / r["metrics"]
        path.parent.mkdir(parents=True, exist_ok=True)
        score = 0.5 + 0.01 * r["seed"]
        path.write_text(
            json.dumps(
                {  # as workflow_scripts.finetune.finetune writes it
                    "model": model,
                    "task": r["task"],
                    "fold": r["fold"],
                    "seed": r["seed"],
                    "metric": fs["task"]["metric"],
                    "dev": {"score": score},
                    "test": {"score": score, **{name: score for name in metric_names(fs["task"]["metric"])}},
                    "best_step": 1,
                    "steps": 2,
                    "restricted": fs["model"]["restricted"] or fs["task"]["restricted"],
                    "runtime_s": 1.0,
                }
            )
        )
    for model in ("demo-roberta", "demo-roberta-m3"):
        log = tmp_path / settings["pretrain_logs"][model]
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(json.dumps({"step": s, "loss": 5.0 - s, "lr": 1e-3}) + "\n" for s in (1, 2, 3)))
    path = tmp_path / "results/configs/report.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings, sort_keys=False))
    loaded = load(path)

    tables.build(loaded, tmp_path / "results/tables", tmp_path)
    with open(tmp_path / "results/tables/medians.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    marks = restricted(study)
    for row in rows:
        assert (row["restricted"] == "True") == (row["model"] in marks.models or row["task"] in marks.tasks), row
    assert any(r["model"] == "clin-voc-pm" and r["restricted"] == "True" for r in rows)
    assert {r["restricted"] for r in rows if r["task"] == "demo-nli"} == {"True"}

    for vocab in ("demo-wordpiece", "clin-voc"):
        diag = tmp_path / settings["vocab_diagnostics"][vocab]
        diag.parent.mkdir(parents=True, exist_ok=True)
        diag.write_text(
            json.dumps(
                {
                    "tokenizers": {
                        vocab: {"size": 1200, "fragmentation": {"demo-ner": {"all_words": 1.3, "entity_words": 1.9}}}
                    }
                }
            )
        )
    figures, save = {}, plots._save

    def capture(fig, p):
        figures[p.name] = _texts(fig)
        return save(fig, p)

    monkeypatch.setattr(plots, "_save", capture)
    plots.main(["--settings", str(path), "--out", str(tmp_path / "results/tables"), "--root", str(tmp_path)])
    scores, loss = figures["scores.png"], figures["pretrain_loss.png"]
    for name in ("RoBERTa-tiny PM+M3", "M3 student", "clin-voc-pm"):
        assert f"{name} †" in scores, name
    assert "RoBERTa-tiny PM+Voc" in scores and "RoBERTa-tiny PM+Voc †" not in scores
    nli = study.resolved_tasks["demo-nli"].spec.display
    assert any(t.split("\n")[0] == f"{nli} †" for t in scores)  # the title's second line names the statistic
    assert any("derived from credentialed data" in t for t in scores)
    assert "RoBERTa-tiny PM+M3 †" in loss and "RoBERTa-tiny PM+Voc" in loss
    vocab = figures["vocab_fragmentation.png"]
    assert any(t.startswith("clin-voc") and t.endswith("†") for t in vocab)
    assert not any(t.startswith("demo-wordpiece") and t.endswith("†") for t in vocab)


def test_heldout_table_marks_models_whose_provenance_chain_reaches_mimic(tmp_path):
    from workflow_scripts import provenance
    from workflow_scripts.report import heldout_table

    corpus = {}
    for name, kind in (("pm", "pubmed"), ("m3", "mimic")):
        corpus[name] = tmp_path / "corpus" / name
        corpus[name].mkdir(parents=True)
        (corpus[name] / "stats.json").write_text("{}")
        provenance.record(
            corpus[name],
            step="corpus.build",
            inputs={},
            outputs=[corpus[name] / "stats.json"],
            restricted=kind == "mimic",
        )
    models = []
    for name, data in (("base", "pm"), ("clinical", "m3")):
        out = tmp_path / "pretrain" / name
        out.mkdir(parents=True)
        provenance.record(
            out,
            step="pretrain",
            inputs={"corpus": [str(corpus[data])]},
            params={"name": name},
            extra={
                "result": {"heldout_loss": 2.0, "steps": 4, "heldout_masked_tokens": 100},
                "model": {"config": {"num_hidden_layers": 2}, "parameters": 1000},
            },
        )
        models.append(str(out))
    heldout_table.main(["--model", *models, "--out", str(tmp_path / "tables")])
    with open(tmp_path / "tables" / "heldout_mlm.csv", newline="") as fh:
        rows = {r["model"]: r["restricted"] for r in csv.DictReader(fh)}
    assert rows == {"base": "False", "clinical": "True"}
    md = (tmp_path / "tables" / "heldout_mlm.md").read_text()
    assert "| clinical † |" in md and "| base |" in md and "derived from credentialed data" in md

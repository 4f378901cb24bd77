"""Figures from small real inputs, and placeholders that say what is absent."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import matplotlib.image
import pytest
import yaml

from workflow_scripts.errors import PipelineError
from workflow_scripts.report import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def settings(root: Path, with_inputs: bool) -> Path:
    runs = []
    for model in ("pm", "base"):
        for seed in (1, 2, 3):
            rel = f"results/finetune/{model}/ncbi/fold~0/seed~{seed}/metrics.json"
            runs.append({"model": model, "task": "ncbi", "fold": 0, "seed": seed, "metrics": rel})
            if with_inputs:
                p = root / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(
                    json.dumps({"metric": "entity_f1", "dev": {"score": 0.8}, "test": {"score": 0.8 + seed / 100}})
                )
    data = {
        "models": {"pm": {"display": "ours-PM"}, "base": {"display": "base"}},
        "tasks": {"ncbi": {"display": "NCBI-disease", "type": "ner", "metric": "entity_f1", "seeds": [1, 2, 3]}},
        "runs": runs,
        "pretrain_logs": {"pm": "results/pretrain/pm/train_log.jsonl"},
        "vocab_diagnostics": {"pm": "results/vocab/pm/diagnostics.json"},
    }
    if with_inputs:
        log = root / "results/pretrain/pm/train_log.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"step": s, "loss": 9.0 / (1 + s), "tokens_per_s": 500.0} for s in range(0, 50, 5)]
        lines.append({"step": 50, "eval_loss": 3.0})
        log.write_text("".join(json.dumps(x) + "\n" for x in lines))
        diag = root / "results/vocab/pm/diagnostics.json"
        diag.parent.mkdir(parents=True, exist_ok=True)
        diag.write_text(
            json.dumps(
                {
                    "vocab": "pm",
                    "tokenizers": {
                        "pm": {
                            "size": 8000,
                            "term_coverage": 0.9,
                            "fragmentation": {"ncbi": {"all_words": 1.1, "entity_words": 1.3}},
                        },
                        "general": {
                            "size": 30000,
                            "term_coverage": 0.4,
                            "fragmentation": {
                                "ncbi": {"all_words": 1.3, "entity_words": 2.1},
                                "notes": {"all_words": 1.2, "entity_words": None},
                            },
                        },
                    },
                }
            )
        )
    path = root / "report.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_figure_and_its_provenance(tmp_path):
    cfg = settings(tmp_path, with_inputs=True)
    out = tmp_path / "results/tables"
    plots.main(["--settings", str(cfg), "--out", str(out), "--root", str(tmp_path)])
    for name in plots.FIGURES:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
        height, width, _ = matplotlib.image.imread(out / name).shape
        assert width > 400 and height > 200
    rec = json.loads((out / "plots.provenance.json").read_text())
    assert rec["step"] == "report.plots"
    assert len(rec["inputs"]["metrics"]) == 6
    assert rec["inputs"]["pretrain_logs"][0]["path"].endswith("train_log.jsonl")
    assert sorted(Path(o["path"]).name for o in rec["outputs"]) == sorted(plots.FIGURES)


def test_absent_inputs_give_placeholders_and_warnings(tmp_path, caplog):
    cfg = settings(tmp_path, with_inputs=False)
    out = tmp_path / "tables"
    with caplog.at_level(logging.WARNING):
        plots.main(["--settings", str(cfg), "--out", str(out), "--root", str(tmp_path)])
    for name in plots.FIGURES:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    text = caplog.text
    assert "scores.png: No fine-tuning results yet" in text
    assert "pretraining log of pm not found" in text
    assert "vocabulary diagnostics of pm not found" in text
    assert "pretrain_speed.png: No pretraining log with learning rate, speed or memory lines found." in text


def test_loss_log_reading(tmp_path):
    log = tmp_path / "train_log.jsonl"
    log.write_text('{"step": 1, "loss": 5.0}\n{"step": 2, "eval_loss": 4.0}\n\n{"step": 3, "loss": 4.5}\n')
    assert plots.read_log(log)["mlm"] == [(1.0, 5.0), (3.0, 4.5)]
    # ELECTRA: the generator's MLM loss, not the total with the weighted discriminator loss
    log.write_text('{"step": 1, "loss": 40.0, "loss_generator": 6.0, "loss_discriminator": 0.7}\n')
    assert plots.read_log(log)["mlm"] == [(1.0, 6.0)]
    log.write_text('{"step": 1, "loss": 5.0}\n{"step": 2, "loss": \n')
    with pytest.raises(PipelineError, match=r"train_log.jsonl:2: not valid JSON"):
        plots.read_log(log)


def test_speed_columns_are_read_and_a_missing_mfu_is_not_a_point(tmp_path):
    log = tmp_path / "train_log.jsonl"
    rows = [
        {"step": 10, "loss": 7.0, "lr": 1e-4, "tokens_per_s": 900.0, "mfu": None, "memory_mb": 310.5, "phase": 0},
        {"step": 20, "loss": 6.5, "lr": 2e-4, "tokens_per_s": 950.0, "mfu": None, "memory_mb": 312.0, "phase": 1},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    series = plots.read_log(log)
    assert series["lr"] == [(10.0, 1e-4), (20.0, 2e-4)]
    assert series["tokens_per_s"] == [(10.0, 900.0), (20.0, 950.0)]
    assert series["memory_mb"][-1] == (20.0, 312.0)
    assert "mfu" not in series


def test_speed_figure_draws_each_logged_column(tmp_path, caplog):
    cfg = settings(tmp_path, with_inputs=True)
    out = tmp_path / "tables"
    with caplog.at_level(logging.WARNING):
        plots.main(["--settings", str(cfg), "--out", str(out), "--root", str(tmp_path)])
    assert "pretrain_speed.png" not in caplog.text  # a real figure, not the placeholder
    height, width, _ = matplotlib.image.imread(out / "pretrain_speed.png").shape
    assert width > 600 and height > 400


def test_diagnostics_of_the_wrong_shape_name_the_key(tmp_path):
    diag = tmp_path / "diagnostics.json"
    diag.write_text(json.dumps({"vocab": "pm", "fragmentation": {}}))
    with pytest.raises(PipelineError, match=r"diagnostics.json: key 'tokenizers' must be a mapping"):
        plots.read_diagnostics(diag)

"""The cost table from a real tiny pretraining run's records: tokens against its training log, FLOPs against
FLOPS_FORMULA x tokens, device-hours against the provenance records; inference speed; the Pareto frontier."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import torch
import yaml
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

from workflow_scripts import provenance
from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain.model import train_flops_per_token
from workflow_scripts.report import cost, inference_speed, pareto
from workflow_scripts.report.cost_records import pool_speeds, read_training, read_usage, throughput, tokens_and_flops
from workflow_scripts.report.pareto import Panel, Point, frontier, sentence

torch.set_num_threads(1)
PHASES = [{"seq_len": 16, "fraction": 0.5}, {"seq_len": 32, "fraction": 0.5, "mask_prob": 0.3}]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A two-phase run: 10 steps at 16 tokens, then 10 at 32 with another masking rate."""
    root = tmp_path_factory.mktemp("cost")
    base = fx.corpus_and_tokenizers(root)
    return fx.pretrain(base, root, max_steps=20, log_every=5, checkpoint_every=10, phases=PHASES)


def _set_times(record: Path, started: str, ended: str) -> None:
    data = json.loads(record.read_text())
    data.update(started=started, ended=ended)
    record.write_text(json.dumps(data))


def test_tokens_per_phase_are_the_logged_steps_times_batch_and_length(run):
    rows = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [5, 10, 15, 20] and [r["seq_len"] for r in rows] == [16, 16, 32, 32]
    t = read_training(run / "provenance.json")
    assert t.tokens_per_phase == [10 * 8 * 16, 10 * 8 * 32]
    assert t.tokens == 10 * 8 * 16 + 10 * 8 * 32 and t.steps == 20
    assert t.peak_memory_mb == max(r["memory_mb"] for r in rows)


def test_flops_are_the_formula_times_the_tokens_of_each_phase(run):
    model = AutoModelForMaskedLM.from_pretrained(run)
    expected = 10 * 8 * 16 * train_flops_per_token(model, 16, 0.15) + 10 * 8 * 32 * train_flops_per_token(
        model, 32, 0.3
    )
    assert read_training(run / "provenance.json").flops == pytest.approx(expected, rel=1e-9)


def test_device_hours_are_processes_times_the_recorded_wall_time(run, tmp_path):
    record = tmp_path / "provenance.json"
    record.write_text((run / "provenance.json").read_text())
    (tmp_path / "train_log.jsonl").write_text((run / "train_log.jsonl").read_text())
    data = json.loads(record.read_text())
    data.update(started="2026-01-01T00:00:00+00:00", ended="2026-01-01T01:30:00+00:00", accelerator="4 x NVIDIA H100")
    data["result"]["world_size"] = 4
    record.write_text(json.dumps(data))
    t = read_training(record)
    assert t.device_hours == pytest.approx(6.0) and t.device == "4 x NVIDIA H100"


def test_fine_tuning_device_hours_sum_the_runs_records(tmp_path):
    records = []
    for i, minutes in enumerate((30, 45)):
        rec = tmp_path / f"run{i}.json"
        rec.write_text(
            json.dumps(
                {
                    "started": "2026-01-01T00:00:00+00:00",
                    "ended": f"2026-01-01T00:{minutes}:00+00:00",
                    "accelerator": "cpu",
                }
            )
        )
        records.append(rec)
    usage = read_usage([*records, tmp_path / "not-run-yet.json"])
    assert usage.runs == 2 and usage.device_hours == pytest.approx(1.25) and usage.devices == {"cpu"}


def test_a_log_line_out_of_order_is_named():
    rows = [{"step": 5, "phase": 0, "seq_len": 16}, {"step": 5, "phase": 0, "seq_len": 16}]
    with pytest.raises(PipelineError, match=r"log:2: step 5 does not follow step 5"):
        tokens_and_flops(rows, 8, 0, Path("log"))


def test_published_compute_without_its_columns_is_named_even_when_empty(tmp_path):
    table = tmp_path / "pretraining_compute.csv"
    table.write_text("model,compute\n")
    with pytest.raises(PipelineError, match="compute.csv: expected the columns checkpoint, compute, source"):
        cost.read_reported(table)


def test_inference_speed_counts_parameters_and_skips_lengths_beyond_the_positions(run, tmp_path):
    settings = tmp_path / "speed.yaml"
    settings.write_text(yaml.safe_dump({"lengths": [16, 4096], "batch_size": 4, "warmup": 1, "batches": 2}))
    out = tmp_path / "speed" / "m.json"
    inference_speed.main(["--settings", str(settings), "--model", str(run), "--out", str(out)])
    record = json.loads(out.read_text())
    encoder = AutoModel.from_pretrained(run, add_pooling_layer=False)
    assert encoder.pooler is None
    embeddings = sum(p.numel() for p in encoder.embeddings.parameters() if p.dim() == 2)
    assert record["parameters"]["total"] == sum(p.numel() for p in encoder.parameters())
    assert record["parameters"]["non_embedding"] == record["parameters"]["total"] - embeddings
    measured, skipped = record["lengths"]
    assert measured["batch_size"] == 4 and measured["sequences_per_s"] > 0 and record["precision"] == "fp32"
    passes = measured["pass_seconds"]
    assert passes["min"] <= passes["median"] <= passes["max"] and measured["seconds"] >= 2 * passes["min"]
    assert measured["sequences_per_s"] == pytest.approx(4 / passes["median"])
    assert record["architecture"] == inference_speed.architecture(encoder.config)
    assert skipped == {"seq_len": 4096, "skipped": "beyond the model's 32 positions"}
    assert provenance.load(provenance.provenance_path(out))["inputs"]["model"]["path"] == str(run)


def test_the_architecture_fingerprint_ignores_names_and_dropout_only(run):
    config = AutoConfig.from_pretrained(run)
    same = AutoConfig.from_pretrained(run, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.3)
    same._name_or_path = "elsewhere"
    assert inference_speed.architecture(same) == inference_speed.architecture(config)
    for change in ({"num_hidden_layers": config.num_hidden_layers + 1}, {"hidden_act": "relu"}):
        assert inference_speed.architecture(AutoConfig.from_pretrained(run, **change)) != inference_speed.architecture(
            config
        )


def _speed(sequences_per_s: float, architecture: str | None = "a", device: str = "cpu") -> dict:
    record = {"device": device, "precision": "fp32", "threads": 1, "batch_size": 4, "parameters": {}}
    record["lengths"] = [{"seq_len": 16, "sequences_per_s": sequences_per_s}, {"seq_len": 512, "skipped": "beyond"}]
    return record if architecture is None else {**record, "architecture": architecture}


def test_models_of_one_architecture_measured_alike_share_the_median_of_their_measurements():
    pooled = pool_speeds(
        {
            "pm": _speed(100.0),
            "control": _speed(300.0),
            "seed-43": _speed(200.0),
            "student": _speed(900.0, architecture="b"),
            "older": _speed(400.0, architecture=None),  # a record written before the fingerprint: its own figure
            "on-a-gpu": _speed(5000.0, device="NVIDIA H100"),
        }
    )
    figures = {name: (throughput(r, 16), r["measurements"]) for name, r in pooled.items()}
    assert figures == {
        "pm": (200.0, 3),
        "control": (200.0, 3),
        "seed-43": (200.0, 3),
        "student": (900.0, 1),
        "older": (400.0, 1),
        "on-a-gpu": (5000.0, 1),
    }
    assert pooled["pm"]["lengths"][1] == {"seq_len": 512, "skipped": "beyond"}


def test_frontier_of_a_hand_made_example():
    points = [
        Point("cheap", 1.0, 70.0),
        Point("mid", 5.0, 80.0),
        Point("dominated", 6.0, 75.0),
        Point("best", 20.0, 85.0),
        Point("tie-worse", 5.0, 79.0),
        Point("control", 0.0, 90.0, control=True),
    ]
    assert [p.name for p in frontier(points, lower_is_better=True)] == ["cheap", "mid", "best"]
    # throughput: more is better, so the fastest model leads the frontier
    assert [p.name for p in frontier(points, lower_is_better=False)] == ["best"]
    text = sentence(Panel("All mean", "device-hours", True, points))
    assert text.startswith("All mean against device-hours: the Pareto frontier holds cheap (70.0 at 1), mid")
    assert text.endswith("; 2 others are dominated.")


def test_points_that_would_print_over_each_other_share_one_label():
    points = [
        Point("seed 42", 3300.0, 63.0),
        Point("seed 43", 3300.0, 63.0),  # the same score and throughput
        Point("nearly", 3310.0, 63.1),  # within 2% of both spans
        Point("far", 2200.0, 72.0),
        Point("below", 3300.0, 45.0),
    ]
    labels = {p.name: label for p, label in pareto._labels(points, log=False)}
    assert labels == {"seed 42": "seed 42\nseed 43\nnearly", "far": "far", "below": "below"}


def test_no_two_labels_of_a_panel_print_over_each_other():
    # the demo's layout: labels of models a point or two apart on the score
    points = [
        Point(name, cost, score)
        for name, cost, score in [
            ("RoBERTa-tiny PM+M3 documents", 0.0569, 64.0),
            ("RoBERTa-tiny PM+M3 (pretraining seed 42)", 0.0572, 61.9),
            ("RoBERTa-tiny distilled", 0.0692, 62.2),
            ("RoBERTa-tiny PM+Voc", 0.0469, 67.1),
            ("RoBERTa-tiny train longer", 0.0544, 44.2),
        ]
    ]
    fig = pareto.figure([Panel("BLURB score", "device-hours", True, points)], "t")
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) == len(points)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_cost_table_from_records(run, tmp_path):
    speed = tmp_path / "speed.json"
    speed.write_text(
        json.dumps(
            {
                "parameters": {"total": 10, "non_embedding": 4},
                "device": "cpu",
                "precision": "fp32",
                "lengths": [{"seq_len": 16, "batch_size": 4, "sequences_per_s": 50.0}],
            }
        )
    )
    (tmp_path / "groups.csv").write_text("model,group,value,restricted\nm,All,70.0,False\next,All,80.0,True\n")
    (tmp_path / "compute.csv").write_text('checkpoint,compute,source\norg/ext,8 GPUs for 2 days,"Paper 2020"\n')
    settings = {
        "models": {
            "m": {"display": "M", "kind": "pretrain", "training": str(run / "provenance.json"), "speed": str(speed)},
            "ext": {"display": "Ext", "kind": "external", "speed": str(speed), "checkpoint": "org/ext"},
        },
        "groups": str(tmp_path / "groups.csv"),
        "blurb": str(tmp_path / "absent.csv"),
        "reported_compute": str(tmp_path / "compute.csv"),
        "lengths": [16],
    }
    (tmp_path / "cost.yaml").write_text(yaml.safe_dump(settings))
    out = tmp_path / "tables"
    cost.main(["--settings", str(tmp_path / "cost.yaml"), "--out", str(out)])
    rows = {r["model"]: r for r in csv.DictReader(open(out / "cost.csv"))}
    assert rows["m"]["tokens"] == str(10 * 8 * 16 + 10 * 8 * 32) and rows["m"]["tokens_per_phase"] == "1280;2560"
    assert rows["m"]["sequences_per_s_at_16"] == "50.0" and rows["ext"]["reported_compute"] == "8 GPUs for 2 days"
    assert rows["ext"]["restricted"] == "True" and rows["ext"]["train_device_hours"] == ""
    md = (out / "cost.md").read_text()
    assert "Ext †" in md and "[Paper 2020]" in md
    assert "All mean against inference sequences/s at 16 tokens: the Pareto frontier holds" in md
    sources = provenance.load(out / "cost.provenance.json")["sources"]
    assert sources["m"]["training"] == [str(run / "provenance.json"), str(run / "train_log.jsonl")]
    assert (out / "cost.png").stat().st_size > 0


def test_the_demo_studys_cost_settings_name_each_models_records_and_upstream():
    from workflow_scripts.config.cost_plan import cost_settings
    from workflow_scripts.config.validate import load_config

    root = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((root / "demo" / "config.yaml").read_text())
    settings = cost_settings(load_config(cfg, root / "schemas" / "config.schema.yaml"), "..")["models"]
    assert settings["demo-modernbert-m3"]["upstream"] == {"demo-modernbert": 800}
    assert settings["demo-student"]["upstream"] == {"demo-roberta": None}
    for seed in (42, 43):  # a row per pretraining seed, named so, plotted at the model's pooled score
        m3 = settings[f"demo-roberta-m3/pseed~{seed}"]
        assert m3["upstream"] == {"demo-roberta": None} and m3["restricted"]
        assert m3["display"] == f"RoBERTa-tiny PM+M3 (pretraining seed {seed})" and m3["scored_as"] == "demo-roberta-m3"
    assert settings["demo-roberta"]["scored_as"] == "demo-roberta"
    # a control copies only its init's shape; the baseline has no checkpoint to time
    assert settings["demo-control"]["upstream"] == {} and settings["demo-control"]["training"] is None
    assert settings["demo-baseline"]["speed"] is None
    assert settings["demo-roberta"]["training"] == "results/pretrain/demo-roberta/provenance.json"
    assert (
        settings["demo-roberta"]["runs"][0].endswith("/provenance.json") and len(settings["demo-roberta"]["runs"]) > 1
    )

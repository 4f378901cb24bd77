"""Precision of fine-tuning: ``auto`` is bf16 autocast on a GPU and fp32 on the CPU, and bf16
autocast (run here on the CPU) scores within the seed spread of fp32."""

from __future__ import annotations

import statistics

import pytest
import torch
from test_finetune_run import make_bert, run_cli, write_task

from workflow_scripts import optim
from workflow_scripts.config.gpu_share import run_precision
from workflow_scripts.finetune.device import precision_for, prepare
from workflow_scripts.finetune.settings import FinetuneSettings
from workflow_scripts.tasks.spec import TASK_TYPES

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_bert(tmp_path_factory.mktemp("bert"))


def test_auto_is_bf16_on_a_gpu_fp32_on_the_cpu_and_for_regression():
    assert precision_for("auto", CUDA, "ner") == "bf16"
    assert precision_for("auto", CUDA, "similarity") == "fp32"
    assert precision_for("fp16", CUDA, "similarity") == "fp16"
    assert {precision_for(p, CPU, "ner") for p in ("auto", "bf16", "fp16", "fp32")} == {"fp32"}
    assert FinetuneSettings().precision == "auto"


@pytest.mark.parametrize("precision", ["auto", "bf16", "fp16", "fp32"])
def test_the_planners_memory_estimate_sizes_a_run_in_the_precision_it_trains_in(precision):
    for task_type in TASK_TYPES:
        planned = run_precision({"finetune": {"precision": precision}, "task": {"type": task_type}})
        assert planned == precision_for(precision, CUDA, task_type), task_type


def test_a_gpu_run_allows_tf32_and_a_cpu_run_leaves_matmuls_alone(monkeypatch):
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        device, cfg = prepare(FinetuneSettings(device="cpu"), "ner")
        assert (device.type, cfg.precision, torch.get_float32_matmul_precision()) == ("cpu", "fp32", "highest")
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        device, cfg = prepare(FinetuneSettings(), "ner")
        assert (device.type, cfg.precision, torch.get_float32_matmul_precision()) == ("cuda", "bf16", "high")
    finally:
        torch.set_float32_matmul_precision(before)


def test_cpu_runs_record_fp32_and_keep_their_numerics(tmp_path, bert):
    task_dir = write_task(tmp_path, "nli")
    auto = run_cli(tmp_path, bert, "nli", task_dir=task_dir, name="auto")
    fp32 = run_cli(tmp_path, bert, "nli", task_dir=task_dir, name="fp32", finetune={"precision": "fp32"})
    assert auto["precision"] == fp32["precision"] == "fp32"
    assert auto["history"] == fp32["history"] and auto["test"] == fp32["test"]


SEEDS = (1, 2, 3, 4, 5, 6)
# pair tasks reach their ceiling in most seeds at 20 epochs; at 8 a seed's score is a coin toss
CONVERGED = {"nli": {"epochs": 20}, "qa": {"epochs": 20}, "doc_classification": {}}


@pytest.mark.parametrize("task_type", list(CONVERGED))
def test_bf16_autocast_scores_within_the_seed_spread_of_fp32(tmp_path, bert, monkeypatch, task_type):
    """Measured (test scores, seeds 1-6, AVX2 kernels): nli 1.0 in every seed, both precisions;
    qa 1.0 in every seed, both; doc_classification fp32 0.704, 0.959, 1.0, 0.704, 0.968, 1.0 and
    bf16 the same but 0.969 for 0.968 (with ATen's plain kernels, 1.0 for 0.968). Seed spread of
    fp32 there: 0.704 to 1.0.
    The check: bf16's mean score differs from fp32's, seed for seed, by at most 0.1 on average
    (one seed in six moving by half the test set is 0.083; a bf16 run that stopped learning falls
    to chance, 0.25 to 0.65 below), and every first logged loss is within 1% of fp32's."""
    task_dir = write_task(tmp_path, task_type)
    runs = {}
    for precision in ("fp32", "bf16"):
        if precision == "bf16":
            monkeypatch.setattr(optim, "amp_dtype", lambda device, precision: torch.bfloat16)
        runs[precision] = [
            run_cli(
                tmp_path,
                bert,
                task_type,
                seed=s,
                task_dir=task_dir,
                name=f"{precision}-{s}",
                finetune=CONVERGED[task_type],
            )
            for s in SEEDS
        ]
    fp32 = [m["test"]["score"] for m in runs["fp32"]]
    bf16 = [m["test"]["score"] for m in runs["bf16"]]
    assert abs(statistics.mean(bf16) - statistics.mean(fp32)) <= 0.1, (fp32, bf16)
    assert statistics.mean(fp32) > 0.8, fp32  # the comparison is between runs that learn
    for a, b in zip(runs["fp32"], runs["bf16"], strict=True):
        assert b["history"][0]["loss"] == pytest.approx(a["history"][0]["loss"], rel=0.01)

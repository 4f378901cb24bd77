"""Memory estimate of a training micro-step against the peak measured on the CPU, and micro_batch_size: auto."""

from __future__ import annotations

import json
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import torch
import yaml

from workflow_scripts.config.resources import snakemake_resources
from workflow_scripts.config.study import load_study
from workflow_scripts.encoder_shape import Shape
from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain import memory
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.pretrain.model import MLMObjective
from workflow_scripts.pretrain.modernbert import build_modernbert
from workflow_scripts.pretrain.residual import keep_residual_in_autocast_dtype
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.tokenizer import Specials
from workflow_scripts.typed import parse

torch.set_num_threads(1)
STUDY_CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"


def _model(hidden, layers, vocab, seq_len, dropout):
    return fx.tiny_bert(hidden, layers, 4, vocab, seq_len=seq_len, dropout=dropout)


def measured_step_bytes(model, micro, seq_len, mask_prob=0.15, bf16=False) -> float:
    """Peak of one forward and backward pass (``bf16``: under CPU autocast, the dtypes a GPU's autocast gives),
    plus the fp32 weights and AdamW moments already live."""
    objective, vocab = MLMObjective(model), model.config.vocab_size
    ids = torch.randint(5, vocab, (micro, seq_len))
    n = int(mask_prob * micro * seq_len)
    positions = torch.randperm(micro * seq_len)[:n]

    def step():
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            loss, _ = objective(ids, positions, ids.reshape(-1)[positions], {"masked": float(n)})
        loss.backward()

    return memory.measured_peak_bytes(step) + 12 * sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("dropout", [0.0, 0.1], ids=["fused-attention", "math-attention"])
def test_estimate_is_within_15_percent_of_the_measured_peak(dropout):
    model = _model(128, 2, 1000, 128, dropout)
    estimate = memory.mlm_estimate(model, PretrainSettings(), torch.device("cpu"))
    for micro in (4, 8):
        measured = measured_step_bytes(model, micro, 128)
        assert abs(estimate(micro, 128) / measured - 1) < 0.15, (micro, estimate(micro, 128), measured)


def test_a_bf16_residual_stream_saves_what_the_estimate_says():
    """Under autocast with ``residual_stream: autocast`` the q, k and v projections share the norm's bf16 output
    instead of saving three casts of its fp32 one (measured 1.24 MB less at 8 x 128, estimated 1.05 MB)."""
    peaks, estimates = {}, {}
    for stream in ("fp32", "autocast"):
        model = _model(128, 2, 1000, 128, 0.0)
        if stream == "autocast":
            keep_residual_in_autocast_dtype(model)
        p = memory.Precision(autocast=True, dropout=False, fused_attention=True, residual_low=stream == "autocast")
        peaks[stream] = measured_step_bytes(model, 8, 128, bf16=True)
        estimates[stream] = memory.mlm_step_bytes(Shape.of(model), 8, 128, 0.15, p)
        assert abs(estimates[stream] / peaks[stream] - 1) < 0.15, (stream, estimates[stream], peaks[stream])
    saved, estimated = peaks["fp32"] - peaks["autocast"], estimates["fp32"] - estimates["autocast"]
    assert saved > 0 and abs(estimated / saved - 1) < 0.25, (estimated, saved)


@pytest.mark.parametrize("dropout", [0.0, 0.1], ids=["fused-attention", "math-attention"])
def test_modernbert_estimate_is_within_15_percent_of_the_measured_peak(dropout):
    """GeGLU's 2 x i wide input projection, the rotated q and k, two pre-norms and the final norm."""
    own = {"local_attention": 64}
    shape = {"hidden_size": 128, "num_layers": 3, "num_heads": 4, "dropout": dropout, "attention_dropout": dropout}
    s = parse(PretrainSettings, {"architecture": "modernbert", "modernbert": own, **shape}, "p")
    model = build_modernbert(s, Specials(cls=2, sep=3, mask=4, pad=0, vocab_size=1000), 128)
    estimate = memory.mlm_estimate(model, s, torch.device("cpu"))
    for micro in (4, 8):
        measured = measured_step_bytes(model, micro, 128)
        assert abs(estimate(micro, 128) / measured - 1) < 0.15, (micro, estimate(micro, 128), measured)


def test_auto_takes_the_largest_micro_batch_that_fits_and_divides_the_share():
    model = _model(64, 2, 500, 64, 0.0)
    phases = [{"seq_len": 64, "fraction": 0.5}, {"seq_len": 128, "fraction": 0.5}]
    s = parse(PretrainSettings, {"batch_size": 96, "micro_batch_size": "auto", "phases": phases}, "p")
    estimate = memory.mlm_estimate(model, s, torch.device("cpu"))
    per_sequence = estimate(2, 128) - estimate(1, 128)
    fixed = estimate(1, 128) - per_sequence
    # room for 13.5 sequences at length 128 (the longest phase): 12 is the largest divisor of 48 below it
    gpu_mem_gb = (fixed + 13.5 * per_sequence) / memory.USABLE_FRACTION / memory.GB
    assert memory.resolve_micro_batch(s, 2, estimate, gpu_mem_gb).micro_batch_size == 12
    assert memory.resolve_micro_batch(s, 96, estimate, gpu_mem_gb).micro_batch_size == 1
    fixed_micro = parse(PretrainSettings, {"batch_size": 96, "micro_batch_size": 8}, "p")
    assert memory.resolve_micro_batch(fixed_micro, 2, estimate, gpu_mem_gb) is fixed_micro
    with pytest.raises(PipelineError, match=r"p\.micro_batch_size: 'max' is not int or one of 'auto'"):
        parse(PretrainSettings, {"micro_batch_size": "max"}, "p")


def test_a_run_resumed_on_a_smaller_card_continues_with_a_smaller_micro_batch(tmp_path):
    base = {"corpus": fx.make_corpus(tmp_path / "corpus", 60)}
    tokenizer = fx.make_wordpiece(tmp_path / "wordpiece", fx.documents(60))
    settings = fx.write_settings(
        tmp_path / "m.yaml", micro_batch_size="auto", max_steps=4, checkpoint_every=2, log_every=2
    )
    out = tmp_path / "m"

    def run(gpu_mem_gb: float, stop_after: int | None = None) -> None:
        argv = ["--settings", str(settings), "--corpus", str(base["corpus"]), "--tokenizer", str(tokenizer)]
        argv += ["--out", str(out), "--gpu-mem-gb", str(gpu_mem_gb)]
        pretrain_cli.main(argv + (["--stop-after", str(stop_after)] if stop_after else []))

    run(80.0, stop_after=2)  # the whole share of 8 fits
    run(1e-4)  # 100 kB: one sequence at a time; the checkpoint made with 8 is resumed, not refused
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["micro_batch_size"] == 1
    assert provenance["params"]["pretrain"]["micro_batch_size"] == "auto"
    steps = [json.loads(line)["step"] for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert steps == [2, 4]


def test_the_rules_pass_each_jobs_gpu_memory():
    config = yaml.safe_load(STUDY_CONFIG.read_text())
    config["models"]["ours-base-pm"]["resources"] = {"gpu": 8, "gpu_mem_gb": 40}
    study = load_study(config)
    assert snakemake_resources(study.job_resources("pretrain", "ours-base-pm"), True)["gpu_mem_gb"] == 40
    assert snakemake_resources(study.job_resources("distill", "ours-distilled-align"), True)["gpu_mem_gb"] == 80
    for rule in ("pretrain", "distill"):
        assert "--gpu-mem-gb {params.gpu_mem}" in (STUDY_CONFIG.parent / "rules" / f"{rule}.smk").read_text()

"""Memory estimate of a training micro-step against the peak measured on the CPU, and micro_batch_size: auto."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from transformers import BertConfig, BertForMaskedLM

from workflow_scripts.config.step_settings import model_settings
from workflow_scripts.config.study import load_study
from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain import memory
from workflow_scripts.pretrain.model import MLMObjective
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.typed import parse

torch.set_num_threads(1)
STUDY_CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"


def _model(hidden, layers, vocab, seq_len, dropout):
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=4 * hidden,
        max_position_embeddings=seq_len,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    cfg._attn_implementation = "sdpa"
    return BertForMaskedLM(cfg)


def measured_step_bytes(model, micro, seq_len, mask_prob=0.15) -> float:
    """Peak of one forward and backward pass, plus the fp32 weights and AdamW moments already live."""
    objective, vocab = MLMObjective(model), model.config.vocab_size
    ids = torch.randint(5, vocab, (micro, seq_len))
    n = int(mask_prob * micro * seq_len)
    positions = torch.randperm(micro * seq_len)[:n]

    def step():
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


def test_auto_takes_the_largest_micro_batch_that_fits_and_divides_the_share():
    model = _model(64, 2, 500, 64, 0.0)
    s = parse(PretrainSettings, {"batch_size": 96, "micro_batch_size": "auto", "gpu_mem_gb": 1.0}, "p")
    estimate = memory.mlm_estimate(model, s, torch.device("cpu"))
    per_sequence = estimate(2, 128) - estimate(1, 128)
    fixed = estimate(1, 128) - per_sequence
    # a budget for 13.5 sequences at length 128 (the longest phase): 12 is the largest divisor of 48 below it
    s.gpu_mem_gb = (fixed + 13.5 * per_sequence) / memory.USABLE_FRACTION / memory.GB
    s.phases = parse(
        PretrainSettings, {"phases": [{"seq_len": 64, "fraction": 0.5}, {"seq_len": 128, "fraction": 0.5}]}, "p"
    ).phases
    assert memory.resolve_micro_batch(s, 2, estimate).micro_batch_size == 12
    assert memory.resolve_micro_batch(s, 96, estimate).micro_batch_size == 1
    fixed_micro = parse(PretrainSettings, {"batch_size": 96, "micro_batch_size": 8}, "p")
    assert memory.resolve_micro_batch(fixed_micro, 2, estimate) is fixed_micro
    with pytest.raises(PipelineError, match=r"p\.micro_batch_size: 'max' is not int or one of 'auto'"):
        parse(PretrainSettings, {"micro_batch_size": "max"}, "p")
    with pytest.raises(PipelineError, match=r"p\.gpu_mem_gb: must be positive"):
        parse(PretrainSettings, {"gpu_mem_gb": 0}, "p")


def test_the_study_writes_each_jobs_gpu_memory_into_its_settings():
    config = yaml.safe_load(STUDY_CONFIG.read_text())
    config["models"]["ours-base-pm"]["resources"] = {"gpu": 8, "gpu_mem_gb": 40}
    study = load_study(config)
    distilled = model_settings(study, "ours-distilled-align")["model"]["distill"]
    assert (distilled["micro_batch_size"], distilled["gpu_mem_gb"]) == ("auto", 80.0)
    assert model_settings(study, "ours-base-pm")["model"]["pretrain"]["gpu_mem_gb"] == 40.0

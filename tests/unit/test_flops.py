"""The FLOP formula behind MFU against torch's FlopCounterMode, on the meta device (no compute)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import (
    BertConfig,
    BertForMaskedLM,
    ElectraConfig,
    ElectraForMaskedLM,
    ElectraForPreTraining,
    ModernBertConfig,
    ModernBertForMaskedLM,
)

from workflow_scripts.distill.objective import DistillObjective
from workflow_scripts.distill.settings import LossWeights
from workflow_scripts.pretrain import electra
from workflow_scripts.pretrain.electra import ElectraObjective
from workflow_scripts.pretrain.model import MLMObjective, mlm_flops_fn
from workflow_scripts.pretrain.modernbert import layer_types
from workflow_scripts.pretrain.settings import ElectraSettings

META = torch.device("meta")


def _bert(**shape):
    config = BertConfig(vocab_size=30522, max_position_embeddings=512, **shape)
    config._attn_implementation = "sdpa"
    with META:
        return BertForMaskedLM(config)


def counted_per_token(objective, batch: int, seq_len: int, masked: int) -> float:
    """Matmul FLOPs FlopCounterMode counts in one forward and backward pass, per token."""
    ids = torch.zeros(batch, seq_len, dtype=torch.long, device=META)
    positions = torch.arange(masked, device=META)
    labels = torch.zeros(masked, dtype=torch.long, device=META)
    with FlopCounterMode(display=False) as counter:
        loss, _ = objective(ids, positions, labels, {"masked": float(masked), "tokens": float(batch * seq_len)})
        loss.backward()
    return counter.get_total_flops() / (batch * seq_len)


@pytest.mark.parametrize("seq_len", [128, 512])
def test_bert_base_formula_equals_the_counted_flops(seq_len):
    model = _bert()
    masked = round(0.15 * 2 * seq_len)
    counted = counted_per_token(MLMObjective(model), 2, seq_len, masked)
    assert mlm_flops_fn(model)(seq_len, masked / (2 * seq_len)) == pytest.approx(counted, rel=1e-9)
    # 6 x 84.9M encoder weights, 12 x 12 x 768 x s of attention, 15% of 6 x 24.0M of head
    assert counted == pytest.approx({128: 5.455e8, 512: 5.879e8}[seq_len], rel=1e-3)


def test_electra_formula_equals_the_counted_flops():
    common = dict(vocab_size=30522, embedding_size=768, max_position_embeddings=512)
    with META:
        discriminator = ElectraForPreTraining(ElectraConfig(hidden_size=768, **common))
        generator = ElectraForMaskedLM(
            ElectraConfig(hidden_size=256, num_attention_heads=4, intermediate_size=1024, **common)
        )
    masked = 77
    counted = counted_per_token(ElectraObjective(discriminator, generator, ElectraSettings()), 1, 512, masked)
    assert electra.flops_fn(discriminator, generator)(512, masked / 512) == pytest.approx(counted, rel=1e-9)


@pytest.mark.parametrize(
    ("student_shape", "weights", "kl_positions", "layer_map"),
    [
        (dict(num_hidden_layers=6), LossWeights(mlm=5.0, kl=2.0, cosine=1.0), "all", [2, 4, 6, 8, 10, 12]),
        (dict(num_hidden_layers=6), LossWeights(mlm=2.0, kl=5.0, cosine=1.0), "masked", [2, 4, 6, 8, 10, 12]),
        (
            dict(num_hidden_layers=4, hidden_size=312, intermediate_size=1200),
            LossWeights(mlm=0, kl=0, cosine=0, soft_ce=1, hidden_mse=1, attention_mse=1, embedding_mse=1),
            "all",
            [3, 6, 9, 12],
        ),
    ],
    ids=["lewis", "rohanian-masked", "tinybert"],
)
def test_distillation_formula_equals_the_counted_flops(student_shape, weights, kl_positions, layer_map):
    teacher, student = _bert(), _bert(**student_shape)
    with META:
        objective = DistillObjective(student, teacher, weights, 2.0, layer_map, kl_positions=kl_positions)
    masked = 38
    counted = counted_per_token(objective, 2, 128, masked)
    assert objective.flops_per_token(128, masked / 256) == pytest.approx(counted, rel=1e-9)


def _modernbert_base(every: int):
    """ModernBERT-base's shape: 22 layers, hidden 768, GeGLU 1,152 (Wi 2,304 wide), a global layer every ``every``."""
    config = ModernBertConfig(
        vocab_size=50368,
        hidden_size=768,
        intermediate_size=1152,
        num_hidden_layers=22,
        num_attention_heads=12,
        layer_types=layer_types(22, every),
        local_attention=128,
    )
    config._attn_implementation = "sdpa"
    with META:
        return ModernBertForMaskedLM(config)


@pytest.mark.parametrize("seq_len", [128, 512])
def test_modernbert_formula_counts_the_geglu_and_the_sliding_window(seq_len):
    masked = round(0.3 * 2 * seq_len)
    # every layer global: the dense kernel the counter sees is what the formula counts
    everywhere = _modernbert_base(every=1)
    counted = counted_per_token(MLMObjective(everywhere), 2, seq_len, masked)
    assert mlm_flops_fn(everywhere)(seq_len, masked / (2 * seq_len)) == pytest.approx(counted, rel=1e-9)
    # ModernBERT's pattern: 14 of 22 layers attend over 128 keys, while SDPA with a mask computes all s
    alternating = _modernbert_base(every=3)
    counted = counted_per_token(MLMObjective(alternating), 2, seq_len, masked)
    skipped = 12 * 768 * 14 * (seq_len - 128)
    assert mlm_flops_fn(alternating)(seq_len, masked / (2 * seq_len)) == pytest.approx(counted - skipped, rel=1e-9)
    # 6 x 22 x (Wqkv, Wo: 4 x 768^2; Wi, Wo: 3 x 768 x 1152) encoder weights, 30% of 6 x (768^2 + 768 x 50368) head
    encoder = 22 * (4 * 768**2 + 3 * 768 * 1152)
    assert counted == pytest.approx(6 * encoder + 12 * 768 * 22 * seq_len + 0.3 * 6 * (768**2 + 768 * 50368), rel=1e-3)

"""The memory estimate of a fine-tuning run: the real parameter counts, and the activation
bytes per token, hidden unit and layer as a real forward pass keeps them for backward."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from transformers import BertConfig, BertForTokenClassification, BertModel, ModernBertConfig, ModernBertForMaskedLM

from workflow_scripts.encoder_shape import Shape, read_shape
from workflow_scripts.finetune import memory


@pytest.mark.parametrize(
    ("shape", "config"),
    [
        (memory.BERT_BASE, BertConfig()),
        (
            memory.BERT_LARGE,
            BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
        ),
    ],
)
def test_parameter_counts_are_the_models(shape, config):
    with torch.device("meta"):
        model = BertModel(config)
    assert shape.parameters == sum(p.numel() for p in model.parameters())


def test_a_models_config_json_gives_the_shape_of_the_model(tmp_path):
    """The planner reads config.json, pretraining and distillation the live model: one shape, GeGLU included."""
    specials = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2}
    config = ModernBertConfig(
        vocab_size=300, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96, **specials
    )
    with torch.device("meta"):
        live = Shape.of(ModernBertForMaskedLM(config))
    config.save_pretrained(tmp_path)
    assert live.glu and (live.layers, live.heads, live.intermediate) == (3, 4, 96)
    assert read_shape(tmp_path) == dataclasses.replace(live, params=None)
    assert read_shape(tmp_path / "not-trained-yet") is None


def test_fp32_activation_bytes_match_what_backward_keeps():
    batch, length, hidden, layers, heads = 2, 64, 256, 2, 4
    config = BertConfig(
        hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=4 * hidden
    )
    torch.manual_seed(0)
    model = BertForTokenClassification(config).train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, int] = {}

    def pack(t):
        kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=torch.randint(5, 1000, (batch, length)))
    saved = sum(n for ptr, n in kept.items() if ptr not in params)
    # the math kernel's length x length scores (probabilities, dropout mask, dropped), which
    # the GPU's fused SDPA kernels do not keep
    scores = layers * batch * heads * length * length * (4 + 1 + 4)
    per_unit = (saved - scores) / (batch * length * hidden * layers)
    assert per_unit == pytest.approx(memory.ACTIVATION_BYTES["fp32"], rel=0.15)


def test_runs_per_gpu_fill_the_card_within_bounds():
    base = memory.estimate(memory.BERT_BASE, 32, 128)
    large = memory.estimate(memory.BERT_LARGE, 32, 512)
    assert base["total"] < large["total"]
    assert memory.runs_per_gpu(base["total"], 80) == memory.MAX_RUNS_PER_GPU
    assert memory.runs_per_gpu(large["total"], 80) == 1
    assert memory.runs_per_gpu(large["total"], 24) == 1  # never zero: one run is always tried

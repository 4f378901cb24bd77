"""Models per task type: transformers' AutoModelFor* heads, and a small head over a pooled
encoder state: a relation's two entities (entity start or mention pooling, PubMedBERT Table 12),
or the mean over an input's tokens."""

from __future__ import annotations

import contextlib
import logging

import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from .settings import problem_type

log = logging.getLogger(__name__)

DROPOUT_KEYS = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "classifier_dropout",
    "dropout",
    "attention_dropout",
    "seq_classif_dropout",
)


# families whose position ids start after the padding index (fairseq's convention)
OFFSET_POSITIONS = {"roberta", "xlm-roberta", "camembert", "longformer", "roberta-prelayernorm", "data2vec-text"}


def position_limit(model_dir: str) -> int | None:
    """The longest input the checkpoint's position embeddings can take, if it declares one."""
    config = AutoConfig.from_pretrained(model_dir)
    n = getattr(config, "max_position_embeddings", None)
    if not isinstance(n, int):
        return None
    if getattr(config, "model_type", "") in OFFSET_POSITIONS:
        n -= (config.pad_token_id or 0) + 1
    return n


class PooledClassifier(nn.Module):
    """A linear head over a pooled encoder state: the two entities, concatenated (the state at
    each entity's first token, ``entity_start``, or the max over its tokens, ``mention``), or the
    mean over every token of the input (``mean``)."""

    def __init__(self, model_dir: str, config, dropout: float, pooling: str) -> None:
        super().__init__()
        self.encoder = AutoModel.from_pretrained(model_dir, config=config)
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        width = config.hidden_size if pooling == "mean" else 2 * config.hidden_size
        self.classifier = nn.Linear(width, config.num_labels)

    def forward(self, input_ids, attention_mask=None, entities=None, token_type_ids=None):
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        mask = encoder_mask(self.encoder, attention_mask)
        hidden = self.encoder(input_ids=input_ids, attention_mask=mask, **kwargs).last_hidden_state
        if self.pooling == "mean":
            present = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
            weights = present.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        elif self.pooling == "entity_start":
            index = entities[:, :, 0].unsqueeze(-1).expand(-1, -1, hidden.size(-1))
            pooled = hidden.gather(1, index).flatten(1)
        else:
            positions = torch.arange(hidden.size(1), device=hidden.device).view(1, 1, -1)
            inside = (positions >= entities[:, :, :1]) & (positions < entities[:, :, 1:])
            masked = hidden.unsqueeze(1).masked_fill(~inside.unsqueeze(-1), torch.finfo(hidden.dtype).min)
            pooled = masked.max(dim=2).values.flatten(1)
        return self.classifier(self.dropout(pooled))


@contextlib.contextmanager
def _quiet_loading():
    """Every fine-tuning run loads an encoder without its new task head; transformers' load
    report and progress bar would repeat that in each of thousands of job logs."""
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)
        hf_logging.enable_progress_bar()


def build(model_dir: str, task_type: str, labels: list[str], dropout: float, pooling: str, vocab_size: int):
    """A freshly initialised task model (call after seeding: the head's weights are random)."""
    kind = problem_type(task_type)
    num_labels = 1 if kind == "regression" else len(labels)
    config = AutoConfig.from_pretrained(model_dir, num_labels=num_labels)
    for key in DROPOUT_KEYS:
        if hasattr(config, key):
            setattr(config, key, dropout)
    if labels and kind != "regression":
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
    with _quiet_loading():
        if kind == "token":
            model = AutoModelForTokenClassification.from_pretrained(model_dir, config=config)
        elif pooling != "cls":
            model = PooledClassifier(model_dir, config, dropout, pooling)
        else:
            config.problem_type = kind
            model = AutoModelForSequenceClassification.from_pretrained(model_dir, config=config)
    log.info("%s with a new %s head (%d outputs), randomly initialised", type(model).__name__, kind, num_labels)
    encoder = model.encoder if isinstance(model, PooledClassifier) else model
    if vocab_size > encoder.get_input_embeddings().num_embeddings:
        encoder.resize_token_embeddings(vocab_size)  # room for the entity markers
    return model


def encoder_mask(model, mask: torch.Tensor | None) -> torch.Tensor | None:
    """The padding mask as the 4-D boolean mask SDPA attends with. Given the 2-D one,
    transformers first asks ``mask.all()`` (may it drop the mask?): a host-device
    synchronisation at every forward. A 4-D mask it takes as is; the outputs are identical.
    Not for a model with sliding-window layers (ModernBERT): a 4-D mask would replace their windows."""
    if mask is None or getattr(model.config, "_attn_implementation", None) != "sdpa":
        return mask
    if "sliding_attention" in (getattr(model.config, "layer_types", None) or ()):
        return mask
    width = mask.shape[1]
    return mask.bool()[:, None, None, :].expand(-1, 1, width, -1)


def forward(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Logits for a collated batch, whatever the head (``model`` may be compiled)."""
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
    if isinstance(getattr(model, "_orig_mod", model), PooledClassifier):
        return model(entities=batch.get("entities"), **inputs)
    if "attention_mask" in inputs:
        inputs["attention_mask"] = encoder_mask(model, inputs["attention_mask"])
    return model(**inputs).logits


def loss(logits: torch.Tensor, batch: dict[str, torch.Tensor], task_type: str) -> torch.Tensor:
    kind = problem_type(task_type)
    if kind == "token":
        return nn.functional.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=-100)
    if kind == "multi_label_classification":
        return nn.functional.binary_cross_entropy_with_logits(logits.float(), batch["labels"])
    if kind == "regression":
        return nn.functional.mse_loss(logits.squeeze(-1).float(), batch["labels"])
    return nn.functional.cross_entropy(logits.float(), batch["labels"])

"""ELECTRA pretraining (Clark et al. 2020; BioM-ELECTRA): a small masked-language generator
proposes replacements for the masked tokens and a discriminator learns to tell which tokens
were replaced. Only the discriminator is the output model; the generator is kept in
``generator/`` beside it so that a continual run can pick both up again.

Replacements are drawn from each process's random state (saved in checkpoints, like
dropout's), so a resumed run reproduces an uninterrupted one exactly, while 2 processes
with batch b match 1 process with batch 2b only in distribution.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

from ..checkpoint_integrity import verify_checkpoint
from ..errors import PipelineError
from ..tokenizer import Specials, load_tokenizer
from .batches import IGNORE_INDEX
from .documents import document_inputs
from .loop import EVAL_SEED, NO_HELDOUT, Job, has_heldout, heldout_summary, heldout_sums
from .model import check_vocab, masked_hidden, matmul_flops_per_token
from .settings import ElectraSettings, PretrainSettings

GENERATOR_DIR = "generator"


def generator_shape(hidden: int, heads: int, inter: int, fraction: float) -> tuple[int, int, int]:
    """(hidden, heads, intermediate) of the generator: the discriminator's head width, fewer heads."""
    head_dim = hidden // heads
    gen_heads = max(1, round(heads * fraction))
    gen_hidden = gen_heads * head_dim
    return gen_hidden, gen_heads, max(1, round(inter * gen_hidden / hidden))


def share_embeddings(generator: ElectraForMaskedLM, discriminator: ElectraForPreTraining) -> None:
    """Make the generator use the discriminator's embedding module and tie its output layer to it."""
    generator.electra.embeddings = discriminator.electra.embeddings
    generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight


def build_electra(
    settings: PretrainSettings, tokenizer, max_seq_len: int
) -> tuple[ElectraForPreTraining, ElectraForMaskedLM]:
    """Freshly initialised (discriminator, generator) sized for ``tokenizer``."""
    sp = Specials.of(tokenizer, "tokenizer")
    e = settings.electra
    hidden, layers, heads, inter = settings.shape()
    gen_hidden, gen_heads, gen_inter = generator_shape(hidden, heads, inter, e.generator_size)
    common = dict(
        vocab_size=sp.vocab_size,
        num_hidden_layers=layers,
        max_position_embeddings=max_seq_len,
        type_vocab_size=2,
        hidden_dropout_prob=settings.dropout,
        attention_probs_dropout_prob=settings.attention_dropout,
        pad_token_id=sp.pad,
        layer_norm_eps=1e-12,
    )
    torch.manual_seed(settings.seed)
    disc_config = ElectraConfig(
        embedding_size=hidden, hidden_size=hidden, num_attention_heads=heads, intermediate_size=inter, **common
    )
    gen_config = ElectraConfig(
        embedding_size=hidden if e.share_embeddings else gen_hidden,
        hidden_size=gen_hidden,
        num_attention_heads=gen_heads,
        intermediate_size=gen_inter,
        **common,
    )
    for config in (disc_config, gen_config):
        config._attn_implementation = settings.attention
    discriminator, generator = ElectraForPreTraining(disc_config), ElectraForMaskedLM(gen_config)
    if e.share_embeddings:
        share_embeddings(generator, discriminator)
    return discriminator, generator


def load_electra(
    ref: str, settings: PretrainSettings, where: str
) -> tuple[ElectraForPreTraining, ElectraForMaskedLM, Any]:
    """(discriminator, generator, tokenizer) of an ELECTRA output directory, for continual pretraining."""
    path = Path(ref)
    if not path.is_dir():
        raise PipelineError(
            f"{ref}: {where} must be a local ELECTRA output directory (discriminator with a {GENERATOR_DIR}/ subfolder)"
        )
    if not (path / GENERATOR_DIR / "config.json").is_file():
        raise PipelineError(
            f"{ref}: no {GENERATOR_DIR}/ subfolder with the generator; objective electra continues only from an "
            "ELECTRA run of this pipeline (or put an ElectraForMaskedLM checkpoint there)"
        )
    verify_checkpoint(path, where)
    try:
        discriminator = ElectraForPreTraining.from_pretrained(ref, attn_implementation=settings.attention)
        generator = ElectraForMaskedLM.from_pretrained(path / GENERATOR_DIR, attn_implementation=settings.attention)
    except Exception as exc:  # transformers raises many types for foreign or damaged checkpoints
        raise PipelineError(f"{ref}: cannot load an ELECTRA discriminator and generator from {where} ({exc})") from exc
    for name, model in (("discriminator", discriminator), ("generator", generator)):
        if model.config.model_type != "electra":
            raise PipelineError(
                f"{ref}: the {name} is a {model.config.model_type} model; objective electra needs ELECTRA checkpoints"
            )
    tokenizer = load_tokenizer(ref, where)
    check_vocab(discriminator, tokenizer, ref)
    check_vocab(generator, tokenizer, str(path / GENERATOR_DIR))
    if settings.electra.share_embeddings:
        if generator.config.embedding_size != discriminator.config.embedding_size:
            raise PipelineError(
                f"{ref}: generator and discriminator embeddings differ in width, so they cannot be shared; "
                "set model.pretrain.electra.share_embeddings: false"
            )
        share_embeddings(generator, discriminator)
    return discriminator, generator, tokenizer


def sample_tokens(logits: torch.Tensor, method: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row of ``logits`` drawn from its softmax; no gradient flows through the draw.

    Uniform noise comes from ``generator`` (on the CPU) when given, else from the device's
    global random state, which the checkpoints save and restore.
    """
    logits = logits.detach().float()
    shape = logits.shape if method == "gumbel" else (logits.shape[0], 1)
    if generator is not None:
        u = torch.rand(shape, generator=generator).to(logits.device)
    else:
        u = torch.rand(shape, device=logits.device)
    if method == "gumbel":
        tiny = torch.finfo(u.dtype).tiny
        gumbel = -torch.log((-torch.log(u.clamp_min(tiny))).clamp_min(tiny))
        return (logits + gumbel).argmax(-1)
    cdf = torch.softmax(logits, -1).cumsum(-1)
    return torch.searchsorted(cdf, u * cdf[:, -1:]).squeeze(1).clamp_max(logits.shape[1] - 1)


class ElectraObjective(nn.Module):
    """Generator MLM loss on masked positions plus weighted replaced-token detection on every token."""

    def __init__(
        self, discriminator: ElectraForPreTraining, generator: ElectraForMaskedLM, settings: ElectraSettings
    ) -> None:
        super().__init__()
        self.discriminator, self.generator, self.settings = discriminator, generator, settings
        self.sample_with: torch.Generator | None = None  # set by the held-out evaluation for fixed draws

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        labels: torch.Tensor,
        norms: dict[str, float],
        position_ids: torch.Tensor | None = None,
    ):
        gen = self.generator
        hidden = gen.electra(input_ids=input_ids, **document_inputs(gen, position_ids)).last_hidden_state
        logits = gen.generator_lm_head(gen.generator_predictions(masked_hidden(hidden, positions)))
        mlm = F.cross_entropy(logits.float(), labels, reduction="sum") / norms["masked"]

        # padded prediction slots (label IGNORE_INDEX) write back the token already there
        valid, current = labels != IGNORE_INDEX, input_ids.reshape(-1)[positions]
        sampled = torch.where(valid, sample_tokens(logits, self.settings.sampling, self.sample_with), current)
        corrupted = input_ids.reshape(-1).index_put((positions,), sampled).view_as(input_ids)
        original = input_ids.reshape(-1).index_put((positions,), torch.where(valid, labels, current)).view_as(input_ids)
        replaced = (corrupted != original).float()
        documents = document_inputs(self.discriminator, position_ids)
        disc_logits = self.discriminator(input_ids=corrupted, **documents).logits.float()
        rtd = F.binary_cross_entropy_with_logits(disc_logits, replaced, reduction="sum") / norms["tokens"]
        correct = ((disc_logits > 0).float() == replaced).sum() / norms["tokens"]
        loss = mlm + self.settings.discriminator_weight * rtd
        return loss, {
            "loss": loss.detach(),
            "generator": mlm.detach(),
            "discriminator": rtd.detach(),
            "rtd_accuracy": correct.detach(),
            "replaced_fraction": replaced.sum() / norms["tokens"],
        }


def flops_fn(discriminator: nn.Module, generator: nn.Module) -> Callable[[int, float], float]:
    """FLOPS_FORMULA for both models: the discriminator's head on every token, the generator's on the masked ones."""
    disc_head = nn.ModuleList([discriminator.discriminator_predictions])
    gen_head = nn.ModuleList([generator.generator_predictions, generator.generator_lm_head])

    def f(seq_len: int, mask_prob: float) -> float:
        return matmul_flops_per_token(
            discriminator.config, discriminator.electra, disc_head, seq_len, 1.0
        ) + matmul_flops_per_token(generator.config, generator.electra, gen_head, seq_len, mask_prob)

    return f


@torch.no_grad()
def evaluate(job: Job) -> dict[str, Any]:
    """Generator MLM loss, discriminator loss and accuracy on the held-out blocks, with fixed masks and draws."""
    if not has_heldout(job):
        return dict(NO_HELDOUT)
    objective: ElectraObjective = job.objective
    objective.sample_with = torch.Generator().manual_seed(EVAL_SEED)
    try:
        sums, masked_count, tokens = heldout_sums(job, objective, ("generator", "discriminator", "rtd_accuracy"))
    finally:
        objective.sample_with = None
    return {
        **heldout_summary(job, sums["generator"], masked_count),
        "heldout_discriminator_loss": sums["discriminator"] / max(tokens, 1),
        "heldout_rtd_accuracy": sums["rtd_accuracy"] / max(tokens, 1),
    }

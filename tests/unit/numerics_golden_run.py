"""A short run whose final weights fingerprint the CPU numerics: a few MLM pretraining steps of a
tiny RoBERTa, then a few fine-tuning steps of a classifier started from it, one thread, seed 0.

    python tests/unit/numerics_golden_run.py      # prints the sha256 of the final weights

Run it under the environment whose numerics it should fingerprint: ATEN_CPU_CAPABILITY and the
other pins are read once, when torch is imported.
"""

from __future__ import annotations

import hashlib

import torch
from transformers import RobertaConfig, RobertaForMaskedLM, RobertaForSequenceClassification

VOCAB, LENGTH, BATCH, STEPS = 2000, 64, 8, 10


def config() -> RobertaConfig:
    return RobertaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        max_position_embeddings=LENGTH + 2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=3,
    )


def train(model: torch.nn.Module, batches) -> None:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    for batch in batches:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def mlm_batches(generator: torch.Generator):
    for _ in range(STEPS):
        ids = torch.randint(5, VOCAB, (BATCH, LENGTH), generator=generator)
        chosen = torch.rand(ids.shape, generator=generator) < 0.15
        yield {"input_ids": ids.masked_fill(chosen, 4), "labels": torch.where(chosen, ids, -100)}


def classification_batches(generator: torch.Generator):
    for _ in range(STEPS):
        ids = torch.randint(5, VOCAB, (BATCH, LENGTH), generator=generator)
        yield {"input_ids": ids, "labels": torch.randint(0, 3, (BATCH,), generator=generator)}


def fingerprint(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    pretrained = RobertaForMaskedLM(config())
    train(pretrained, mlm_batches(generator))
    classifier = RobertaForSequenceClassification(config())
    classifier.roberta.load_state_dict(pretrained.roberta.state_dict(), strict=False)
    train(classifier, classification_batches(generator))
    print(fingerprint(classifier))


if __name__ == "__main__":
    main()

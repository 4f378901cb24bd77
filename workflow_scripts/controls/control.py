"""A no-pretraining control: a model's architecture and vocabulary with random weights.

    python -m workflow_scripts.controls.control --settings results/configs/models/C.yaml \
        --of results/pretrain/M --out results/control/C

Fine-tuning this checkpoint like any other shows what the task data alone teaches the same
network, so a pretrained model's advantage over it is what pretraining contributed.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from .. import provenance
from ..checkpoint_integrity import verify_checkpoint
from ..cli import run
from ..errors import PipelineError
from .settings import load_control

log = logging.getLogger(__name__)


def random_checkpoint(source: str, seed: int, out: Path) -> list[Path]:
    """Write ``source``'s configuration and tokenizer with freshly initialised weights to ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    from ..pretrain.checkpoint import export_model

    verify_checkpoint(source, "--of")
    try:
        config = AutoConfig.from_pretrained(source)
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise PipelineError(f"--of {source}: not a transformers checkpoint with a tokenizer ({exc})") from exc
    torch.manual_seed(seed)
    model = AutoModelForMaskedLM.from_config(config)
    log.info(
        "%s: %s with %d random parameters", source, type(model).__name__, sum(p.numel() for p in model.parameters())
    )
    return export_model(model, tokenizer, out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_scripts.controls.control", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--settings", required=True, type=Path, help="YAML whose model key holds name and seed")
    parser.add_argument("--of", required=True, help="checkpoint whose architecture and tokenizer are copied")
    parser.add_argument("--out", required=True, type=Path, help="results/control/{model}")
    args = parser.parse_args(argv)
    started = provenance.now()
    settings = load_control(args.settings)
    written = random_checkpoint(args.of, settings.seed, args.out)
    provenance.record(
        args.out,
        step="controls.control",
        inputs={"architecture": args.of},
        params={"name": settings.name, "init": "random"},
        seed=settings.seed,
        outputs=written,
        started=started,
    )


if __name__ == "__main__":
    run(main)

"""Pretraining (masked-language model or ELECTRA), from scratch with a learned vocabulary or continual from a
checkpoint.

    python -m workflow_scripts.pretrain.pretrain --settings S.yaml \\
        --packed results/packed/T/A/seq~128/heldout~0.01/index.json [...] \\
        (--tokenizer results/vocab/V | --init MODEL_DIR_OR_HUB_ID) --out results/pretrain/M

``--packed`` opens the pack stage's blocks; ``--corpus results/corpus/A`` instead packs the
corpus under ``<out>/packed`` first (runs by hand).

A decay branch (settings ``model.branch``) names its parent's output directory as ``--init``: it
resumes the parent's checkpoint of ``branch.step`` (weights, optimiser, schedule position, random
states, data position) and runs only its decay, from that step to its own ``max_steps``.

Launch with ``torchrun --nproc-per-node N -m workflow_scripts.pretrain.pretrain ...`` for data
parallelism. Re-running resumes from ``<out>/training_state/``. With ``objective: electra``
the output is the discriminator, with the generator in ``<out>/generator/``; ``--init``
then names such an output directory.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from transformers.utils import logging as hf_logging

from .. import allocator, provenance
from ..cli import run
from ..errors import PipelineError
from ..tokenizer import load_tokenizer
from ..typed import load_settings, to_dict
from . import branching, electra, memory, modernbert
from . import dist as distributed
from .engine import Data, add_data_arguments, data_inputs, execute, open_data, training_job, training_key
from .loop import Job
from .model import MLMObjective, build_model, check_vocab, flops_record, load_pretrained, mlm_flops_fn
from .positions import fit_positions
from .settings import BranchStart, PretrainModelSettings, PretrainSettings

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", required=True, help="YAML with top-level key 'model: {name, pretrain}'")
    add_data_arguments(ap)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokenizer", help="tokenizer directory: train from scratch with this vocabulary")
    src.add_argument("--init", help="checkpoint directory (or hub id) to continue pretraining, keeping its vocabulary")
    ap.add_argument("--out", required=True, help="output model directory")
    memory.add_gpu_memory_argument(ap)
    ap.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    started = provenance.now()
    allocator.keep_freed_memory()
    args = parse_args(argv)
    hf_logging.disable_progress_bar()
    entry = load_settings(args.settings, PretrainModelSettings, "model")
    s = entry.pretrain
    if s.num_threads:
        torch.set_num_threads(s.num_threads)
    d = distributed.setup()
    try:
        out = Path(args.out)
        max_len = max(p.seq_len for p in s.phases)
        job, data = (electra_job if s.objective == "electra" else mlm_job)(args, s, max_len, d, entry.branch)
        model = job.model
        source = {"init": args.init} if args.init else {"tokenizer": args.tokenizer}
        inputs = {**data_inputs(args, data), **source, "settings": args.settings}
        branched = branching.record(entry.branch, args.init)
        execute(
            job,
            out,
            step="pretrain",
            inputs=inputs,
            params={"name": entry.name, "pretrain": to_dict(s)},
            started=started,
            extra={
                "model": {"parameters": sum(p.numel() for p in model.parameters()), "config": model.config.to_dict()},
                "micro_batch_size": job.settings.micro_batch_size,
                "flops": flops_record(job.flops_per_token, s),
                **branched,
            },
            stop_after=args.stop_after,
        )
    finally:
        distributed.teardown(d)


def mlm_job(
    args: argparse.Namespace, s: PretrainSettings, max_len: int, d: distributed.Dist, branch: BranchStart | None
) -> tuple[Job, Data]:
    out = Path(args.out)
    if args.init:
        model, tokenizer = load_pretrained(args.init, "--init", s.attention)
        if model.config.model_type == "electra":
            raise PipelineError(
                f"{args.init}: an ELECTRA checkpoint; continue it with "
                "model.pretrain.objective: electra and architecture: electra"
            )
        if s.architecture == "modernbert" and not modernbert.is_modernbert(model):
            raise PipelineError(
                f"{args.settings}: model.pretrain.architecture: modernbert, but {args.init} is a "
                f"{model.config.model_type} checkpoint; continue a ModernBERT-family checkpoint or drop the key"
            )
        if modernbert.is_modernbert(model):
            # rotary positions have no table to outgrow: the config records the longest context trained
            model.config.max_position_embeddings = max(model.config.max_position_embeddings, max_len)
        else:
            fit_positions([model], s.phases, f"{args.settings}: model.pretrain", args.init)
    else:
        tokenizer = load_tokenizer(args.tokenizer, "--tokenizer")
        model = build_model(s, tokenizer, max_len)
        check_vocab(model, tokenizer, args.tokenizer)
    data = open_data(args, s, tokenizer, out, d)
    if modernbert.is_modernbert(model):
        tokenizer.model_input_names = list(modernbert.INPUT_NAMES)
    key = training_key(s, data.keys, model, {"init": args.init, **branching.key(branch, args.init)})
    s = memory.resolve_micro_batch(s, d.world, memory.mlm_estimate(model, s, d.device), args.gpu_mem_gb)
    job = training_job(
        s,
        data,
        key,
        out,
        d,
        objective=MLMObjective(model),
        model=model,
        tokenizer=tokenizer,
        flops_per_token=mlm_flops_fn(model),
        **branching.job_parts(branch, args.init),
        phase_start=modernbert.rotary_schedule(model, s.phases, f"{args.settings}:model.pretrain"),
    )
    return job, data


def electra_job(
    args: argparse.Namespace, s: PretrainSettings, max_len: int, d: distributed.Dist, branch: BranchStart | None
) -> tuple[Job, Data]:
    out = Path(args.out)
    if args.init:
        discriminator, generator, tokenizer = electra.load_electra(args.init, s, "--init")
        fit_positions([discriminator, generator], s.phases, f"{args.settings}: model.pretrain", args.init)
    else:
        tokenizer = load_tokenizer(args.tokenizer, "--tokenizer")
        discriminator, generator = electra.build_electra(s, tokenizer, max_len)
        check_vocab(discriminator, tokenizer, args.tokenizer)
    data = open_data(args, s, tokenizer, out, d)
    extra = {"init": args.init, "generator": generator.config.to_dict(), **branching.key(branch, args.init)}
    key = training_key(s, data.keys, discriminator, extra)
    estimate = memory.electra_estimate(discriminator, generator, s, d.device)
    s = memory.resolve_micro_batch(s, d.world, estimate, args.gpu_mem_gb)
    job = training_job(
        s,
        data,
        key,
        out,
        d,
        objective=electra.ElectraObjective(discriminator, generator, s.electra),
        model=discriminator,
        tokenizer=tokenizer,
        flops_per_token=electra.flops_fn(discriminator, generator),
        evaluator=electra.evaluate,
        companions={electra.GENERATOR_DIR: generator},
        **branching.job_parts(branch, args.init),
    )
    return job, data


if __name__ == "__main__":
    run(main)

"""Task-agnostic distillation of a teacher into a student, on the pretraining loop.

    python -m workflow_scripts.distill.distill --settings S.yaml --teacher results/pretrain/T \\
        --packed results/packed/T/A/seq~128/heldout~0.01/index.json [...] [--init MODEL_DIR] --out results/distill/S

(``--corpus results/corpus/A`` instead packs the corpus under ``<out>/packed`` first.)

All teacher loss weights 0 is the "train longer" control: the student continues plain
MLM from the same initialisation for the same steps, without a teacher forward pass.
"""

from __future__ import annotations

import argparse
import functools
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from transformers.utils import logging as hf_logging

from .. import allocator, optim, provenance
from ..cli import run
from ..errors import PipelineError
from ..pretrain import dist as distributed
from ..pretrain import memory, modernbert
from ..pretrain.engine import add_data_arguments, data_inputs, execute, open_data, training_job, training_key
from ..pretrain.loop import Job
from ..pretrain.model import MLMObjective, build_model, check_vocab, flops_record, load_pretrained, mlm_flops_fn
from ..typed import load_settings, to_dict
from .memory import auto_estimate, kl_rows
from .objective import DistillObjective
from .settings import DistillModelSettings, DistillSettings
from .student import check_embedding_rows, freeze, from_teacher_layers, layer_map, same_vocabulary, teacher_layers

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", required=True, help="YAML with top-level key 'model: {name, distill}'")
    ap.add_argument("--teacher", required=True, help="teacher checkpoint directory (or hub id)")
    add_data_arguments(ap)
    ap.add_argument("--init", help="student checkpoint directory for student.init: model")
    ap.add_argument("--out", required=True, help="output student directory")
    memory.add_gpu_memory_argument(ap)
    ap.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def make_student(s: DistillSettings, teacher, teacher_tok, init: str | None, where: str, max_len: int):
    """(student, description) initialised as the settings say."""
    mode = s.student.init
    if (init is not None) != (mode == "model"):
        raise PipelineError(f"{where}.student.init: is {mode!r}; --init is used exactly when it is 'model'")
    if mode == "model":
        student, student_tok = load_pretrained(init, "--init", s.attention)
        same_vocabulary(teacher_tok, student_tok, f"{init} vs the teacher")
        return student, {"init": "model", "path": init}
    if mode == "teacher_layers":
        layers = teacher_layers(teacher.config.num_hidden_layers, s, where)
        return from_teacher_layers(teacher, layers), {"init": "teacher_layers", "teacher_layers": layers}
    student = build_model(s, teacher_tok, max_len)
    return student, {"init": "random", "shape": list(s.shape()), "architecture": s.architecture}


def _check_attention(student, teacher, mapping: list[int], where: str) -> None:
    """Attention terms compare maps head by head, of transformer layers."""
    for role, model in (("student", student), ("teacher", teacher)):
        if modernbert.is_modernbert(model):
            raise PipelineError(
                f"{where}.loss: attention terms (attention_mse, attention_kl) read BERT-style attention maps; the "
                f"{role} is a ModernBERT, whose rotary local-window layers form none to compare; set them to 0"
            )
    if student.config.num_attention_heads != teacher.config.num_attention_heads:
        raise PipelineError(
            f"{where}.loss: attention terms need equal head counts (student "
            f"{student.config.num_attention_heads}, teacher "
            f"{teacher.config.num_attention_heads})"
        )
    if 0 in mapping:
        raise PipelineError(
            f"{where}.layer_map: attention terms need transformer layers (1..{teacher.config.num_hidden_layers}), not 0"
        )


def _objective(s: DistillSettings, student, teacher, mapping: list[int], device: torch.device):
    """The student's objective: the distillation loss, or plain MLM when no teacher term is weighted."""
    if not s.loss.teacher_terms():
        log.info("no teacher terms: plain MLM of the student (the 'train longer' control)")
        return MLMObjective(student)
    teacher.to(device)
    dtype = optim.amp_dtype(device, s.teacher_precision)
    if dtype is not None:
        teacher.to(dtype)
    autocast = functools.partial(optim.autocast, device, s.teacher_precision)
    return DistillObjective(student, teacher, s.loss, s.temperature, mapping, autocast, s.kl_positions)


def _recipe(args: argparse.Namespace, s: DistillSettings, student, teacher, mapping, init_info, job: Job) -> dict:
    """What the student's provenance records beside the engine's own fields."""
    return {
        "teacher": {
            "path": args.teacher,
            "model_type": teacher.config.model_type,
            "hidden_size": teacher.config.hidden_size,
            "num_layers": teacher.config.num_hidden_layers,
        },
        "recipe": {
            "loss": to_dict(s.loss),
            "temperature": s.temperature,
            "kl_positions": s.kl_positions,
            "layer_map": mapping,
            "student": init_info,
            "control": not s.loss.teacher_terms(),
        },
        "model": {"parameters": sum(p.numel() for p in student.parameters()), "config": student.config.to_dict()},
        "micro_batch_size": s.micro_batch_size,
        "flops": flops_record(job.flops_per_token, s),
    }


def _job(args, s: DistillSettings, student, teacher, tokenizer, objective, init_info, out: Path, d) -> tuple:
    """The training job (its data, resumption key and micro-batch) and its data's provenance inputs."""
    terms = s.loss.teacher_terms()
    data = open_data(args, s, tokenizer, out, d)
    key = training_key(s, data.keys, student, {"teacher": args.teacher, "init": args.init, "student": init_info})
    estimate = (
        auto_estimate(student, teacher, s, d.device, args.gpu_mem_gb)
        if terms
        else memory.mlm_estimate(student, s, d.device)
    )
    s = memory.resolve_micro_batch(s, d.world, estimate, args.gpu_mem_gb)
    if terms:
        objective.kl_rows = kl_rows(student, teacher, s, d.device, d.world, args.gpu_mem_gb)
    flops = objective.flops_per_token if terms else mlm_flops_fn(student)
    job = training_job(
        s,
        data,
        key,
        out,
        d,
        objective=objective,
        model=student,
        tokenizer=tokenizer,
        flops_per_token=flops,
        phase_start=modernbert.rotary_schedule(student, s.phases, f"{args.settings}:model.distill"),
    )
    return job, data


def main(argv: Sequence[str] | None = None) -> None:
    started = provenance.now()
    allocator.keep_freed_memory()
    args = parse_args(argv)
    hf_logging.disable_progress_bar()
    entry = load_settings(args.settings, DistillModelSettings, "model")
    s, where = entry.distill, f"{args.settings}:model.distill"
    if s.num_threads:
        torch.set_num_threads(s.num_threads)
    d = distributed.setup()
    try:
        optim.seed_everything(s.seed)  # the student's new layers and the projections start from the seed
        out = Path(args.out)
        teacher, tokenizer = load_pretrained(args.teacher, "--teacher", s.attention)
        freeze(teacher)
        student, init_info = make_student(s, teacher, tokenizer, args.init, where, max(p.seq_len for p in s.phases))
        check_vocab(student, tokenizer, args.teacher)
        check_embedding_rows(teacher, student, f"{args.teacher} vs the student")
        mapping = layer_map(student.config.num_hidden_layers, teacher.config.num_hidden_layers, s, where)
        if any(k in s.loss.teacher_terms() for k in ("attention_mse", "attention_kl")):
            _check_attention(student, teacher, mapping, where)
        objective = _objective(s, student, teacher, mapping, d.device)
        job, data = _job(args, s, student, teacher, tokenizer, objective, init_info, out, d)
        inputs = {
            "teacher": args.teacher,
            **data_inputs(args, data),
            "settings": args.settings,
            **({"init": args.init} if args.init else {}),
        }
        execute(
            job,
            out,
            step="distill",
            inputs=inputs,
            params={"name": entry.name, "distill": to_dict(entry.distill)},
            started=started,
            extra=_recipe(args, job.settings, student, teacher, mapping, init_info, job),
            stop_after=args.stop_after,
        )
    finally:
        distributed.teardown(d)


if __name__ == "__main__":
    run(main)

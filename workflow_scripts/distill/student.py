"""Student initialisation and the teacher-to-student layer map."""

from __future__ import annotations

import copy
import re

from torch import nn

from ..errors import PipelineError
from .settings import DistillSettings

_LAYER = re.compile(r"((?:.*\.)?(?:encoder\.layer|layers)\.)(\d+)(\..*)")  # BERT-style and ModernBERT keys


def teacher_layers(teacher_layers_total: int, settings: DistillSettings, where: str) -> list[int]:
    """0-based teacher layers copied into the student (default: every k-th from the first)."""
    st = settings.student
    if st.layers is not None:
        layers = list(st.layers)
        if st.num_layers is not None and st.num_layers != len(layers):
            raise PipelineError(f"{where}.student.layers: {len(layers)} layers given but num_layers is {st.num_layers}")
    else:
        n = st.num_layers or max(1, teacher_layers_total // 2)
        if n > teacher_layers_total:
            raise PipelineError(f"{where}.student.num_layers: {n} exceeds the teacher's {teacher_layers_total} layers")
        k = teacher_layers_total // n
        layers = [i * k for i in range(n)]
    for i, layer in enumerate(layers):
        if not 0 <= layer < teacher_layers_total:
            raise PipelineError(
                f"{where}.student.layers[{i}]: teacher layer {layer} is out of range 0..{teacher_layers_total - 1}"
            )
    return layers


def from_teacher_layers(teacher: nn.Module, layers: list[int]) -> nn.Module:
    """A student of the teacher's width with its embeddings, head and the given layers (DistilBERT init)."""
    config = copy.deepcopy(teacher.config)
    config.num_hidden_layers = len(layers)
    if getattr(config, "layer_types", None):  # ModernBERT: each copied layer keeps its local or global attention
        config.layer_types = [teacher.config.layer_types[t] for t in layers]
    student = type(teacher)(config)
    source = {t: s for s, t in enumerate(layers)}
    state = {}
    for key, value in teacher.state_dict().items():
        m = _LAYER.match(key)
        if m is None:
            state[key] = value
        elif int(m.group(2)) in source:
            state[f"{m.group(1)}{source[int(m.group(2))]}{m.group(3)}"] = value
    if getattr(config, "model_type", None) == "modernbert":
        # its first layer has no attention norm (the embeddings' norm precedes it): a later layer's is dropped
        state = {k: v for k, v in state.items() if not k.startswith("model.layers.0.attn_norm.")}
    missing, unexpected = student.load_state_dict(state, strict=False)
    tied = set(getattr(student, "_tied_weights_keys", None) or {})
    if unexpected or set(missing) - tied:
        raise PipelineError(
            f"cannot initialise the student from the teacher: missing {sorted(missing)}, "
            f"unexpected {sorted(unexpected)}"
        )
    student.tie_weights()
    return student


def layer_map(n_student: int, n_teacher: int, settings: DistillSettings, where: str) -> list[int]:
    """Teacher hidden-state index (1..n_teacher; 0 = embeddings) for each student layer 1..n_student."""
    if settings.layer_map is None:
        return [round((i + 1) * n_teacher / n_student) for i in range(n_student)]
    mapping = list(settings.layer_map)
    if len(mapping) != n_student:
        raise PipelineError(
            f"{where}.layer_map: {len(mapping)} entries for a student of {n_student} "
            "layers; give one teacher layer per student layer"
        )
    for i, t in enumerate(mapping):
        if not 0 <= t <= n_teacher:
            raise PipelineError(
                f"{where}.layer_map[{i}]: teacher layer {t} is out of range 0..{n_teacher} "
                "(1-based layers, 0 = embeddings)"
            )
    return mapping


def same_vocabulary(teacher_tok, student_tok, where: str) -> None:
    if teacher_tok.get_vocab() != student_tok.get_vocab():
        a, b = teacher_tok.get_vocab(), student_tok.get_vocab()
        differing = sorted(set(a.items()) ^ set(b.items()))[:3]
        raise PipelineError(
            f"{where}: teacher/student vocabulary mismatch ({len(a)} vs {len(b)} tokens; e.g. {differing}); "
            "distillation compares output distributions token by token, so the student must use the teacher's tokenizer"
        )


def check_embedding_rows(teacher: nn.Module, student: nn.Module, where: str) -> None:
    t, s = teacher.get_input_embeddings().num_embeddings, student.get_input_embeddings().num_embeddings
    if t != s:
        raise PipelineError(f"{where}: teacher/student vocabulary mismatch (teacher {t} embedding rows, student {s})")


def freeze(teacher: nn.Module) -> nn.Module:
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher

"""How a fine-tuning step reaches the device: the SDPA backends attention may use, how batches
are padded (``buckets``), and whether the model's forward and backward replay as CUDA graphs.

The backends are set by a context each step enters (not once per process), so runs that share
a process each train with their own choice. The default leaves out cuDNN attention: with a
padding mask it builds an execution plan for every new (batch, length) shape, 16-20 ms of host
time per call, which made bf16 fine-tuning 5.7x slower than fp32 on an H100."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import heads
from .buckets import Padding, padding_for
from .settings import FinetuneSettings

BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}


def attention(names: Sequence[str]):
    """A context in which SDPA may use only the named backends (none named: torch's own choice)."""
    return sdpa_kernel([BACKENDS[n] for n in names]) if names else contextlib.nullcontext()


class Forward:
    """A model's logits for a batch. With CUDA graphs, a batch of one of the run's static shapes
    (rows x bucket width) goes through the compiled model, which torch compiles and captures
    once per shape and then replays; any other shape (an epoch's last batch, chunked inputs)
    runs the model as it is, so a new shape never compiles."""

    def __init__(self, model, rows: Sequence[int] = (), widths: Sequence[int] = (), backend: Any = "inductor"):
        self.model = model
        self.rows, self.widths = frozenset(rows), frozenset(widths)
        self.compiled = None
        if self.rows and self.widths:
            limit = 2 * len(self.rows) * len(self.widths)  # every shape in training and in evaluation
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, limit)
            options = {"mode": "reduce-overhead"} if backend == "inductor" else {"backend": backend}
            self.compiled = torch.compile(model, dynamic=False, **options)

    def static(self, batch: dict[str, torch.Tensor]) -> bool:
        rows, width = batch["input_ids"].shape
        return self.compiled is not None and rows in self.rows and width in self.widths

    def __call__(self, batch: dict[str, torch.Tensor], keep: bool = False) -> torch.Tensor:
        """``keep``: the logits outlive the next call (a graph's replay overwrites its outputs)."""
        if not self.static(batch):
            return heads.forward(self.model, batch)
        torch.compiler.cudagraph_mark_step_begin()
        logits = heads.forward(self.compiled, batch)
        return logits.clone() if keep else logits


@dataclass
class Execution:
    """A run's choices for the device: the SDPA backends, the padding, CUDA graphs."""

    backends: tuple[str, ...] = ("flash", "efficient", "math")
    padding: Padding = field(default_factory=Padding)
    graphs: bool = False
    compile_backend: Any = "inductor"
    _last: Forward | None = field(default=None, repr=False)

    def attention(self):
        return attention(self.backends)

    def forward(self, model, cfg: FinetuneSettings) -> Forward:
        """The model's forward: the same one, with its compiled shapes, while a run trains and
        scores one model; only the latest is kept (a grid's earlier models are freed)."""
        if self._last is None or self._last.model is not model:
            if self._last is not None and self._last.compiled is not None:
                torch._dynamo.reset()  # the earlier model's graphs and their memory go; its shapes count no more
            rows = {cfg.micro_batch_size or cfg.batch_size, cfg.eval_batch_size} if self.graphs else ()
            self._last = Forward(model, sorted(rows), self.padding.buckets, self.compile_backend)
        return self._last

    def record(self) -> dict[str, Any]:
        """What metrics.json says of it."""
        return {"sdpa_backends": list(self.backends), "padding": self.padding.record(), "cuda_graphs": self.graphs}


def execution_for(cfg: FinetuneSettings, device: torch.device, limit: int) -> Execution:
    """A run's execution on ``device`` for inputs of at most ``limit`` tokens: the CPU pads each
    batch to its longest member and never compiles (its numbers stay as they were); a GPU pads
    to buckets and, with ``cuda_graphs``, replays them as graphs."""
    graphs = cfg.cuda_graphs and device.type == "cuda"
    return Execution(tuple(cfg.sdpa_backends), padding_for(device.type, graphs, limit), graphs)


def plain(cfg: FinetuneSettings) -> Execution:
    """The settings' backends, each batch padded to its longest member, no graphs."""
    return Execution(tuple(cfg.sdpa_backends))

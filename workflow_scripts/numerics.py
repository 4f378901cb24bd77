"""Which kernels a job's arithmetic runs on, pinned where a study asks for reproducible numbers.

torch picks its CPU kernels by the processor it finds: ATen's vectorised loops (default, AVX2 or
AVX-512), MKL's matrix multiplies and oneDNN's primitives each dispatch on their own, and each
path rounds differently. Twenty AdamW steps of a tiny model end with other weights on each. A
pin caps all three at one instruction-set level that every current x86-64 server has, so two
machines run the same kernels and train the same bits. The pins are environment variables read
once, when torch is imported: the workflow sets them before any job starts, and every job
(the preloaded interpreter included) inherits them.

On a GPU, ``deterministic`` asks torch for deterministic algorithms and cuBLAS for a fixed
workspace, so that two runs on cards of one model agree bit for bit.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from .typed import help_field as _help

# The three kernel families torch dispatches on the CPU, each capped at AVX2.
CPU_PINS = {
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    }
}
# cuBLAS reuses its workspace deterministically only with a fixed configuration.
DETERMINISTIC = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "WORKFLOW_DETERMINISTIC": "1"}
RECORDED = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", *DETERMINISTIC)


@dataclass
class Numerics:
    cpu: Literal["native", "avx2"] = _help(
        "CPU kernels: native (whatever the processor offers; bit-identical on one machine only) or "
        "avx2 (ATen, MKL and oneDNN capped at AVX2: the same bits on every x86-64 CPU with AVX2).",
        default="native",
    )
    deterministic: bool = _help(
        "GPU: deterministic algorithms (torch.use_deterministic_algorithms) and a fixed cuBLAS "
        "workspace, so that runs on cards of one model agree bit for bit.",
        default=False,
    )


def environment(numerics: Numerics) -> dict[str, str]:
    """The variables a job must be started with to run under ``numerics``."""
    env = dict(CPU_PINS.get(numerics.cpu, {}))
    if numerics.deterministic:
        env.update(DETERMINISTIC)
    return env


def export(numerics: Numerics, environ: MutableMapping[str, str] = os.environ) -> None:
    """Set (or, for ``native``, clear) the pins in ``environ``, which every job inherits."""
    wanted = environment(numerics)
    for name in (*CPU_PINS["avx2"], *DETERMINISTIC):
        if name in wanted:
            environ[name] = wanted[name]
        else:
            environ.pop(name, None)


def apply_deterministic() -> None:
    """In a training process: deterministic algorithms where the workflow asked for them."""
    if os.environ.get("WORKFLOW_DETERMINISTIC") == "1":
        import torch

        torch.use_deterministic_algorithms(True)


def _cpu() -> dict[str, Any]:
    model, flags, vendor = platform.processor(), "", None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            info = fh.read(200_000)
        model = re.search(r"^model name\s*:\s*(.*)$", info, re.M).group(1)
        flags = re.search(r"^flags\s*:\s*(.*)$", info, re.M).group(1)
        vendor = re.search(r"^vendor_id\s*:\s*(.*)$", info, re.M).group(1)
    except (OSError, AttributeError):
        pass
    levels = [level for level, flag in (("avx2", "avx2"), ("avx512", "avx512f")) if flag in flags.split()]
    # MKL's reproducible AVX2 branch (MKL_CBWR=AVX2) is Intel's alone: elsewhere MKL takes its AUTO
    # branch, so the pinned bits are one vendor's (docs/reproducibility-and-provenance.md).
    return {"model": model, "vendor": vendor, "machine": platform.machine(), "isa": levels}


def _torch(torch) -> dict[str, Any]:
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    mkl = re.search(r"Math Kernel Library Version ([\w.\-]+)", config)
    onednn = re.search(r"MKL-DNN v([\w.]+)", config)
    return {
        "aten_capability": torch.backends.cpu.get_cpu_capability(),
        "blas": blas.group(1) if blas else None,
        "mkl": mkl.group(1) if mkl else None,
        "onednn": onednn.group(1) if onednn else None,
        "threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
    }


def describe() -> dict[str, Any]:
    """For provenance: the processor, the pins in force and, where the job used torch, the kernels
    it chose, so an audit can tell why two runs differ."""
    torch = sys.modules.get("torch")
    return {
        "cpu": _cpu(),
        "pins": {name: os.environ[name] for name in RECORDED if name in os.environ},
        "torch": _torch(torch) if torch is not None else None,
    }

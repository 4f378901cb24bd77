"""Which cards this machine offers the workflow, read without initialising CUDA.

In order: the invoking shell's ``CUDA_VISIBLE_DEVICES`` where it is set (a user keeps cards for
others that way; an empty value offers none), else the fake list ``WORKFLOW_FAKE_CARDS`` (tests on
the CPU), else the driver: ``nvidia-smi -L`` (a card's MIG instances in its place where it has
some), else the cards under ``/proc/driver/nvidia/gpus/``, else none. Nothing here loads CUDA: a
process that had would hand a broken CUDA to every fork of the preloaded interpreter.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..errors import PipelineError

FAKE = "WORKFLOW_FAKE_CARDS"
PROC_GPUS = Path("/proc/driver/nvidia/gpus")
GPU_LINE = re.compile(r"^GPU (\d+): .*\(UUID: (GPU-[^)]+)\)")
MIG_LINE = re.compile(r"^\s+MIG .*\(UUID: (MIG-[^)]+)\)")


def parse_ids(text: str, where: str) -> list[str]:
    """A comma-separated list of card ids (indices, ``GPU-``/``MIG-`` UUIDs), each once."""
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if len(set(ids)) != len(ids):
        raise PipelineError(f"{where}={text}: a card is named twice; name each card once")
    return ids


def parse_nvidia_smi(listing: str) -> list[str]:
    """The cards of ``nvidia-smi -L``: each card's index, or its MIG instances' UUIDs where it has any."""
    cards: list[str] = []
    migs: dict[str, list[str]] = {}
    current = None
    for line in listing.splitlines():
        if m := GPU_LINE.match(line):
            current = m.group(1)
            cards.append(current)
        elif (m := MIG_LINE.match(line)) and current is not None:
            migs.setdefault(current, []).append(m.group(1))
    return [mig for card in cards for mig in migs.get(card, [card])]


def driver_cards() -> list[str]:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        listing = None
    if listing is not None:
        return parse_nvidia_smi(listing)
    # PCI bus order, as nvidia-smi numbers the cards
    return [str(i) for i in range(len(list(PROC_GPUS.iterdir())))] if PROC_GPUS.is_dir() else []


def visible_cards(env: Mapping[str, str] | None = None) -> tuple[list[str], str]:
    """The cards on offer and where that list came from (for messages)."""
    env = os.environ if env is None else env
    if "CUDA_VISIBLE_DEVICES" in env:
        return parse_ids(env["CUDA_VISIBLE_DEVICES"], "CUDA_VISIBLE_DEVICES"), "CUDA_VISIBLE_DEVICES"
    if env.get(FAKE):
        return parse_ids(env[FAKE], FAKE), FAKE
    return driver_cards(), "nvidia-smi -L"

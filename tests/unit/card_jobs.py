"""Jobs on fake cards, as real processes behind the real allocator, and what each saw.

Each job is ``python -m workflow_scripts.cards ... -- python PROBE OUT SECONDS`` (or, for today's
launch without the allocator, the probe alone); the probe records the cards it was given, its
share and party, and when it started and ended (one monotonic clock for every process), then
holds them for ``SECONDS``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CARD_UNITS = 840

PROBE = """
import json, os, sys, time
out, seconds = sys.argv[1], float(sys.argv[2])
start = time.monotonic()
time.sleep(seconds)
record = {k: os.environ.get(v) for k, v in
          [("cards", "CUDA_VISIBLE_DEVICES"), ("share", "WORKFLOW_CARDS_SHARE"), ("party", "WORKFLOW_CARDS_PARTY")]}
record.update(start=start, end=time.monotonic())
open(out, "w").write(json.dumps(record))
"""


def card_env(tmp_path: Path, fake: str, **extra: str) -> dict[str, str]:
    """The environment of jobs on the fake cards ``fake`` with their own lock folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "WORKFLOW_CARDS"))}
    return {
        **env,
        "PYTHONPATH": str(ROOT),
        "WORKFLOW_FAKE_CARDS": fake,
        "WORKFLOW_CARDS_DIR": str(tmp_path / "locks"),
        **extra,
    }


def probe_file(tmp_path: Path) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return path


def start_jobs(tmp_path: Path, asks: list[list[str]], env: dict[str, str], seconds: float, allocate: bool = True):
    """Start one job per entry of ``asks`` (the allocator's arguments, e.g. ``["--share", "420"]``),
    all at once; returns the processes and the files their probes write."""
    probe, outs, procs = probe_file(tmp_path), [], []
    for i, ask in enumerate(asks):
        out = tmp_path / f"job{i}.json"
        command = [sys.executable, str(probe), str(out), str(seconds)]
        if allocate:
            command = [sys.executable, "-m", "workflow_scripts.cards", *ask, "--", *command]
        procs.append(subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True))
        outs.append(out)
    return procs, outs


def run_jobs(tmp_path: Path, asks: list[list[str]], env: dict[str, str], seconds: float, allocate: bool = True):
    procs, outs = start_jobs(tmp_path, asks, env, seconds, allocate)
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return [Seen.read(out) for out in outs]


@dataclass
class Seen:
    """What one job saw: its cards (today's launch sets none: CUDA then takes card 0), the units
    it held on each, its party, and when it ran."""

    cards: list[str]
    units: int
    party: str | None
    start: float
    end: float

    @classmethod
    def read(cls, path: Path) -> Seen:
        rec = json.loads(path.read_text())
        cards = rec["cards"].split(",") if rec["cards"] is not None else ["0"]
        units = int(rec["share"].split("/")[0]) if rec["share"] else CARD_UNITS
        return cls(cards, units, rec["party"], rec["start"], rec["end"])


def violations(jobs: list[Seen]) -> list[str]:
    """Every moment a job started at which a card was over its units, or held by two parties."""
    found = []
    for job in jobs:
        beside = [other for other in jobs if other.start <= job.start < other.end]
        for card in job.cards:
            on_card = [other for other in beside if card in other.cards]
            units = sum(other.units for other in on_card)
            parties = {other.party for other in on_card}
            if units > CARD_UNITS:
                found.append(f"card {card}: {units} units at once")
            if len(parties) > 1:
                found.append(f"card {card}: parties {sorted(map(str, parties))} at once")
    return found


def most_units_at_once(jobs: list[Seen]) -> int:
    return max(sum(o.units * len(o.cards) for o in jobs if o.start <= j.start < o.end) for j in jobs)


def wait_for(condition, what: str, timeout: float = 180.0):
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)

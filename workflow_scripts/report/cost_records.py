"""What a model cost, read from the records its jobs left: the training log (tokens seen, FLOPs,
peak memory), the provenance records (wall time, processes, device) and the inference speed JSON.
Nothing here reruns or re-estimates anything: a figure no record holds stays empty."""

from __future__ import annotations

import datetime as _dt
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import provenance
from ..errors import PipelineError
from ..jsonl import read_jsonl


@dataclass
class Training:
    """One pretraining or distillation run, as its records tell it."""

    record: Path
    steps: int
    tokens_per_phase: list[int]
    flops: float
    device_hours: float
    device: str
    peak_memory_mb: float | None
    log: Path
    restricted: bool  # the record's mark (trained on credentialed data)
    formula: str | None  # the FLOPs formula the log's figures came from

    @property
    def tokens(self) -> int:
        return sum(self.tokens_per_phase)


@dataclass
class Usage:
    """Fine-tuning device-hours of one model, summed over its runs' provenance records."""

    device_hours: float = 0.0
    runs: int = 0
    devices: set[str] = field(default_factory=set)
    records: list[Path] = field(default_factory=list)


def _time(value: Any, path: Path, key: str) -> _dt.datetime:
    try:
        return _dt.datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise PipelineError(f"{path}: key {key!r} is not an ISO time ({value!r})") from exc


def wall_hours(record: dict[str, Any], path: Path) -> float:
    """Hours from the record's ``started`` to its ``ended``."""
    return (
        _time(record.get("ended"), path, "ended") - _time(record.get("started"), path, "started")
    ).total_seconds() / 3600


def device_name(accelerator: str | None) -> str:
    """The card's name without the count the record puts before it ("2 x NVIDIA H100" -> "NVIDIA H100")."""
    text = accelerator or "cpu"
    count, sep, name = text.partition(" x ")
    return name if sep and count.isdigit() else text


def tokens_and_flops(
    rows: list[dict[str, Any]], batch_size: int, start_step: int, path: Path
) -> tuple[list[int], float]:
    """Tokens seen per phase and training FLOPs, from the log's lines: each line closes the steps since the
    previous one (or since ``start_step``), each step ``batch_size`` sequences of the line's length, and
    each token costs the line's ``flops_per_token`` (FLOPS_FORMULA at that length and masking rate)."""
    per_phase: dict[int, int] = {}
    flops, previous = 0.0, start_step
    for i, row in enumerate(rows, start=1):
        try:
            step, phase, seq_len = int(row["step"]), int(row["phase"]), int(row["seq_len"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PipelineError(f"{path}:{i}: a line without step, phase and seq_len ({exc})") from exc
        if step <= previous:
            raise PipelineError(f"{path}:{i}: step {step} does not follow step {previous}")
        tokens = (step - previous) * batch_size * seq_len
        per_phase[phase] = per_phase.get(phase, 0) + tokens
        flops += tokens * float(row.get("flops_per_token") or 0.0)
        previous = step
    return [per_phase.get(p, 0) for p in range(max(per_phase, default=-1) + 1)], flops


def _settings(record: dict[str, Any], path: Path) -> dict[str, Any]:
    params = record.get("params") or {}
    settings = params.get("pretrain") or params.get("distill")
    if not isinstance(settings, dict) or "batch_size" not in settings:
        raise PipelineError(f"{path}: no params.pretrain or params.distill with batch_size: not a training record")
    return settings


def read_training(record_path: str | Path) -> Training:
    """A pretraining or distillation run from its provenance record and the train_log.jsonl beside it."""
    path = Path(record_path)
    if not path.is_file():
        raise PipelineError(f"{path}: not found; train the model first")
    record = provenance.load(path)
    settings = _settings(record, path)
    log_path = path.parent / "train_log.jsonl"
    if not log_path.is_file():
        raise PipelineError(f"{log_path}: the training log of {path.parent.name} is missing")
    rows = [row for _, row in read_jsonl(log_path)]
    start = int((record.get("branch") or {}).get("step") or 0)
    per_phase, flops = tokens_and_flops(rows, int(settings["batch_size"]), start, log_path)
    result = record.get("result") or {}
    processes = int(result.get("world_size") or 1)
    memory = [float(r["memory_mb"]) for r in rows if isinstance(r.get("memory_mb"), (int, float))]
    return Training(
        record=path,
        steps=int(result.get("steps") or (rows[-1]["step"] if rows else 0)),
        tokens_per_phase=per_phase,
        flops=flops,
        device_hours=processes * wall_hours(record, path),
        device=f"{processes} x {device_name(record.get('accelerator'))}",
        peak_memory_mb=max(memory, default=None),
        log=log_path,
        restricted=bool(record.get("restricted")),
        formula=(record.get("flops") or {}).get("formula"),
    )


def read_usage(records: list[str | Path]) -> Usage:
    """Fine-tuning device-hours over the runs' provenance records; a run occupies one device (or
    the CPU) from its start to its end, also where runs share a card (an upper bound there)."""
    usage = Usage()
    for rec in map(Path, records):
        if not rec.is_file():
            continue
        record = provenance.load(rec)
        usage.device_hours += wall_hours(record, rec)
        usage.runs += 1
        usage.devices.add(device_name(record.get("accelerator")))
        usage.records.append(rec)
    return usage


def read_speed(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise PipelineError(f"{p}: not found; run the model's inference_speed job first")
    data = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "parameters" not in data or "lengths" not in data:
        raise PipelineError(f"{p}: not an inference speed record (no parameters or lengths)")
    return data


def throughput(speed: dict[str, Any], seq_len: int) -> float | None:
    """Sequences/s at ``seq_len`` (None where not measured)."""
    row = next((r for r in speed.get("lengths", []) if r.get("seq_len") == seq_len), None)
    return None if row is None else row.get("sequences_per_s")


def _setup(speed: dict[str, Any]) -> tuple | None:
    """What must match for two records' figures to measure the same work (None: no fingerprint, an older record)."""
    if "architecture" not in speed:
        return None
    return tuple(speed.get(k) for k in ("architecture", "device", "precision", "threads", "batch_size"))


def pool_speeds(speeds: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each model's record with its sequences/s replaced, per length, by the median over every model of the same
    architecture measured the same way, and ``measurements`` counting them: the weights do not change the work,
    and one short measurement on a shared machine moves by a quarter between processes."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for name, speed in speeds.items():
        key = _setup(speed)
        groups[key if key is not None else ("own", name)].append(name)
    out = {}
    for names in groups.values():
        measured = defaultdict(list)
        for n in names:
            for row in speeds[n]["lengths"]:
                if "sequences_per_s" in row:
                    measured[row["seq_len"]].append(row["sequences_per_s"])
        pooled = {seq_len: statistics.median(values) for seq_len, values in measured.items()}
        for name in names:
            lengths = [
                {**row, "sequences_per_s": pooled[row["seq_len"]]} if "sequences_per_s" in row else row
                for row in speeds[name]["lengths"]
            ]
            out[name] = {**speeds[name], "lengths": lengths, "measurements": len(names)}
    return out

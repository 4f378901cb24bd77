"""Packed blocks checked where training reads them.

The pack step records the sha256 of each block file in the shard's meta.json (shards packed
before that carry it in their provenance.json). Training verifies a file the first time a job
opens it, in one streaming pass, and never again in that job: a flipped byte stops the job
naming the shard and how to rebuild it, instead of silently training on other tokens.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..integrity import CHUNK, IntegrityError, sha256_stream

__all__ = ["CHUNK", "block_files", "sha256_stream", "verify_blocks"]

# (resolved path, size, mtime) of every file this process has verified.
_verified: set[tuple[str, int, int]] = set()


def block_files(split: str, packing: str = "concatenate") -> tuple[str, ...]:
    """The files of one split; packing: documents adds each block's document starts."""
    starts = (f"{split}.starts.bin", f"{split}.starts_index.bin") if packing == "documents" else ()
    return f"{split}.tokens.bin", f"{split}.flags.bin", *starts


def recorded_checksums(directory: Path) -> dict[str, str]:
    """File name -> sha256 as recorded at pack time: meta.json, else the pack step's provenance."""
    meta = json.loads((directory / "meta.json").read_text())
    if meta.get("sha256"):
        return meta["sha256"]
    record = directory / "provenance.json"
    if not record.is_file():
        return {}
    outputs = json.loads(record.read_text()).get("outputs", [])
    return {Path(o["path"]).name: o["sha256"] for o in outputs if isinstance(o, dict) and o.get("sha256")}


def rebuild_hint(directory: Path) -> str:
    """How to pack ``directory`` again: the workflow repacks a deleted shard; by hand, the pack command."""
    record = directory / "provenance.json"
    if record.is_file():
        rec = json.loads(record.read_text())
        inputs, params = rec.get("inputs", {}), rec.get("params", {})
        shard, tokenizer = inputs.get("shard", {}).get("path"), inputs.get("tokenizer", {}).get("path")
        if shard and tokenizer and params:
            return (
                f"delete {directory} and rerun snakemake, which packs it again (by hand: python -m "
                f"workflow_scripts.pack.pack --shard {shard} --tokenizer {tokenizer} --seq-len {params['seq_len']} "
                f"--heldout-fraction {params['heldout_fraction']}{packing_arg(params)} --out {directory})"
            )
    return f"delete {directory}; the next run packs it again"


def packing_arg(params: dict) -> str:
    return f" --packing {params['packing']}" if params.get("packing", "concatenate") != "concatenate" else ""


def verify_blocks(directory: str | os.PathLike, split: str) -> None:
    """Check ``split``'s block files in ``directory`` against their recorded checksums, once per job."""
    directory = Path(directory)
    sums = recorded_checksums(directory)
    packing = json.loads((directory / "meta.json").read_text()).get("packing", "concatenate")
    for name in block_files(split, packing):
        path = directory / name
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in _verified:
            continue
        if name not in sums:
            raise IntegrityError(f"{path}: no checksum was recorded when it was packed; {rebuild_hint(directory)}")
        actual = sha256_stream(path)
        if actual != sums[name]:
            raise IntegrityError(
                f"{path}: changed since it was packed (sha256 {actual[:12]}..., recorded {sums[name][:12]}...); "
                f"the packed shard is damaged: {rebuild_hint(directory)}"
            )
        _verified.add(key)

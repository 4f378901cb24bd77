"""Content-based identities: what a packed shard was made from, never file sizes or times.

A corpus rebuilt byte for byte, a vocabulary relearned identically, or ``results/``
restored from a backup (new modification times) give the same keys, so pretraining
resumes; a real change gives a new key.
"""

from __future__ import annotations

import hashlib
import json

PACK_VERSION = "pack_v2"  # v2: blocks are cut per corpus shard (v1 cut one stream over all shards)
# v3 (packing: documents): every document wrapped as [CLS] ... [SEP], blocks cut from that stream
# unwrapped, and each block's document starts stored beside it
DOCUMENTS_VERSION = "pack_v3"
PACKINGS = ("concatenate", "documents")


def pack_version(packing: str) -> str:
    return DOCUMENTS_VERSION if packing == "documents" else PACK_VERSION


def packing_prefix(packing: str) -> str:
    """The path segment of a packing mode: none for concatenate (the layout before modes existed)."""
    return "" if packing == "concatenate" else f"packing~{packing}/"


def packed_subdir(seq_len: int, heldout_fraction: float, packing: str = "concatenate") -> str:
    """``[packing~M/]seq~N/heldout~F`` (F as Python writes the float back, so the path reads back the same value)."""
    return f"{packing_prefix(packing)}seq~{seq_len}/heldout~{float(heldout_fraction)!r}"


def tokenizer_digest(tokenizer) -> str:
    """What decides the token ids and word boundaries: normaliser, pre-tokenizer, model, added tokens."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is not None:
        spec = json.loads(backend.to_str())
        content = {k: spec.get(k) for k in ("normalizer", "pre_tokenizer", "model")}
        content["added_tokens"] = sorted((t["id"], t["content"]) for t in spec.get("added_tokens") or [])
    else:
        content = {"class": type(tokenizer).__name__, "vocab": sorted(tokenizer.get_vocab().items())}
    # tokenizers serialises in a fixed order (vocabulary by id, merges by rank): no re-sorting needed
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()


def pack_key(
    shard_sha256: str, tokenizer: str, seq_len: int, heldout_fraction: float, packing: str = "concatenate"
) -> str:
    """The content key of a packed shard; concatenate's is the one it had before packing modes existed."""
    parts = [pack_version(packing), shard_sha256, tokenizer, seq_len, heldout_fraction]
    blob = json.dumps(parts if packing == "concatenate" else [*parts, packing])
    return hashlib.sha256(blob.encode()).hexdigest()

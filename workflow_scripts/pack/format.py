"""What a packed block's flags mean, and which documents go to the held-out split.

The pack stage writes them and pretraining reads them, so both take them from here.
Documents are assigned to the held-out split by a hash of their id, so the split depends
on neither the seed nor the model.
"""

from __future__ import annotations

import hashlib

# per-token flags
CONTINUATION, WORD_START, SPECIAL = 0, 1, 2


def is_heldout(doc_id: str, fraction: float) -> bool:
    if fraction <= 0:
        return False
    h = int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest(), "big")
    return h / 2**64 < fraction

"""Tag schemes for NER: train with BIO, IO or BIOUL; always score as BIO entities."""

from __future__ import annotations


def entity_types(bio_labels: list[str]) -> list[str]:
    types = []
    for tag in bio_labels:
        if tag != "O" and tag[:2] in ("B-", "I-") and tag[2:] not in types:
            types.append(tag[2:])
    return types


def scheme_labels(bio_labels: list[str], scheme: str) -> list[str]:
    """The label set trained under ``scheme`` for a task declared with BIO tags."""
    prefixes = {"bio": "BI", "io": "I", "bioul": "BILU"}[scheme]
    return ["O"] + [f"{p}-{t}" for t in entity_types(bio_labels) for p in prefixes]


def _split(tag: str) -> tuple[str, str]:
    return ("O", "") if tag == "O" else (tag[0], tag[2:])


def from_bio(tags: list[str], scheme: str) -> list[str]:
    if scheme == "bio":
        return list(tags)
    if scheme == "io":
        return ["O" if t == "O" else f"I-{_split(t)[1]}" for t in tags]
    out = []
    for i, tag in enumerate(tags):
        prefix, kind = _split(tag)
        if prefix == "O":
            out.append("O")
            continue
        nxt_prefix, nxt_kind = _split(tags[i + 1]) if i + 1 < len(tags) else ("O", "")
        continues = nxt_prefix == "I" and nxt_kind == kind
        starts = prefix == "B" or (i == 0 or _split(tags[i - 1])[1] != kind or tags[i - 1] == "O")
        if starts:
            out.append(f"B-{kind}" if continues else f"U-{kind}")
        else:
            out.append(f"I-{kind}" if continues else f"L-{kind}")
    return out


def to_bio(tags: list[str], scheme: str) -> list[str]:
    if scheme == "bio":
        return list(tags)
    out = []
    previous = ("O", "")
    for tag in tags:
        prefix, kind = _split(tag)
        if prefix == "O":
            out.append("O")
        elif scheme == "io":
            inside = previous[0] != "O" and previous[1] == kind
            out.append(f"I-{kind}" if inside else f"B-{kind}")
        elif prefix in ("B", "U"):
            out.append(f"B-{kind}")
        else:
            inside = previous[0] in ("B", "I") and previous[1] == kind
            out.append(f"I-{kind}" if inside else f"B-{kind}")
        previous = (prefix, kind)
    return out

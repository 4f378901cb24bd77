"""Build one corpus from parsed files: apply updates, filter, deduplicate, decontaminate, shard.

    python -m workflow_scripts.corpus.build_corpus --settings S.yaml --in P1.parquet [P2.parquet ...] \\
        --out results/corpus/NAME [--decontaminate results/tasks/T/test_texts.jsonl ...]

The ``--in`` files are taken in application order (PubMed: baseline files ascending,
then update files ascending). The id columns decide which row of each document survives
(``updates.py``: the last occurrence of a PMID + Version wins, DeleteCitation removes it,
the highest version of a PMID is kept). The surviving rows then pass the filters in the
order listed in ``REASONS`` and the kept documents go round-robin into the shards.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import provenance
from ..atomic import atomic_dir, write_json
from ..cli import run
from ..diskspace import no_space_is_an_error, reserve
from ..errors import PipelineError
from ..progress import track
from ..typed import to_dict
from .decontam import NgramIndex
from .dedup import ExactDedup, MinHasher, find_near_duplicates, minhash_params
from .records import iter_parsed, iter_with_signatures, read_info
from .settings import CorpusSettings, load
from .text import detect_language, split_sentences, words
from .updates import resolve_updates

log = logging.getLogger(__name__)

REASONS = (
    "iserror",
    "category",
    "licence",
    "retracted",
    "empty",
    "too_short",
    "language",
    "exact_duplicate",
    "near_duplicate",
    "contaminated",
)
OUT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("text", pa.string()),
        ("words", pa.int64()),
        ("language", pa.string()),
        ("metadata", pa.string()),
    ]
)


LANGS = ("und", "en", "fr", "de", "es", "it", "pt")


class Filters:
    """Per-document filters applied while streaming, in ``REASONS`` order up to exact duplicates."""

    def __init__(self, settings: CorpusSettings) -> None:
        self.s = settings
        self.exact = ExactDedup() if settings.clean.exact_dedup else None
        self.categories = {x.strip() for x in settings.clean.mimic.categories}

    def reason(self, row: dict, language: str) -> str | None:
        c = self.s.clean
        text = row["text"]
        if row["iserror"]:
            return "iserror"
        if self.categories and row["category"] not in self.categories:
            return "category"
        if self.s.type == "pmc" and c.pmc.licence != "all" and row["licence"] != c.pmc.licence:
            return "licence"
        if c.drop_retracted and row["retracted"]:
            return "retracted"
        if not text.strip():
            return "empty"
        if words(text) < c.min_words:
            return "too_short"
        if c.languages and language not in c.languages and language != "und":
            return "language"
        if self.exact is not None and self.exact.is_duplicate(text):
            return "exact_duplicate"
        return None


def _decontamination_index(settings: CorpusSettings, task_texts: Sequence[str]) -> tuple[NgramIndex | None, dict]:
    if not task_texts:
        return None, {}
    d = settings.clean.decontamination
    index = NgramIndex(d.ngram, d.threshold, d.min_words)
    info: dict = {
        "ngram": d.ngram,
        "threshold": d.threshold,
        "tasks": {Path(t).parent.name: index.add_task(t) for t in task_texts},
    }
    info["test_texts_indexed"] = len(index.sizes)
    info["test_texts_too_short"] = index.skipped_short
    info["dropped_by_task"] = {}
    return index, info


def _stage_table(total: dict, dropped: dict) -> list[dict]:
    stages = [{"stage": "input", **total}]
    cur = dict(total)
    for r in REASONS:
        for k in cur:
            cur[k] -= dropped[r][k]
        stages.append({"stage": f"after_{r}", **cur})
    return stages


def _size(text: str) -> dict:
    return {"documents": 1, "words": words(text), "bytes": len(text.encode("utf-8"))}


def _winners(files: Sequence[Path], winners: Sequence[np.ndarray]) -> Iterator[dict]:
    for path, keep in zip(files, winners, strict=True):
        for ri, row in enumerate(iter_parsed(path)):
            if keep[ri]:
                yield row


def _winners_with_signatures(
    files: Sequence[Path], winners: Sequence[np.ndarray], params: dict
) -> Iterator[tuple[dict, np.ndarray | None]]:
    """Surviving rows with their stored signature, None where it was made with other
    MinHash parameters (or none at all) and must be computed again."""
    for path, keep in zip(files, winners, strict=True):
        usable = read_info(path).get("minhash") == params
        for ri, (row, sig) in enumerate(iter_with_signatures(path)):
            if keep[ri]:
                yield row, (sig if usable and len(sig) == params["num_perm"] else None)


def source_selection(files: Sequence[Path]) -> dict:
    """Sum of the PMC cloud batches' selections (articles left out before download), by reason."""
    total: dict = {}
    for p in files:
        sel = read_info(p).get("selection")
        if not sel:
            continue
        for key, value in sel.items():
            if isinstance(value, dict):
                sub = total.setdefault(key, {})
                for k, v in value.items():
                    sub[k] = sub.get(k, 0) + v
            else:
                total[key] = total.get(key, 0) + value
    return total


def build(
    inputs: Sequence[str | Path], out: str | Path, settings: CorpusSettings, decontaminate: Sequence[str] = ()
) -> dict:
    """Write the corpus directory ``out`` (shards, stats.json) and return the stats.

    Pass 1 applies the streaming filters and copies the MinHash signatures of the
    survivors (made by the parse jobs) into a scratch file beside ``out``; near
    duplicates are then found in one batch step; pass 2 re-reads the survivors, drops near duplicates
    and contaminated documents, and writes the shards.
    """
    files = [Path(p) for p in inputs]
    for p in files:
        if not p.is_file():
            raise PipelineError(f"{p}: parsed input not found")
    c = settings.clean
    up = resolve_updates(files)
    index, decontam_info = _decontamination_index(settings, decontaminate)
    filters = Filters(settings)
    zero = {"documents": 0, "words": 0, "bytes": 0}
    total = dict(zero)
    dropped = {r: dict(zero) for r in REASONS}
    shards = [dict(zero) for _ in range(settings.shards)]
    n = up.documents
    survives = np.zeros(n, dtype=bool)
    lang = np.zeros(n, dtype=np.int8)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.scratch.", dir=out.parent) as scratch:
        hasher = MinHasher(c.near_dedup.num_perm, c.near_dedup.shingle, c.near_dedup.seed)
        sigs = None
        if c.near_dedup.enabled and n:
            sigs = np.lib.format.open_memmap(
                Path(scratch) / "minhash.npy", mode="w+", dtype=np.uint32, shape=(n, c.near_dedup.num_perm)
            )
            reserve(sigs.filename, Path(sigs.filename).stat().st_size)
        kept1 = 0
        stream = _winners_with_signatures(files, up.winners, minhash_params(c.near_dedup))
        for k, (row, stored) in enumerate(track(stream, f"filter {settings.name}", n, "docs")):
            size = _size(row["text"])
            for key in total:
                total[key] += size[key]
            language = detect_language(row["text"])
            lang[k] = LANGS.index(language)
            reason = filters.reason(row, language)
            if reason is not None:
                for key in size:
                    dropped[reason][key] += size[key]
                continue
            survives[k] = True
            if sigs is not None:
                sigs[kept1] = stored if stored is not None else hasher.signature(row["text"])
            kept1 += 1
        near = (
            find_near_duplicates(sigs[:kept1], c.near_dedup.threshold, c.near_dedup.seed)
            if sigs is not None
            else np.zeros(kept1, dtype=bool)
        )
        del sigs
        with atomic_dir(out) as tmp:
            writers = [pq.ParquetWriter(tmp / f"shard~{i}.parquet", OUT_SCHEMA) for i in range(settings.shards)]
            buffers: list[list[dict]] = [[] for _ in writers]
            kept1 = kept = 0
            try:
                for k, row in enumerate(track(_winners(files, up.winners), f"write {settings.name}", n, "docs")):
                    if not survives[k]:
                        continue
                    is_near = near[kept1]
                    kept1 += 1
                    text = row["text"]
                    reason = "near_duplicate" if is_near else None
                    if reason is None and index is not None:
                        task = index.match(text)
                        if task is not None:
                            reason = "contaminated"
                            by_task = decontam_info["dropped_by_task"]
                            by_task[task] = by_task.get(task, 0) + 1
                    size = _size(text)
                    if reason is not None:
                        for key in size:
                            dropped[reason][key] += size[key]
                        continue
                    shard = kept % settings.shards
                    kept += 1
                    for key in size:
                        shards[shard][key] += size[key]
                    buffers[shard].append(
                        {
                            "id": row["id"],
                            "source": row["source"],
                            "text": split_sentences(text) if c.sentence_split else text,
                            "words": size["words"],
                            "language": LANGS[lang[k]],
                            "metadata": row["metadata"],
                        }
                    )
                    if len(buffers[shard]) >= 2000:
                        writers[shard].write_table(pa.Table.from_pylist(buffers[shard], OUT_SCHEMA))
                        buffers[shard] = []
                for w, buf in zip(writers, buffers, strict=True):
                    if buf:
                        w.write_table(pa.Table.from_pylist(buf, OUT_SCHEMA))
            finally:
                for w in writers:
                    w.close()
            stages = _stage_table(total, dropped)
            stats = {
                "corpus": settings.name,
                "type": settings.type,
                "files": [p.name for p in files],
                "documents": stages[-1]["documents"],
                "words": stages[-1]["words"],
                "bytes": stages[-1]["bytes"],
                "input": {
                    "rows": up.rows,
                    "malformed": up.malformed,
                    "replaced": up.replaced,
                    "deleted": up.deleted,
                    "delete_not_found": up.delete_not_found,
                    "superseded_versions": up.superseded_versions,
                    **total,
                },
                # malformed records never became documents, so they stand outside the stage table
                "dropped": {"malformed": up.malformed, **{r: dropped[r]["documents"] for r in REASONS}},
                "dropped_words": {r: dropped[r]["words"] for r in REASONS},
                "stages": stages,
                "shards": [{"file": f"shard~{i}.parquet", **s} for i, s in enumerate(shards)],
            }
            selection = source_selection(files)
            if selection:
                stats["source_selection"] = selection
            if index is not None:
                stats["decontamination"] = decontam_info
            write_json(tmp / "stats.json", stats)
    return stats


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", required=True, help="settings YAML with a top-level 'corpus' key")
    ap.add_argument("--in", dest="inputs", nargs="+", required=True, help="parsed Parquet files in application order")
    ap.add_argument("--out", required=True, help="corpus directory to write (results/corpus/NAME)")
    ap.add_argument(
        "--decontaminate",
        nargs="+",
        action="extend",
        default=[],
        help="prepared tasks' test_texts.jsonl, whose test texts are removed from the corpus (repeatable)",
    )
    args = ap.parse_args(argv)
    started = provenance.now()
    settings = load(args.settings)
    with no_space_is_an_error(Path(args.out).parent):
        stats = build(args.inputs, args.out, settings, args.decontaminate)
    log.info(
        "%s: %d documents, %d words; dropped %s",
        settings.name,
        stats["documents"],
        stats["words"],
        json.dumps({k: v for k, v in stats["dropped"].items() if v}),
    )
    out = Path(args.out)
    provenance.record(
        out,
        step="corpus.build",
        inputs={
            "parsed": list(args.inputs),
            "settings": args.settings,
            **({"decontaminate": list(args.decontaminate)} if args.decontaminate else {}),
        },
        params={"corpus": to_dict(settings)},
        outputs=sorted(out.glob("shard~*.parquet")) + [out / "stats.json"],
        restricted=settings.restricted or settings.type == "mimic",
        started=started,
    )


if __name__ == "__main__":
    run(main)

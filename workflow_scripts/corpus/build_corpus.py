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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
from .dedup import MinHasher, find_near_duplicates, minhash_params
from .filters import LANGS, REASONS, Filters, Tally, stage_table
from .records import SHARD_SCHEMA, iter_parsed, iter_with_signatures, read_info
from .settings import CorpusSettings, load
from .text import detect_language, split_sentences, words
from .updates import resolve_updates

log = logging.getLogger(__name__)


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


@dataclass
class Pass1:
    """What the filter pass found: which winning rows survive it, each row's language, and which
    survivors are near duplicates of an earlier one."""

    survives: np.ndarray
    lang: np.ndarray
    near: np.ndarray


def filter_pass(files: Sequence[Path], up, settings: CorpusSettings, tally: Tally, scratch: Path) -> Pass1:
    """Pass 1: the streaming filters, with the survivors' MinHash signatures (made by the parse
    jobs) copied into a scratch file; near duplicates are then found in one batch step."""
    c = settings.clean
    n = up.documents
    survives, lang = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int8)
    filters = Filters(settings)
    hasher = MinHasher(c.near_dedup.num_perm, c.near_dedup.shingle, c.near_dedup.seed)
    sigs = None
    if c.near_dedup.enabled and n:
        sigs = np.lib.format.open_memmap(
            scratch / "minhash.npy", mode="w+", dtype=np.uint32, shape=(n, c.near_dedup.num_perm)
        )
        reserve(sigs.filename, Path(sigs.filename).stat().st_size)
    kept = 0
    stream = _winners_with_signatures(files, up.winners, minhash_params(c.near_dedup))
    for k, (row, stored) in enumerate(track(stream, f"filter {settings.name}", n, "docs")):
        size = _size(row["text"])
        tally.read(size)
        language = detect_language(row["text"])
        lang[k] = LANGS.index(language)
        reason = filters.reason(row, language)
        if reason is not None:
            tally.drop(reason, size)
            continue
        survives[k] = True
        if sigs is not None:
            sigs[kept] = stored if stored is not None else hasher.signature(row["text"])
        kept += 1
    if sigs is None:
        return Pass1(survives, lang, np.zeros(kept, dtype=bool))
    return Pass1(survives, lang, find_near_duplicates(sigs[:kept], c.near_dedup.threshold, c.near_dedup.seed))


@contextmanager
def shard_writers(folder: Path, count: int) -> Iterator[Callable[[int, dict], None]]:
    """``add(shard, row)``, buffered and written 2,000 rows at a time into shard~<i>.parquet."""
    writers = [pq.ParquetWriter(folder / f"shard~{i}.parquet", SHARD_SCHEMA) for i in range(count)]
    buffers: list[list[dict]] = [[] for _ in writers]

    def add(shard: int, row: dict) -> None:
        buffers[shard].append(row)
        if len(buffers[shard]) >= 2000:
            writers[shard].write_table(pa.Table.from_pylist(buffers[shard], SHARD_SCHEMA))
            buffers[shard] = []

    try:
        yield add
        for w, buf in zip(writers, buffers, strict=True):
            if buf:
                w.write_table(pa.Table.from_pylist(buf, SHARD_SCHEMA))
    finally:
        for w in writers:
            w.close()


def write_pass(
    files: Sequence[Path],
    up,
    settings: CorpusSettings,
    found: Pass1,
    tally: Tally,
    decontamination: tuple[NgramIndex | None, dict],
    tmp: Path,
) -> None:
    """Pass 2: re-read the survivors, drop near duplicates and contaminated documents, and deal
    the rest round-robin into the shards."""
    index, decontam_info = decontamination
    stream = track(_winners(files, up.winners), f"write {settings.name}", up.documents, "docs")
    kept1 = kept = 0
    with shard_writers(tmp, settings.shards) as add:
        for k, row in enumerate(stream):
            if not found.survives[k]:
                continue
            is_near = found.near[kept1]
            kept1 += 1
            text = row["text"]
            reason = "near_duplicate" if is_near else None
            if reason is None and index is not None and (task := index.match(text)) is not None:
                reason = "contaminated"
                by_task = decontam_info["dropped_by_task"]
                by_task[task] = by_task.get(task, 0) + 1
            size = _size(text)
            if reason is not None:
                tally.drop(reason, size)
                continue
            shard = kept % settings.shards
            kept += 1
            tally.keep(shard, size)
            add(
                shard,
                {
                    "id": row["id"],
                    "source": row["source"],
                    "text": split_sentences(text) if settings.clean.sentence_split else text,
                    "words": size["words"],
                    "language": LANGS[found.lang[k]],
                    "metadata": row["metadata"],
                },
            )


def corpus_stats(
    settings: CorpusSettings, files: Sequence[Path], up, tally: Tally, decontamination: tuple[NgramIndex | None, dict]
) -> dict:
    """stats.json: what was read, what each filter dropped, the stage table and the shards."""
    stages = stage_table(tally.total, tally.dropped)
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
            **tally.total,
        },
        # malformed records never became documents, so they stand outside the stage table
        "dropped": {"malformed": up.malformed, **{r: tally.dropped[r]["documents"] for r in REASONS}},
        "dropped_words": {r: tally.dropped[r]["words"] for r in REASONS},
        "stages": stages,
        "shards": [{"file": f"shard~{i}.parquet", **s} for i, s in enumerate(tally.shards)],
    }
    selection = source_selection(files)
    if selection:
        stats["source_selection"] = selection
    index, decontam_info = decontamination
    if index is not None:
        stats["decontamination"] = decontam_info
    return stats


def build(
    inputs: Sequence[str | Path], out: str | Path, settings: CorpusSettings, decontaminate: Sequence[str] = ()
) -> dict:
    """Write the corpus directory ``out`` (shards, stats.json) and return the stats.

    Pass 1 applies the streaming filters and finds near duplicates among the survivors; pass 2
    re-reads the survivors, drops near duplicates and contaminated documents, and writes the shards.
    """
    files = [Path(p) for p in inputs]
    for p in files:
        if not p.is_file():
            raise PipelineError(f"{p}: parsed input not found")
    up = resolve_updates(files)
    decontamination = _decontamination_index(settings, decontaminate)
    tally = Tally(settings.shards)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.scratch.", dir=out.parent) as scratch:
        found = filter_pass(files, up, settings, tally, Path(scratch))
        with atomic_dir(out) as tmp:
            write_pass(files, up, settings, found, tally, decontamination, tmp)
            stats = corpus_stats(settings, files, up, tally, decontamination)
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

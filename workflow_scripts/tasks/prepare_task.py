"""Convert one task's raw files to normalised JSONL splits with a data card.

    python -m workflow_scripts.tasks.prepare_task --settings S.yaml --raw results/raw/tasks/T \\
        --out results/tasks/T

A split path in the task spec is a file or folder under the raw directory. It may
- point inside an archive: ``datasets.tar.gz/datasets/NER/BC2GM/train.tsv`` (.zip, .tar,
  .tar.gz, .tgz; only the named member, or folder, is extracted to a temporary folder), or
  inside an archive in an archive (``ChemProt_Corpus.zip/ChemProt_Corpus/chemprot_training.zip/...``);
- name a fold: ``{fold}`` is replaced by 0..folds-1, ``{fold1}`` by 1..folds;
- carry a reader selector after ``#`` (``ebm_nlp_2_00.tar.gz/ebm_nlp_2_00#train``);
- join several sources with ``+`` (``7B1_golden.json+7B2_golden.json``);
- take part of a source: ``holdout:``, ``index:`` (BLURB's index files) and ``rows:``, see
  subsets.py.
"""

from __future__ import annotations

import argparse
import logging
import tarfile
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .. import provenance
from ..atomic import atomic_dir, write_json, write_jsonl
from ..cli import run
from ..errors import PipelineError
from ..textfile import read_text
from ..typed import load_settings, to_dict
from . import origin, subsets
from .readers import get_reader
from .spec import SPLITS, PrepareTaskSettings

# Every test example's texts, one JSON line each: the file corpora are decontaminated against.
TEST_TEXTS = "test_texts.jsonl"
# Fields of a normalised record that hold text.
TEXT_FIELDS = ("text", "text_a", "text_b", "question", "context", "tokens")

log = logging.getLogger(__name__)
ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")


def _is_archive(name: str) -> bool:
    return name.endswith(ARCHIVES)


def _member_name(name: str) -> str:
    return name[2:] if name.startswith("./") else name.rstrip("/")


def _extract(archive: Path, member: str, dest: Path, shown: str) -> None:
    """Extract ``member`` (a file, or a folder with everything under it) of ``archive`` into
    ``dest``; refuse members that would land outside ``dest``."""

    def wanted(name: str) -> bool:
        name = _member_name(name)
        return name == member or name.startswith(member + "/")

    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                names = [n for n in zf.namelist() if wanted(n)]
                for n in names:
                    if Path(n).is_absolute() or ".." in Path(n).parts:
                        raise PipelineError(f"{shown}: unsafe member path {n!r}; refusing to extract")
                zf.extractall(dest, members=names)
        else:
            with tarfile.open(archive) as tf:
                members = [m for m in tf.getmembers() if wanted(m.name)]
                names = [m.name for m in members]
                tf.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise PipelineError(f"{shown}: cannot extract ({exc}); download it again") from exc
    if not names:
        raise PipelineError(
            f"{shown}: the archive has no member {member!r}; check the task's split paths against the release"
        )


class RawFiles:
    """Finds the files a task's split paths name: in the raw dir, the user's local copy of
    credentialed data, or inside archives (each extracted once)."""

    def __init__(self, spec: PrepareTaskSettings, raw: Path, tmp: Path) -> None:
        self.spec, self.raw, self.tmp = spec, raw, tmp
        self.extracted: dict[tuple[Path, str], Path] = {}
        self.used: dict[str, Path] = {}

    def _source(self, first: str) -> Path:
        candidates = [self.raw / first]
        if self.spec.source.local_dir:
            candidates.append(Path(self.spec.source.local_dir).expanduser() / first)
        for c in candidates:
            if c.exists():
                self.used[first] = c
                return c
        where = " or ".join(str(c.parent) for c in candidates)
        entry = self.spec.source.files.get(first)
        if self.spec.restricted or (self.spec.source.access and not (entry and entry.url)):
            kind = "credentialed" if self.spec.restricted else "registration-only"
            raise PipelineError(
                f"task {self.spec.name}: {first} not found in {where}. This is {kind} data: "
                f"{self.spec.source.access or 'obtain access from the data provider'}; then set "
                f"tasks.{self.spec.name}.source.local_dir to the folder holding your copy"
            )
        hint = f" ({self.spec.source.access})" if self.spec.source.access else ""
        raise PipelineError(
            f"task {self.spec.name}: {first} not found in {where}; run the download step for this "
            f"task first (snakemake results/raw/tasks/{self.spec.name}){hint}"
        )

    def resolve(self, rel: str) -> tuple[Path, str]:
        """Absolute path of ``rel`` (extracting what it names from an archive) and its display name."""
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise PipelineError(f"tasks.{self.spec.name}.splits: {rel!r} must be a relative path in the raw dir")
        current = self._source(parts[0])
        i = 1
        while i < len(parts):
            if current.is_file() and _is_archive(current.name):
                # The member runs to the end, or to an archive inside it (ChemProt's zips in a zip).
                end = next((k for k in range(i, len(parts) - 1) if _is_archive(parts[k])), len(parts) - 1)
                member = "/".join(parts[i : end + 1])
                current = self._unpack(current, member, "/".join(parts[:i])) / member
                i = end + 1
                continue
            current = current / parts[i]
            if not current.exists():
                raise PipelineError(
                    f"task {self.spec.name}: {'/'.join(parts[: i + 1])} not found "
                    f"(split path {rel!r}); {origin.path_hint(self.spec, rel)}"
                )
            i += 1
        return current, rel

    def _unpack(self, archive: Path, member: str, shown: str) -> Path:
        key = (archive, member)
        if key not in self.extracted:
            dest = Path(tempfile.mkdtemp(prefix="extract-", dir=self.tmp))
            log.info("extracting %s from %s", member, shown)
            _extract(archive, member, dest, shown)
            self.extracted[key] = dest
        return self.extracted[key]


def _leaks(spec: PrepareTaskSettings, out: dict[str, list[dict]], chosen: dict[str, tuple[str, str, str]]) -> None:
    """Subsets of one source must not share a document with test."""
    test_docs = {subsets.document(r["id"]) for r in out["test"]}
    for split in ("train", "dev"):
        if chosen[split][2] == chosen["test"][2]:
            shared = sorted(test_docs & {subsets.document(r["id"]) for r in out[split]})
            if shared:
                raise PipelineError(
                    f"task {spec.name}: {split} and test share {len(shared)} documents (first: {shared[0]!r}); "
                    f"check the index files or row ranges of tasks.{spec.name}.splits"
                )


def read_split_paths(spec: PrepareTaskSettings, paths: dict[str, str], files: RawFiles) -> dict[str, list[dict]]:
    """Read train/dev/test given their (fold-resolved) split paths."""
    chosen = {split: subsets.parse(path) for split, path in paths.items()}
    test_kind, test_arg, test_source = chosen["test"]
    for split in ("train", "dev"):
        kind, arg, source = chosen[split]
        other_part = kind in ("index", "rows") and test_kind in ("index", "rows") and arg != test_arg
        if source == test_source and not other_part:
            # The bug that scored HoC on its dev file, or chose checkpoints on test folds.
            raise PipelineError(
                f"tasks.{spec.name}.splits: {split} and test both read {test_source!r}; "
                "a model would be chosen or trained on test data"
            )
    reader = get_reader(spec.format, f"tasks.{spec.name}.format")
    cache: dict[str, list[dict]] = {}

    def load(path: str) -> list[dict]:
        if path not in cache:
            records = []
            for part in path.split("+"):
                rel, _, selector = part.partition("#")
                location, name = files.resolve(rel)
                try:
                    records += reader(location, spec, name=name, selector=selector or None)
                except PipelineError as exc:
                    raise PipelineError(f"{exc}; {origin.format_hint(spec, rel)}") from exc
            cache[path] = records
        return cache[path]

    holdouts: dict[str, set[str]] = {}
    out: dict[str, list[dict]] = {}
    for split in SPLITS:
        kind, amount, source = chosen[split]
        if kind == "holdout":
            records = load(source)
            ids = [r["id"] for r in records]
            if len(set(ids)) != len(ids):
                raise PipelineError(f"task {spec.name}: {source} has duplicate ids; cannot hold out by id")
            keep = subsets.held_out(ids, amount, f"tasks.{spec.name}.splits.{split}")
            holdouts[source] = keep
            out[split] = [r for r in records if r["id"] in keep]
    for split in SPLITS:
        kind, arg, source = chosen[split]
        where = f"tasks.{spec.name}.splits.{split}"
        if kind == "index":
            location, name = files.resolve(arg)
            entries = subsets.index_entries(read_text(location, name))
            out[split] = subsets.by_index(load(source), entries, name, source)
        elif kind == "rows":
            out[split] = subsets.by_rows(load(source), arg, where)
        elif not kind:
            held = holdouts.get(source, set())
            out[split] = [r for r in load(source) if r["id"] not in held]
    _leaks(spec, out, chosen)
    return out


def _distribution(spec: PrepareTaskSettings, records: list[dict]) -> dict[str, Any]:
    if spec.type in ("ner", "pico"):
        tags = Counter(t for r in records for t in r["tags"])
        card: dict[str, Any] = {"words": sum(len(r["tokens"]) for r in records), "tags": dict(sorted(tags.items()))}
        if spec.type == "ner":
            mentions = Counter(t[2:] for r in records for t in r["tags"] if t.startswith("B-"))
            card["mentions"] = dict(sorted(mentions.items()))
        return card
    if spec.type == "doc_classification":
        labels = Counter(x for r in records for x in r["labels"])
        return {"labels": dict(sorted(labels.items())), "no_label": sum(1 for r in records if not r["labels"])}
    if spec.type == "similarity":
        scores = [r["score"] for r in records]
        if not scores:
            return {"score": {}}
        return {"score": {"min": min(scores), "mean": sum(scores) / len(scores), "max": max(scores)}}
    return {"labels": dict(sorted(Counter(r["label"] for r in records).items()))}


def _count(key: str, split_card: dict[str, Any]) -> int:
    if key.endswith("_mentions"):
        return sum(split_card.get("mentions", {}).values())
    return split_card["examples"]


def check_counts(spec: PrepareTaskSettings, cards: dict[str, dict[str, Any]], where: str = "") -> dict[str, Any]:
    """Compare split sizes with the registry's expected counts. A mismatch stops the run when the
    counts were checked against the real release files, and only warns when they come from a
    paper's table; the counts found are recorded either way."""
    found = {key: _count(key, cards[key.removesuffix("_mentions")]) for key in spec.expected_counts}
    differ = {key: n for key, n in found.items() if n != spec.expected_counts[key]}
    for key, n in differ.items():
        what = "entity mentions" if key.endswith("_mentions") else "examples"
        message = (
            f"task {spec.name}{where}: split {key.removesuffix('_mentions')} has {n} {what}, expected "
            f"{spec.expected_counts[key]} (tasks.{spec.name}.expected_counts.{key})"
        )
        if spec.expected_counts_checked:
            raise PipelineError(
                f"{message}; these counts were checked against the real release, so the raw files "
                f"differ from it: {origin.count_hint(spec, key)}"
            )
        log.warning("%s, a count from a paper's table never checked against the release; going on", message)
    if not spec.expected_counts:
        status = "not recorded"
    elif differ:
        status = "differs from the paper's counts"
    else:
        status = "ok"
    return {
        "expected": dict(spec.expected_counts),
        "found": found,
        "checked_against_release": spec.expected_counts_checked,
        "status": status,
    }


def _duplicate_ids(spec: PrepareTaskSettings, split: str, records: list[dict]) -> None:
    seen: set[str] = set()
    for r in records:
        if r["id"] in seen:
            raise PipelineError(f"task {spec.name}: split {split} has the id {r['id']!r} twice; ids must be unique")
        seen.add(r["id"])


def write_splits(
    spec: PrepareTaskSettings, splits: dict[str, list[dict]], dest: Path, where: str = ""
) -> dict[str, Any]:
    dest.mkdir(parents=True, exist_ok=True)
    cards = {}
    for split in SPLITS:
        records = splits[split]
        if not records:
            raise PipelineError(f"task {spec.name}{where}: split {split} is empty; {origin.split_hint(spec, split)}")
        _duplicate_ids(spec, split, records)
        write_jsonl(dest / f"{split}.jsonl", records)
        cards[split] = {"examples": len(records), **_distribution(spec, records)}
    return {"splits": cards, "count_check": check_counts(spec, cards, where)}


def _texts(record: dict) -> Iterator[str]:
    for key in TEXT_FIELDS:
        value = record.get(key)
        if isinstance(value, list):
            value = " ".join(map(str, value))
        if isinstance(value, str) and value:
            yield value


def split_texts(records: list[dict], prefix: str = "") -> list[dict]:
    """Each test example's texts (a token list joined by spaces): what corpora are decontaminated against."""
    return [{"id": prefix + str(r["id"]), "texts": list(_texts(r))} for r in records]


def fold_paths(spec: PrepareTaskSettings, fold: int | None) -> dict[str, str]:
    if fold is None:
        return dict(spec.splits)
    return {s: p.replace("{fold1}", str(fold + 1)).replace("{fold}", str(fold)) for s, p in spec.splits.items()}


def prepare(spec: PrepareTaskSettings, raw: Path, out: Path) -> dict[str, Any]:
    """Write ``out`` (atomically): the JSONL splits (per fold for folded tasks), data_card.json
    and provenance.json. Returns the data card."""
    started = provenance.now()
    raw = Path(raw)
    if not raw.is_dir() and not spec.source.local_dir:
        raise PipelineError(f"task {spec.name}: raw folder {raw} not found; run the download step first")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        # Archives are unpacked beside the output, not in a possibly small system /tmp.
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f".prepare-{spec.name}-", dir=out.parent)))
        files = RawFiles(spec, raw, tmp)
        dest = stack.enter_context(atomic_dir(out))
        card: dict[str, Any] = {
            "task": spec.name,
            "type": spec.type,
            "format": spec.format,
            "restricted": spec.restricted,
        }
        texts = []
        if spec.folds:
            card["folds"] = {}
            for k in range(spec.folds):
                splits = read_split_paths(spec, fold_paths(spec, k), files)
                card["folds"][str(k)] = write_splits(spec, splits, dest / f"fold~{k}", f" fold {k}")
                texts += split_texts(splits["test"], f"fold~{k}/")
        else:
            splits = read_split_paths(spec, fold_paths(spec, None), files)
            card.update(write_splits(spec, splits, dest))
            texts = split_texts(splits["test"])
        write_jsonl(dest / TEST_TEXTS, texts)
        write_json(dest / "data_card.json", card)
        counts = {k: fold["count_check"] for k, fold in card["folds"].items()} if spec.folds else card["count_check"]
        outputs = sorted(p for p in dest.rglob("*") if p.is_file())
        provenance.record(
            dest,
            step="tasks.prepare",
            inputs={"raw": sorted(str(p) for p in files.used.values())},
            params={"task": to_dict(spec)},
            restricted=spec.restricted,
            started=started,
            extra={
                "count_check": counts,
                "outputs": [
                    {
                        "path": str(out / p.relative_to(dest)),
                        "sha256": provenance.sha256_file(p),
                        "bytes": p.stat().st_size,
                    }
                    for p in outputs
                ],
            },
        )
    return card


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--settings", required=True, help="YAML with top-level key 'task': the task's source, splits and labels"
    )
    parser.add_argument("--raw", required=True, help="the task's raw folder (results/raw/tasks/<task>)")
    parser.add_argument("--out", required=True, help="output folder (results/tasks/<task>)")
    args = parser.parse_args(argv)
    spec = load_settings(args.settings, PrepareTaskSettings, "task")
    card = prepare(spec, Path(args.raw), Path(args.out))
    sizes = card.get("splits") or card["folds"]["0"]["splits"]
    log.info("%s: %s", spec.name, ", ".join(f"{s} {sizes[s]['examples']}" for s in SPLITS))


if __name__ == "__main__":
    run(main)

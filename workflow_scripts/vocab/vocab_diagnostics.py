"""Diagnostics of a learned vocabulary beside the tokenizers it is compared with.

    python -m workflow_scripts.vocab.vocab_diagnostics --vocab results/vocab/V --name V \\
        [--task-dir results/tasks/T ...] [--compare NAME=PATH ...] [--terms FILE] \\
        --out results/vocab/V/diagnostics.json

Task directories without NER data (``train.jsonl`` rows without ``tags``) are skipped.
``--compare`` takes a tokenizer directory; anything else is tried as a hub id.

diagnostics.json (every number per tokenizer, so each block reads as a table)::

    {
      "vocab": "V",
      "tasks": ["bc5cdr_chem", ...],            # NER tasks measured
      "terms_file": "...", "terms": 353,
      "tokenizers": {                            # the vocabulary first, then each --compare
        "V": {
          "path": "results/vocab/V", "size": 30000,
          "fragmentation": {                     # sub-tokens per word (BioMegatron Table 3)
            "bc5cdr_chem": {"all_words": 1.21, "entity_words": 1.65,
                            "all_whole": 0.84, "entity_whole": 0.58,   # share of words kept as one token
                            "words": 123, "entity_word_count": 45}},
          "term_coverage": 0.87,                 # share of the terms that are one token
          "examples": {"lymphoma": ["l", "##ym", "##ph", "##oma"], ...}
        }, ...},
      "term_pieces": {"lymphoma": {"V": 1, "general": 4}, ...},   # PubMedBERT Table 1 style
      "overlap": [{"a": "V", "b": "general", "shared": 12000, "jaccard": 0.25}]
    }
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from .. import provenance
from ..atomic import write_json
from ..cli import run
from ..errors import PipelineError
from ..jsonl import read_jsonl
from . import metrics

log = logging.getLogger(__name__)
DEFAULT_TERMS = Path(__file__).with_name("biomedical_terms.txt")
EXAMPLES = ("lymphoma", "acetyltransferase", "naloxone", "cardiomyocyte", "oropharyngeal")


def load_terms(path: Path) -> list[str]:
    if not path.is_file():
        raise PipelineError(f"{path}: term list not found")
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and line not in terms:
            terms.append(line)
    if not terms:
        raise PipelineError(f"{path}: the term list is empty; put one term per line")
    return terms


def read_ner(task_dir: Path) -> list[dict] | None:
    """The NER training examples of a task directory, or None for a task of another type."""
    path = task_dir / "train.jsonl"
    if not path.is_file():
        raise PipelineError(f"{task_dir}: no train.jsonl; run the task's preparation step first")
    rows = []
    for lineno, row in read_jsonl(path):
        if "tags" not in row:
            return None
        if not isinstance(row.get("tokens"), list) or len(row["tokens"]) != len(row["tags"]):
            raise PipelineError(f"{path}:{lineno}: 'tokens' and 'tags' must be lists of equal length")
        rows.append(row)
    return rows


def load_tokenizer(name: str, path: str):
    from transformers import AutoTokenizer

    try:
        if Path(path).is_dir():
            return AutoTokenizer.from_pretrained(path, local_files_only=True)
        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise PipelineError(
            f"tokenizer {name!r}: cannot load {path} ({exc}); give a tokenizer directory "
            "(AutoTokenizer.save_pretrained) or a hub id reachable from this machine"
        ) from exc


def parse_compare(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise PipelineError(f"--compare {item!r}: expected NAME=PATH")
        out[name] = path
    return out


def describe(
    tokenizer, path: str, tasks: dict[str, tuple[list[str], list[str]]], terms: list[str]
) -> tuple[dict, dict]:
    frag = {}
    for task, (words, entities) in tasks.items():
        a, e = metrics.fragmentation(tokenizer, words), metrics.fragmentation(tokenizer, entities)
        frag[task] = {
            "all_words": a["tokens_per_word"],
            "entity_words": e["tokens_per_word"],
            "all_whole": a["whole_words"],
            "entity_whole": e["whole_words"],
            "words": a["words"],
            "entity_word_count": e["words"],
        }
    coverage, per_term = metrics.term_coverage(tokenizer, terms)
    examples = dict(zip(EXAMPLES, metrics.pieces(tokenizer, list(EXAMPLES)), strict=True))
    entry = {
        "path": path,
        "size": len(tokenizer.get_vocab()),
        "fragmentation": frag,
        "term_coverage": coverage,
        "examples": examples,
    }
    return entry, per_term


def diagnose(vocab: str, name: str, task_dirs: Sequence[str], compare: dict[str, str], terms_file: Path) -> dict:
    terms = load_terms(terms_file)
    tasks = {}
    for d in task_dirs:
        rows = read_ner(Path(d))
        if rows is None:
            log.info("%s: not an NER task, skipped", d)
            continue
        tasks[Path(d).name] = metrics.ner_words(rows)
    if name in compare:
        raise PipelineError(f"--compare {name}=...: the name is already the vocabulary's own; choose another")
    result = {
        "vocab": name,
        "tasks": list(tasks),
        "terms_file": str(terms_file),
        "terms": len(terms),
        "tokenizers": {},
        "term_pieces": {t: {} for t in terms},
        "overlap": [],
    }
    vocabs = {}
    for tname, path in {name: vocab, **compare}.items():
        tokenizer = load_tokenizer(tname, path)
        entry, per_term = describe(tokenizer, path, tasks, terms)
        result["tokenizers"][tname] = entry
        for term, n in per_term.items():
            result["term_pieces"][term][tname] = n
        vocabs[tname] = metrics.surface_vocab(tokenizer)
    result["overlap"] = metrics.overlap(vocabs)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", required=True, help="the vocabulary's tokenizer directory")
    parser.add_argument("--name", required=True, help="the vocabulary's name")
    parser.add_argument(
        "--task-dir",
        nargs="+",
        action="extend",
        default=[],
        help="task directories (NER ones are measured); repeat the flag or list several",
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        action="extend",
        default=[],
        help="NAME=PATH of tokenizers to compare with; repeat the flag or list several",
    )
    parser.add_argument("--terms", default=str(DEFAULT_TERMS), help="term list, one per line (default: ours)")
    parser.add_argument("--out", required=True, help="diagnostics.json to write")
    args = parser.parse_args(argv)

    started = provenance.now()
    compare = parse_compare(args.compare)
    result = diagnose(args.vocab, args.name, args.task_dir, compare, Path(args.terms))
    write_json(args.out, result)
    provenance.record(
        args.out,
        step="vocab.diagnostics",
        inputs={
            "vocab": args.vocab,
            "tasks": list(args.task_dir),
            "compare": list(compare.values()),
            "terms": args.terms,
        },
        params={"name": args.name, "compare": compare},
        outputs=[args.out],
        started=started,
    )


if __name__ == "__main__":
    run(main)

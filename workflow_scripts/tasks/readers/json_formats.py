"""JSON formats: PubMedQA, BioASQ and MedNLI."""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import PipelineError
from ...jsonl import parse_lines
from ...textfile import read_text
from ..spec import TaskSpec
from .common import Record, check_label, numbered_lines


def _load_json(path: Path, name: str):
    try:
        return json.loads(read_text(path, name))
    except json.JSONDecodeError as exc:
        raise PipelineError(f"{name}:{exc.lineno}: not valid JSON ({exc.msg})") from exc


def _json_where(path: Path, name: str, key: str) -> str:
    """``name:line`` of the line naming ``key``; searched only when there is an error to report."""
    needle = json.dumps(key)
    for number, line in enumerate(read_text(path, name).split("\n"), start=1):
        if needle in line:
            return f"{name}:{number}"
    return f"{name}:1"


def _json_label(label: str, spec: TaskSpec, path: Path, name: str, key: str) -> str:
    if spec.labels and label not in spec.labels:
        check_label(label, spec, _json_where(path, name, key))
    return label


def read_pubmedqa(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """PubMedQA JSON (ori_pqal.json and the split files): an object mapping PMID to
    ``{"QUESTION", "CONTEXTS": [...], "final_decision": yes|no|maybe, ...}``. The selector
    ``in:<file>`` or ``notin:<file>`` keeps the PMIDs that are (not) keys of another JSON
    object in the same folder (``test_ground_truth.json`` names the 500 test questions)."""
    data = _load_json(path, name)
    if not isinstance(data, dict):
        raise PipelineError(f"{name}:1: expected a JSON object mapping PMID to a question")
    if selector:
        mode, _, other = selector.partition(":")
        if mode not in ("in", "notin") or not other:
            raise PipelineError(f"{name}#{selector}: selector must be 'in:<file>' or 'notin:<file>'")
        ids = _load_json(path.parent / other, str(Path(name).parent / other))
        if not isinstance(ids, dict):
            raise PipelineError(f"{Path(name).parent / other}:1: expected a JSON object keyed by PMID")
        data = {k: v for k, v in data.items() if (k in ids) == (mode == "in")}
    records = []
    for pmid, item in data.items():
        if not isinstance(item, dict):
            raise PipelineError(f"{_json_where(path, name, pmid)}: entry {pmid} is not an object")
        missing = [k for k in ("QUESTION", "CONTEXTS", "final_decision") if k not in item]
        if missing:
            raise PipelineError(f"{_json_where(path, name, pmid)}: entry {pmid} lacks {missing[0]!r}")
        if not isinstance(item["CONTEXTS"], list):
            raise PipelineError(f"{_json_where(path, name, pmid)}: entry {pmid}: CONTEXTS must be a list of passages")
        label = str(item["final_decision"]).strip().lower()
        records.append(
            {
                "id": str(pmid),
                "question": str(item["QUESTION"]).strip(),
                "context": " ".join(str(c).strip() for c in item["CONTEXTS"]),
                "label": _json_label(label, spec, path, name, pmid),
            }
        )
    return records


def read_bioasq(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """BioASQ Task B JSON: ``{"questions": [{"id", "body", "type", "exact_answer",
    "snippets": [{"text"}, ...]}, ...]}``; the yes/no questions, each with its snippets
    joined as the context."""
    data = _load_json(path, name)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise PipelineError(f"{name}:1: expected a JSON object with a 'questions' list")
    records = []
    for i, q in enumerate(data["questions"]):
        if not isinstance(q, dict) or q.get("type") != "yesno":
            continue
        qid = str(q.get("id", i))
        missing = [k for k in ("body", "exact_answer", "snippets") if k not in q]
        if missing:
            raise PipelineError(f"{_json_where(path, name, qid)}: question {qid} lacks {missing[0]!r}")
        answer = q["exact_answer"]
        answer = answer[0] if isinstance(answer, list) and answer else answer
        label = str(answer).strip().lower()
        context = " ".join(str(s.get("text", "")).strip() for s in q["snippets"] if isinstance(s, dict))
        records.append(
            {
                "id": qid,
                "question": str(q["body"]).strip(),
                "context": context,
                "label": _json_label(label, spec, path, name, qid),
            }
        )
    return records


def read_mednli(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """MedNLI JSONL (the SNLI layout): one object per line with ``sentence1``, ``sentence2``,
    ``gold_label`` and ``pairID``."""
    records = []
    for number, item in parse_lines(numbered_lines(path, name), name):
        where = f"{name}:{number}"
        missing = [k for k in ("sentence1", "sentence2", "gold_label") if k not in item]
        if missing:
            raise PipelineError(f"{where}: missing {missing[0]!r}")
        records.append(
            {
                "id": str(item.get("pairID", f"{Path(name).stem}-{number}")),
                "text_a": item["sentence1"],
                "text_b": item["sentence2"],
                "label": check_label(str(item["gold_label"]), spec, where),
            }
        )
    return records

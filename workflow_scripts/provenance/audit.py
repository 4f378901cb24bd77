"""Trace a table cell back to the raw files and verify every recorded checksum.

    python -m workflow_scripts.provenance <table.csv | tables dir> <model> <task> [--root DIR] [--json]

The tables' provenance.json lists the runs behind each cell; from each run's metrics file the
audit follows the ``provenance`` pointer of every input, recursively, through fine-tuning,
the checkpoint, the vocabulary, the corpus shards and the raw downloads. Every file with a
recorded sha256 (inputs and outputs of each record) is checked against the file on disk, and
every upstream record against the digest its consumer recorded: ``ok``, ``changed`` or
``missing``. Recorded paths are relative to the run directory the steps ran in; it is found
from where the tables are (or given with --root). Exit status 1 when anything changed.

For groups.csv and blurb.csv, <task> is a group or BLURB row and the runs behind it are
those of its member tasks.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PipelineError
from . import FILENAME, load, sha256_file

CATEGORIES = {
    "finetune": "run",
    "pretrain": "checkpoint",
    "distill": "checkpoint",
    "vocab": "vocabulary",
    "packed": "packed data",
    "corpus": "corpus",
    "raw": "raw file",
    "tasks": "task data",
    "tables": "table",
    "configs": "settings",
}
ORDER = [
    "table",
    "run",
    "checkpoint",
    "vocabulary",
    "packed data",
    "corpus",
    "task data",
    "raw file",
    "settings",
    "other",
]
ROW_KEYS = ("task", "group", "type")


def category(path: str) -> str:
    parts = Path(path).parts
    for i, part in enumerate(parts[:-1]):
        if part == "results" and parts[i + 1] in CATEGORIES:
            return CATEGORIES[parts[i + 1]]
    return "other"


@dataclass
class FileCheck:
    path: str
    category: str
    role: str
    recorded: str
    status: str
    actual: str | None = None
    recorded_by: str = ""


@dataclass
class RecordInfo:
    path: str
    category: str
    step: str
    seed: Any
    restricted: bool
    workflow: dict
    versions: dict
    started: str
    ended: str
    params: dict


@dataclass
class Audit:
    root: str
    cell: dict
    runs: list[dict]
    records: list[RecordInfo] = field(default_factory=list)
    files: list[FileCheck] = field(default_factory=list)

    @property
    def changed(self) -> list[FileCheck]:
        return [f for f in self.files if f.status == "changed"]

    @property
    def missing(self) -> list[FileCheck]:
        return [f for f in self.files if f.status == "missing"]

    def versions(self) -> dict[str, list[str]]:
        out: dict[str, set] = {}
        for r in self.records:
            for name, version in (r.versions or {}).items():
                out.setdefault(name, set()).add(str(version))
        return {k: sorted(v) for k, v in sorted(out.items())}

    def code(self) -> list[dict]:
        seen = []
        for r in self.records:
            w = {"commit": (r.workflow or {}).get("commit"), "dirty": (r.workflow or {}).get("dirty")}
            if w not in seen:
                seen.append(w)
        return seen

    def to_json(self) -> dict:
        return {
            "root": self.root,
            "cell": self.cell,
            "runs": self.runs,
            "records": [asdict(r) for r in self.records],
            "files": [asdict(f) for f in self.files],
            "code": self.code(),
            "versions": self.versions(),
            "summary": {
                "files": len(self.files),
                "ok": sum(f.status == "ok" for f in self.files),
                "changed": len(self.changed),
                "missing": len(self.missing),
            },
        }


class Tracer:
    """Follows provenance records depth-first, each record and each file once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: dict[str, RecordInfo] = {}
        self.files: dict[tuple[str, str], FileCheck] = {}

    def resolve(self, path: str) -> Path:
        p = Path(path)
        return p if p.is_absolute() else self.root / p

    def check(self, path: str, recorded: str, role: str, by: str, kind: str | None = None) -> FileCheck:
        key = (path, recorded)
        if key in self.files:
            return self.files[key]
        p = self.resolve(path)
        if not p.is_file():
            status, actual = "missing", None
        else:
            actual = sha256_file(p)
            status = "ok" if actual == recorded else "changed"
        self.files[key] = FileCheck(path, kind or category(path), role, recorded, status, actual, by)
        return self.files[key]

    def entry(self, entry: Any, role: str, by: str) -> None:
        if not isinstance(entry, dict) or "path" not in entry:
            return
        if entry.get("missing"):
            self.files.setdefault(
                (entry["path"], ""),
                FileCheck(
                    entry["path"], category(entry["path"]), f"{role} (absent when recorded)", "", "missing", None, by
                ),
            )
            return
        if entry.get("sha256"):
            self.check(entry["path"], entry["sha256"], role, by)
        upstream = entry.get("provenance")
        if not upstream:
            return
        if entry.get("provenance_sha256"):
            kind = category(upstream)
            check = self.check(upstream, entry["provenance_sha256"], f"{role} (provenance record)", by, kind)
            if check.status == "missing":
                return
        elif not self.resolve(upstream).is_file():
            self.files[(upstream, "")] = FileCheck(
                upstream, category(upstream), f"{role} (provenance record)", "", "missing", None, by
            )
            return
        self.record(upstream)

    def record(self, path: str, rec: dict | None = None, follow: bool = True) -> None:
        """Describe the record at ``path`` and, with ``follow``, check and trace its inputs and outputs."""
        if path in self.records:
            return
        if rec is None:
            try:
                rec = load(self.resolve(path))
            except json.JSONDecodeError as exc:
                raise PipelineError(
                    f"{path}: provenance record is not valid JSON ({exc.msg} at line {exc.lineno})"
                ) from exc
        artifact = str(Path(path).parent) if Path(path).name == FILENAME else path
        self.records[path] = RecordInfo(
            path=path,
            category=category(artifact),
            step=rec.get("step", ""),
            seed=rec.get("seed"),
            restricted=bool(rec.get("restricted")),
            workflow=rec.get("workflow") or {},
            versions=rec.get("versions") or {},
            started=rec.get("started", ""),
            ended=rec.get("ended", ""),
            params=rec.get("params") or {},
        )
        if not follow:
            return
        for out in rec.get("outputs", []):
            if isinstance(out, dict) and out.get("sha256"):
                self.check(out["path"], out["sha256"], "output", path)
        for role, value in (rec.get("inputs") or {}).items():
            for item in value if isinstance(value, list) else [value]:
                self.entry(item, role, path)


def infer_root(tables_dir: Path, record: dict) -> Path:
    """The run directory: where the tables' recorded output paths resolve to the actual files."""
    here = tables_dir.resolve()
    for out in record.get("outputs", []):
        rel = Path(out.get("path", ""))
        if rel.is_absolute() or not rel.parent.parts:
            continue
        n = len(rel.parent.parts)
        if here.parts[-n:] == rel.parent.parts:
            return Path(*here.parts[:-n])
    cwd = record.get("cwd")
    return Path(cwd) if cwd and Path(cwd).is_dir() else Path.cwd()


def _read_rows(table: Path) -> list[dict]:
    with open(table, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def find_cell(table: Path, model: str, task: str) -> dict:
    """The table row of ``model`` (name or display name) and ``task`` (task, group or type)."""
    rows = _read_rows(table)
    if not rows:
        raise PipelineError(f"{table}: the table has no rows")
    key = next((k for k in ROW_KEYS if k in rows[0]), None)
    if key is None or "model" not in rows[0]:
        raise PipelineError(
            f"{table}: not one of our tables (expected a 'model' column and one of {', '.join(ROW_KEYS)})"
        )
    for row in rows:
        if model in (row["model"], row.get("model_display")) and task in (row[key], row.get(f"{key}_display")):
            return row
    models = sorted({r["model"] for r in rows})
    names = sorted({r[key] for r in rows})
    raise PipelineError(
        f"{table}: no cell for model {model!r} and {key} {task!r} (models: "
        f"{', '.join(models)}; {key}s: {', '.join(names)})"
    )


def audit(target: str | Path, model: str, task: str, root: str | Path | None = None) -> Audit:
    target = Path(target)
    tables_dir, table = (target, target / "medians.csv") if target.is_dir() else (target.parent, target)
    if not table.is_file():
        raise PipelineError(f"{table}: table not found; give a table CSV or the tables directory")
    rec_path = tables_dir / FILENAME
    if not rec_path.is_file():
        raise PipelineError(
            f"{rec_path}: the tables have no provenance record; rebuild them with workflow_scripts.report.tables"
        )
    record = load(rec_path)
    if "runs" not in record:
        raise PipelineError(
            f"{rec_path}: key 'runs' is missing; this is not the record of workflow_scripts.report.tables"
        )
    base = Path(root) if root is not None else infer_root(tables_dir, record)
    row = find_cell(table, model, task)
    members = row["members"].split(";") if row.get("members") else [row.get("task", "")]
    runs = [r for r in record["runs"] if r["model"] == row["model"] and r["task"] in members and r.get("used", True)]
    tracer = Tracer(base)
    try:
        by = str(rec_path.resolve().relative_to(base.resolve()))
    except ValueError:
        by = str(rec_path)
    # Only the cell's runs are followed, not every input of the tables.
    tracer.record(by, record, follow=False)
    for out in record.get("outputs", []):
        if Path(out["path"]).name == table.name:
            tracer.check(out["path"], out["sha256"], "table", by)
    metrics_inputs = {e["path"]: e for e in record.get("inputs", {}).get("metrics", []) if isinstance(e, dict)}
    for run in runs:
        entry = metrics_inputs.get(run["metrics"])
        if entry is None:
            tracer.check(run["metrics"], "", "metrics", by)
        else:
            tracer.entry(entry, "metrics", by)
    for role, entry in record.get("inputs", {}).items():
        if role != "metrics":
            tracer.entry(entry, role, by)
    cell = {"table": str(table), **row}
    return Audit(str(base), cell, runs, list(tracer.records.values()), list(tracer.files.values()))


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def format_text(a: Audit) -> str:
    c = a.cell
    name = c.get("task") or c.get("group") or c.get("type")
    lines = [
        f"Cell: {Path(c['table']).name}  model {c['model']}  {name}  value {c.get('value') or '-'}"
        + (f"  n {c['n']}/{c['expected_n']}" if "n" in c else "")
        + ("  [restricted]" if c.get("restricted") == "True" else ""),
        f"Run directory: {a.root}",
        "",
        f"Runs behind it ({len(a.runs)}):",
    ]
    for r in sorted(a.runs, key=lambda r: (r["task"], r["fold"], r["seed"])):
        lines.append(f"  {r['task']}  fold {r['fold']}  seed {r['seed']}  score {r['score']:.4f}  {r['metrics']}")
    lines += ["", f"Records followed ({len(a.records)}):"]
    for r in sorted(a.records, key=lambda r: (ORDER.index(r.category), r.path)):
        commit = r.workflow.get("commit") or "unknown"
        dirty = " (uncommitted changes)" if r.workflow.get("dirty") else ""
        seed = f"  seed {r.seed}" if r.seed is not None else ""
        restricted = "  [restricted]" if r.restricted else ""
        lines.append(f"  {r.category:<11} {r.path}  step {r.step}{seed}  code {commit[:12]}{dirty}{restricted}")
    lines += ["", f"Files verified ({len(a.files)}):"]
    for f in sorted(a.files, key=lambda f: (ORDER.index(f.category), f.path)):
        status = f.status.upper() if f.status != "ok" else "ok"
        now = f"  (now {_short(f.actual)})" if f.status == "changed" else ""
        lines.append(f"  {f.category:<11} {f.path}  sha256 {_short(f.recorded)}  {status}{now}")
    lines += [
        "",
        "Code version: "
        + "; ".join(
            f"commit {w['commit'] or 'unknown'}" + (" with uncommitted changes" if w["dirty"] else "") for w in a.code()
        ),
    ]
    versions = a.versions()
    lines.append("Package versions: " + ", ".join(f"{k} {' / '.join(v)}" for k, v in versions.items()))
    mixed = [k for k, v in versions.items() if len(v) > 1]
    if mixed:
        lines.append("Note: steps ran with different versions of " + ", ".join(mixed))
    ok = sum(f.status == "ok" for f in a.files)
    lines.append(f"Summary: {len(a.files)} files verified: {ok} ok, {len(a.changed)} changed, {len(a.missing)} missing")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_scripts.provenance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("table", help="a table CSV (medians.csv, groups.csv, blurb.csv) or the tables directory")
    parser.add_argument("model", help="model name or display name")
    parser.add_argument("task", help="task name or display name (or a group / BLURB row of groups.csv / blurb.csv)")
    parser.add_argument("--root", help="run directory the recorded paths are relative to (default: inferred)")
    parser.add_argument("--json", action="store_true", help="print the trace as JSON")
    args = parser.parse_args(argv)
    result = audit(args.table, args.model, args.task, args.root)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(result))
    for f in result.changed:
        print(f"changed: {f.path} (recorded {_short(f.recorded)}, now {_short(f.actual)})", file=sys.stderr)
    for f in result.missing:
        print(f"missing: {f.path}", file=sys.stderr)
    return 1 if result.changed else 0

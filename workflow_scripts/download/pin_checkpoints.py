"""Write into a study's config the commit each unpinned hub checkpoint points to now.

    python -m workflow_scripts.download.pin_checkpoints config.yaml [--branch main]

Run it once where the hub is reachable (a login node). For every model whose checkpoint reads
``{hub: REPO, revision: null}`` it asks the hub which commit ``--branch`` is and writes that
commit in place of ``null``, leaving the rest of the file (comments, order) as it was. From then
on every job reads that commit's snapshot, whatever the branch does later.

A checkpoint (or ``init``) given as a local folder is pinned by content: the sha256 of every file
transformers loads from it goes to ``results/raw/models/<model>.pinned.json`` in the run directory
(``--directory``, default: the config's folder), and every job that loads the folder checks it
against that record. Run it again after changing such a folder on purpose.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from .. import provenance
from ..atomic import write_text
from ..checkpoint_integrity import pinned_record
from ..cli import run
from ..errors import PipelineError
from ..integrity import sha256_stream
from .fetch import Options
from .hub import HubFile, revision_info, wanted
from .local_copy import tree_digest

log = logging.getLogger(__name__)


def unpinned(config: dict) -> dict[str, str]:
    """Model name -> hub repository of every checkpoint whose revision is null."""
    out = {}
    for name, entry in (config.get("models") or {}).items():
        checkpoint = (entry or {}).get("checkpoint")
        if isinstance(checkpoint, dict) and checkpoint.get("hub") and checkpoint.get("revision") is None:
            out[name] = checkpoint["hub"]
    return out


def write_revision(text: str, repo: str, commit: str) -> str:
    """``text`` with ``revision: null`` after ``hub: REPO`` (inline or block mapping) set to ``commit``."""
    pattern = re.compile(rf"(hub:\s*['\"]?{re.escape(repo)}['\"]?\s*[,\n]\s*revision:\s*)(null|~)(?=[\s,}}])")
    return pattern.sub(lambda m: m.group(1) + commit, text)


def pin(path: Path, branch: str, opts: Options) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    todo = unpinned(yaml.safe_load(text) or {})
    commits = {}
    for repo in sorted(set(todo.values())):
        commits[repo], _ = revision_info(repo, branch, opts)
        text = write_revision(text, repo, commits[repo])
        log.info("%s: %s is commit %s", repo, branch, commits[repo])
    left = unpinned(yaml.safe_load(text) or {})
    if left:
        name = sorted(left)[0]
        raise PipelineError(
            f"{path}: models.{name}.checkpoint: could not rewrite its revision in place; "
            f"set revision: {commits[left[name]]} by hand"
        )
    write_text(path, text)
    return {name: commits[repo] for name, repo in todo.items()}


def local_folders(config: dict) -> dict[str, tuple[str, str]]:
    """Record name -> (config key, folder) of every checkpoint or ``init`` given as a path."""
    models = config.get("models") or {}
    out = {}
    for name, entry in models.items():
        entry = entry or {}
        if isinstance(entry.get("checkpoint"), str):
            out[name] = (f"models.{name}.checkpoint", entry["checkpoint"])
        if isinstance(entry.get("init"), str) and entry["init"] not in models:
            out[f"{name}.init"] = (f"models.{name}.init", entry["init"])
    return out


def pin_local(config: dict, root: Path) -> dict[str, Path]:
    """Record the files of each local checkpoint folder; return record name -> record path."""
    written = {}
    for name, (key, folder) in sorted(local_folders(config).items()):
        path = Path(folder).expanduser()
        path = path if path.is_absolute() else root / path
        if not path.is_dir():
            raise PipelineError(f"{key}: {folder}: local checkpoint folder not found")
        found = [HubFile(p.name, 0, None, None) for p in sorted(path.iterdir()) if p.is_file()]
        files = [
            {"path": f.path, "sha256": sha256_stream(path / f.path), "bytes": (path / f.path).stat().st_size}
            for f in wanted(found)
        ]
        record = pinned_record(name, root)
        record.parent.mkdir(parents=True, exist_ok=True)
        provenance.record(
            path,
            step="pin_checkpoints",
            inputs={},
            params={"model": name, "folder": folder},
            extra={"files": files, "tree_sha256": tree_digest(files)},
            path=record,
        )
        log.info("%s: %d files of %s recorded in %s", name, len(files), folder, record)
        written[name] = record
    return written


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", type=Path, help="the study's config.yaml")
    ap.add_argument("--branch", default="main", help="the branch (or tag) whose current commit is pinned")
    ap.add_argument("--directory", type=Path, help="the run directory (default: the config's folder)")
    args = ap.parse_args(argv)
    pinned = pin(args.config, args.branch, Options())
    print(f"{args.config}: pinned {len(pinned)} checkpoint(s)" + "".join(f"\n  {n}: {c}" for n, c in pinned.items()))
    config = yaml.safe_load(args.config.read_text(encoding="utf-8")) or {}
    recorded = pin_local(config, args.directory or args.config.resolve().parent)
    listed = "".join(f"\n  {n}: {p}" for n, p in recorded.items())
    print(f"{args.config}: recorded {len(recorded)} local folder(s){listed}")


if __name__ == "__main__":
    run(main)

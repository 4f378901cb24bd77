"""Write into a study's config the commit each unpinned hub checkpoint points to now.

    python -m workflow_scripts.download.pin_checkpoints config.yaml [--branch main]

Run it once where the hub is reachable (a login node). For every model whose checkpoint reads
``{hub: REPO, revision: null}`` it asks the hub which commit ``--branch`` is and writes that
commit in place of ``null``, leaving the rest of the file (comments, order) as it was. From then
on every job reads that commit's snapshot, whatever the branch does later.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from .fetch import Options
from .hub import revision_info

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


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", type=Path, help="the study's config.yaml")
    ap.add_argument("--branch", default="main", help="the branch (or tag) whose current commit is pinned")
    args = ap.parse_args(argv)
    pinned = pin(args.config, args.branch, Options())
    print(f"{args.config}: pinned {len(pinned)} checkpoint(s)" + "".join(f"\n  {n}: {c}" for n, c in pinned.items()))


if __name__ == "__main__":
    run(main)

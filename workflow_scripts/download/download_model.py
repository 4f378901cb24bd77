"""Snapshot a hub checkpoint at its pinned commit into the run directory, once.

    python -m workflow_scripts.download.download_model --hub REPO --revision COMMIT \\
        --key models.NAME.checkpoint --out results/raw/models/NAME

Every consumer (fine-tuning, continued pretraining, a teacher, packing with its tokenizer)
reads the snapshot, so compute nodes need no network. It appears complete or not at all, and
its ``provenance.json`` records the commit and every file's sha256.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from .. import provenance
from ..atomic import atomic_dir
from ..cli import run
from ..errors import PipelineError
from ..integrity import sha256_file
from .fetch import Options
from .hub import PIN_COMMAND, HubCheckpoint, download_file, endpoint, revision_info, wanted
from .local_copy import tree_digest

log = logging.getLogger(__name__)


def snapshot(checkpoint: HubCheckpoint, key: str, out: Path, opts: Options) -> None:
    if checkpoint.revision is None:
        raise PipelineError(f"{key}.revision: unpinned; run `{PIN_COMMAND}` where the hub is reachable")
    started = provenance.now()
    commit, files = revision_info(checkpoint.hub, checkpoint.revision, opts)
    if commit != checkpoint.revision:
        raise PipelineError(f"{key}: the hub answers revision {checkpoint.revision} with commit {commit}")
    chosen = wanted(files)
    if not any(f.path == "config.json" for f in chosen):
        raise PipelineError(f"{key}: {checkpoint.hub}@{commit} has no config.json: not a transformers checkpoint")
    with atomic_dir(out) as tmp:
        for i, f in enumerate(chosen, 1):
            download_file(checkpoint.hub, commit, f, tmp / f.path, opts)
            log.info("%s@%s: file %d of %d, %s (%d bytes)", checkpoint.hub, commit[:8], i, len(chosen), f.path, f.size)
        described = [
            {"path": f.path, "sha256": sha256_file(tmp / f.path), "bytes": (tmp / f.path).stat().st_size}
            for f in chosen
        ]
        provenance.record(
            tmp,
            step="download_model",
            inputs={},
            params={"hub": checkpoint.hub, "revision": checkpoint.revision, "endpoint": endpoint()},
            started=started,
            extra={"files": described, "tree_sha256": tree_digest(described), "skipped": len(files) - len(chosen)},
        )
    log.info("%s@%s: %d files in %s", checkpoint.hub, commit[:8], len(chosen), out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", required=True, help="repository id, e.g. FacebookAI/roberta-base")
    ap.add_argument("--revision", help="the pinned commit (absent: unpinned, refused)")
    ap.add_argument("--key", required=True, help="the config key naming the checkpoint (for errors)")
    ap.add_argument("--out", required=True, help="snapshot directory")
    ap.add_argument("--retries", type=int, default=5, help="retries per file after the first attempt")
    args = ap.parse_args(argv)
    snapshot(HubCheckpoint(args.hub, args.revision), args.key, Path(args.out), Options(retries=args.retries))


if __name__ == "__main__":
    run(main)

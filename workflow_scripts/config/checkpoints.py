"""Which checkpoints a study names on a hub, and whether each is pinned to a commit."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..download.hub import PIN_COMMAND, HubCheckpoint
from ..errors import PipelineError
from .study import Study

# owner/name or name: what a hub id looks like (a relative path to a folder may too)
HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def hub_checkpoints(study: Study) -> dict[str, HubCheckpoint]:
    return {name: m.checkpoint for name, m in study.models.items() if isinstance(m.checkpoint, HubCheckpoint)}


def check_local(study: Study, is_dir: Callable[[str], bool] = os.path.isdir) -> None:
    """A checkpoint given as a string is a local folder; a hub id there (no folder of that name)
    is refused, naming the key: unpinned, it would move under the study."""
    local = {f"models.{n}.checkpoint": m.checkpoint for n, m in study.models.items() if isinstance(m.checkpoint, str)}
    local |= {f"models.{n}.init": m.init for n, m in study.models.items() if m.init and m.init not in study.models}
    for key, value in local.items():
        if not is_dir(value) and HUB_ID.match(value):
            raise PipelineError(
                f"{key}: {value!r} is no local folder; name a hub checkpoint with its commit, "
                f"{{hub: {value}, revision: null}}, then run `{PIN_COMMAND}`"
            )


def unpinned(study: Study) -> dict[str, str]:
    """Model name -> config key of every hub checkpoint still without its commit."""
    return {n: f"models.{n}.checkpoint.revision" for n, c in hub_checkpoints(study).items() if c.revision is None}


def refuse_unpinned(keys: list[str]) -> None:
    if keys:
        raise PipelineError(f"{keys[0]}: hub checkpoint without its commit; run `{PIN_COMMAND}` first")

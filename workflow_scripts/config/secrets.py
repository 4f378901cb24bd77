"""Credentials never travel inside the configuration.

A URL with ``user:password@`` would reach rule parameters, command lines (visible in
``ps``), logs and Snakemake's own metadata, so the config is refused before any job
starts; credentials come from the environment or a netrc file instead
(workflow_scripts/download/credentials.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..errors import PipelineError

_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]*@")

HOW = (
    "remove them from the URL and supply them the supported way: for physionet.org the environment "
    "variables PHYSIONET_USERNAME and PHYSIONET_PASSWORD, for any host a line 'machine HOST login USER "
    "password PASS' in ~/.netrc (or in the file named by NETRC)"
)


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def refuse_url_credentials(config: Any) -> None:
    """Raise PipelineError naming the first key whose URL carries credentials (never the URL itself)."""
    for where, text in _strings(config, ""):
        if _USERINFO.match(text.strip()):
            raise PipelineError(f"{where}: credentials inside a URL are refused; {HOW}")

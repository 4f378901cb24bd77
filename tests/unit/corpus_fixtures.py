"""Settings files of the corpus steps, as the workflow writes them.

Imported as ``corpus_fixtures`` (tests/unit is on pytest's pythonpath).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from workflow_scripts.corpus.settings import load, parse_view
from workflow_scripts.typed import to_dict


def parse_settings(corpus_settings: Path) -> Path:
    """The parse step's settings file beside a corpus's settings file: the part parsing reads."""
    path = corpus_settings.with_name(f"parse-{corpus_settings.name}")
    path.write_text(yaml.safe_dump({"corpus": to_dict(parse_view(load(corpus_settings)))}))
    return path

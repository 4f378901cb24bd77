"""``python -m workflow_scripts.provenance``: audit a table cell (see ``audit``)."""

import sys

from ..cli import run
from .audit import main


def _main(argv=None) -> None:
    status = main(argv)
    if status:
        sys.exit(status)


if __name__ == "__main__":
    run(_main)

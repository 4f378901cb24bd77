"""Entry-point wrapper shared by every `python -m workflow_scripts.<step>` command."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence

from . import diskspace, numerics
from .errors import PipelineError


def _module_names(record: logging.LogRecord) -> bool:
    """Every module logs as ``getLogger(__name__)``; a step run with ``python -m`` shows its module path, not
    ``__main__``."""
    if record.name == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        record.name = spec.name if spec else record.name
    return True


def run(main: Callable[[Sequence[str] | None], object], argv: Sequence[str] | None = None) -> None:
    """Run a step's ``main``; a PipelineError, or a full disk anywhere in a step (whose atomic
    writes have removed their temporaries), becomes one line on stderr and exit status 2."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        stream=sys.stderr,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(_module_names)
    try:
        numerics.apply_deterministic()
        main(argv)
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        if not diskspace.is_no_space(exc):
            raise
        where = diskspace.written_path(exc, sys.argv[1:] if argv is None else argv)
        print(f"error: {diskspace.no_space(where)}", file=sys.stderr)
        sys.exit(2)

"""Progress reporting a person can follow, in a terminal and in a log file alike.

On a terminal this is a live tqdm bar; in a log (stderr not a tty, as under Snakemake
or Slurm) tqdm's carriage-return redraws would collapse into one unreadable line, so
each update is a plain line instead, at most every ``interval`` seconds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


class LineProgress:
    """A tqdm-like counter that prints ``desc: n/total unit (rate/s) extra`` lines."""

    def __init__(self, desc: str, total: int | None, unit: str, interval: float) -> None:
        self.desc, self.total, self.unit, self.interval = desc, total, unit, interval
        self.n = 0
        self.start = self.last = time.monotonic()
        self.postfix = ""

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._emit()

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def _emit(self) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        total = f"/{self.total}" if self.total is not None else ""
        extra = f" {self.postfix}" if self.postfix else ""
        print(
            f"{self.desc}: {self.n}{total} {self.unit} ({self.n / elapsed:.1f} {self.unit}/s){extra}",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        self._emit()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(desc: str, total: int | None = None, unit: str = "it", interval: float = 10.0):
    """A progress counter with ``update(n)``, ``set_postfix_str(s)`` and ``close()``."""
    if sys.stderr.isatty():
        return tqdm(desc=desc, total=total, unit=unit, file=sys.stderr)
    return LineProgress(desc, total, unit, interval)


def track(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """Iterate over ``items`` while reporting progress."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with progress(desc, total, unit) as bar:
        for item in items:
            yield item
            bar.update(1)

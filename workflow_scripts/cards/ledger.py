"""Who holds which units of which card: one JSON ledger in a per-user lock folder.

Every read and change of the ledger happens under one ``flock`` (``ledger.lock``). Each holder
also holds an ``flock`` on a file of its own (``holders/<id>``) for as long as any process of its
job lives; a holding whose file can be locked by someone else has lost its job and is dropped on
the next look, so a SIGKILLed job frees its cards without PIDs or timeouts.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import PipelineError
from .plan import CARD_UNITS, Request, choose, usage

FOLDER = "WORKFLOW_CARDS_DIR"
POLL_SECONDS = 0.5


def lock_folder(env: dict[str, str] | None = None) -> Path:
    """``WORKFLOW_CARDS_DIR`` where set, else ``/tmp/workflow-cards-<uid>``, which must be this user's
    own folder. Each user has a ledger of their own: users sharing a server split its cards between
    them with ``CUDA_VISIBLE_DEVICES``."""
    env = dict(os.environ) if env is None else env
    if env.get(FOLDER):
        folder = Path(env[FOLDER])
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    folder = Path("/tmp") / f"workflow-cards-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PipelineError(f"{folder}: not a folder of yours; remove it, or set {FOLDER} to a folder of your own")
    return folder


@dataclass
class Holding:
    holder: str
    cards: dict[str, int]  # units on each card, in the order the cards are offered
    fd: int  # the holder's file, open and locked: the holding lasts while a copy of it is open


class Ledger:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "ledger.json"
        self.holders = folder / "holders"
        self.holders.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def locked(self):
        fd = os.open(self.folder / "ledger.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> dict[str, dict]:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise PipelineError(f"{self.path}: not a ledger ({exc}); delete it while no job holds a card") from None

    def _write(self, holdings: dict[str, dict]) -> None:
        part = self.path.with_name(self.path.name + ".part")
        part.write_text(json.dumps(holdings, indent=1, sort_keys=True))
        os.replace(part, self.path)

    def _dead(self, holder: str) -> bool:
        """Whether no process holds ``holder``'s file any more (its file is removed then)."""
        path = self.holders / holder
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        path.unlink(missing_ok=True)
        return True

    def _live(self) -> dict[str, dict]:
        """The holdings whose jobs still run (under the lock); the others leave the ledger."""
        holdings = self._read()
        live = {holder: entry for holder, entry in holdings.items() if not self._dead(holder)}
        for orphan in {p.name for p in self.holders.iterdir()} - set(live):
            self._dead(orphan)  # a holder that died before its ledger entry was written
        if live != holdings:
            self._write(live)
        return live

    def holdings(self) -> dict[str, dict]:
        with self.locked():
            return self._live()

    def try_take(self, request: Request, offered: Sequence[str], party: str | None, command: str) -> Holding | None:
        holder = uuid.uuid4().hex[:16]
        with self.locked():
            holdings = self._live()
            cards = choose(request, offered, holdings, party or holder)
            if cards is None:
                return None
            fd = os.open(self.holders / holder, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            holdings[holder] = {
                "party": party or holder,
                "cards": cards,
                "pid": os.getpid(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "command": command[:300],
            }
            self._write(holdings)
        return Holding(holder, cards, fd)

    def take(
        self,
        request: Request,
        offered: Sequence[str],
        party: str | None,
        command: str,
        say: Callable[[str], None],
        poll: float = POLL_SECONDS,
    ) -> Holding:
        """Wait until the request fits, saying once what it waits for."""
        said = False
        while (holding := self.try_take(request, offered, party, command)) is None:
            if not said:
                say(f"cards: waiting for {request.describe()} among {','.join(offered)} ({busy(self.holdings())})")
                said = True
            time.sleep(poll)
        return holding


def busy(holdings: dict[str, dict]) -> str:
    """Units in use on each card, e.g. ``0: 840/840, 1: 420/840``."""
    use = usage(holdings)
    return ", ".join(f"{card}: {use[card].units}/{CARD_UNITS}" for card in sorted(use)) or "none held"

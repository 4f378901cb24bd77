"""Take a job's cards, then become its command (see the package's docstring).

python -m workflow_scripts.cards --cards 2 -- torchrun --standalone --nproc-per-node 2 -m ...
python -m workflow_scripts.cards --share 105 -- python -m workflow_scripts.preload ...
python -m workflow_scripts.cards --list
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from ..errors import PipelineError
from . import HOLDER, PARTY, SHARE
from .ledger import Ledger, busy, lock_folder
from .plan import CARD_UNITS, Request
from .visible import visible_cards


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def job_environment(request: Request, command: list[str]) -> dict[str, str]:
    """The variables the command runs with once its cards are taken (waiting until they are);
    the holding rides on standard input, which every process of the job inherits."""
    offered, source = visible_cards()
    request.check(offered, source)
    holding = Ledger(lock_folder()).take(request, offered, os.environ.get(PARTY), shlex.join(command), say)
    os.dup2(holding.fd, 0)
    os.close(holding.fd)
    units = sorted(set(holding.cards.values()))
    say(f"cards: {','.join(holding.cards)} ({request.describe()}; holder {holding.holder})")
    return {
        "CUDA_VISIBLE_DEVICES": ",".join(holding.cards),
        # indices as nvidia-smi numbers the cards, whatever CUDA would rank fastest
        "CUDA_DEVICE_ORDER": os.environ.get("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
        HOLDER: holding.holder,
        SHARE: f"{units[0]}/{CARD_UNITS}",
    }


def listing() -> str:
    offered, source = visible_cards()
    holdings = Ledger(lock_folder()).holdings()
    lines = [f"cards offered ({source}): {','.join(offered) or 'none'}; in use: {busy(holdings)}"]
    for holder, entry in sorted(holdings.items(), key=lambda item: item[1]["since"]):
        cards = ", ".join(f"{card}: {units}" for card, units in entry["cards"].items())
        lines.append(f"  {holder} [{cards}] party {entry['party']}, pid {entry['pid']} since {entry['since']}")
        lines.append(f"    {entry['command']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.cards", description=__doc__.split("\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--cards", type=int, help="whole cards")
    what.add_argument("--share", type=int, help=f"units of one card of {CARD_UNITS}")
    what.add_argument("--list", action="store_true", help="show the cards and who holds them")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the job's command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        if args.list:
            print(listing())
            return
        if not command:
            parser.error("give the job's command after --")
        os.environ.update(job_environment(Request(args.cards or 0, args.share or 0), command))
    except PipelineError as exc:
        sys.exit(f"error: {exc}")
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        say(f"error: cannot run {command[0]}: {exc}")
        sys.exit(127)


if __name__ == "__main__":
    main()

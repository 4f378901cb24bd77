"""Cards of one GPU server without a scheduler, shared out among the jobs that run on it.

    python -m workflow_scripts.cards (--cards N | --share UNITS) -- COMMAND [ARGS...]
    python -m workflow_scripts.cards --list

A job asks for ``N`` whole cards (pretraining, distillation) or for ``UNITS`` of one card's
``GPU_SHARE_UNITS`` (840; a fine-tuning run at ``runs_per_gpu: k`` takes 840 / k, so 4 large runs
and 8 base runs fill a card alike). The command waits until its cards are free, then runs with
``CUDA_VISIBLE_DEVICES`` naming them (``visible.py``: which cards there are; ``ledger.py``: who holds
what; ``plan.py``: which cards a request gets). Cards held by one invocation of Snakemake (its
*party*) are never given to another.

The holding lives exactly as long as the job's processes: it is an ``flock`` on a file of the
holder's own, opened as the command's standard input, which every process of the job inherits
(torchrun's workers, which get no other descriptor; the fork of the preloaded interpreter, which
is sent the command's standard streams). The kernel drops the lock when the last of them exits,
however it ends, SIGKILL included; the next request finds the lock gone and takes the cards back.
"""

from __future__ import annotations

# environment of the job's command: the holder's id and the units it holds on each card, for its provenance
HOLDER = "WORKFLOW_CARDS_HOLDER"
SHARE = "WORKFLOW_CARDS_SHARE"
# set by the Snakefile on a GPU server: the jobs of one invocation share cards with each other only
PARTY = "WORKFLOW_CARDS_PARTY"


def job_cards(env: dict[str, str]) -> dict[str, str | None] | None:
    """What a job's provenance records of its cards: the cards it saw, the holding and its share;
    None where no card was handed out or hidden (the CPU, Slurm)."""
    if "CUDA_VISIBLE_DEVICES" not in env and HOLDER not in env:
        return None
    return {
        "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"),
        "holder": env.get(HOLDER),
        "share": env.get(SHARE),
    }

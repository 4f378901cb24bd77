"""Training steps keep freed memory for the next step: fewer page faults, the same arithmetic."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# Twenty steps of a distillation-sized softmax pair ([2,048 positions, 1,200 words], 10 MB per
# tensor), in a fresh process, after twenty more that warm it up as a training run is warm: the page
# faults they take and the loss they compute. Right after one step, glibc's own adaptive thresholds
# sometimes kept the memory as well (26k faults plain against 9.6-19k kept on a Zen 3).
STEPS = textwrap.dedent(
    """
    import json, resource, sys, torch
    from workflow_scripts import allocator
    kept = allocator.keep_freed_memory() if sys.argv[1] == "keep" else False
    torch.set_num_threads(1)
    x = torch.randn(2048, 1200, generator=torch.Generator().manual_seed(0))
    def step():
        return (torch.log_softmax(x / 2, -1) - torch.softmax(x / 2, -1)).sum()
    for _ in range(20):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    losses = [step().item() for _ in range(20)]
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    print(json.dumps({"kept": kept, "faults": faults, "losses": losses}))
    """
)


def _steps(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", STEPS, mode], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_kept_memory_takes_far_fewer_page_faults_and_computes_the_same_values():
    plain, kept = _steps("plain"), _steps("keep")
    assert kept["kept"] and not plain["kept"]
    assert kept["faults"] * 2 < plain["faults"]  # measured on a Zen 3: 5 against 11,909-239,365
    assert kept["losses"] == plain["losses"]

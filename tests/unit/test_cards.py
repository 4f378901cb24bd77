"""The card allocator of one GPU server: which cards a request gets, and real jobs on fake cards
(real processes, real flocks) that never overload a card, give their cards back however they end,
keep to the cards the shell offers, and never share a card across two invocations."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from card_jobs import Seen, card_env, most_units_at_once, run_jobs, start_jobs, violations, wait_for

from workflow_scripts.cards import job_cards
from workflow_scripts.cards.ledger import Ledger
from workflow_scripts.cards.plan import Request, choose
from workflow_scripts.cards.visible import parse_nvidia_smi, visible_cards
from workflow_scripts.errors import PipelineError

CARDS = ["0", "1", "2", "3"]
ALLOCATOR = [sys.executable, "-m", "workflow_scripts.cards"]


def held(*entries):
    """A ledger's holdings: (party, {card: units}) each."""
    return {f"h{i}": {"party": party, "cards": cards} for i, (party, cards) in enumerate(entries)}


def test_whole_cards_go_only_where_no_unit_is_held():
    holdings = held(("a", {"0": 105}), ("a", {"2": 840}))
    assert choose(Request(cards=2), CARDS, holdings, "a") == {"1": 840, "3": 840}
    assert choose(Request(cards=3), CARDS, holdings, "a") is None


def test_runs_of_different_sizes_fill_one_card_before_the_next():
    """4 large runs (runs_per_gpu 4: 210 units) and base runs (runs_per_gpu 8: 105) mixed."""
    holdings = held(*[("a", {"0": 210})] * 3, ("a", {"1": 105}))
    assert choose(Request(share=210), CARDS, holdings, "a") == {"0": 210}  # the fullest card that fits
    holdings = held(*[("a", {"0": 210})] * 4)
    assert choose(Request(share=105), CARDS, holdings, "a") == {"1": 105}


def test_a_card_of_another_party_is_never_shared():
    holdings = held(("a", {"0": 105}), ("b", {"1": 105}), ("b", {"2": 840}), ("b", {"3": 105}))
    assert choose(Request(share=105), CARDS, holdings, "a") == {"0": 105}
    assert choose(Request(share=840), CARDS, held(*[("b", {c: 105}) for c in CARDS]), "a") is None


def test_a_request_no_wait_can_satisfy_is_refused_with_the_fix():
    with pytest.raises(PipelineError, match=r"needs 5 card\(s\), but CUDA_VISIBLE_DEVICES offers 4 .*lower the rule"):
        Request(cards=5).check(CARDS, "CUDA_VISIBLE_DEVICES")
    with pytest.raises(PipelineError, match="a card has 840 units"):
        Request(share=900).check(CARDS, "nvidia-smi -L")
    with pytest.raises(PipelineError, match=r"--cards N \(1 or more\) or --share UNITS, one of them"):
        Request(cards=0).check(CARDS, "nvidia-smi -L")
    with pytest.raises(PipelineError, match="offers 0 .none."):
        Request(share=105).check([], "CUDA_VISIBLE_DEVICES")


def test_cards_come_from_the_shell_else_the_fake_list_else_the_driver():
    assert visible_cards({"CUDA_VISIBLE_DEVICES": "2,3", "WORKFLOW_FAKE_CARDS": "0,1,2,3"}) == (
        ["2", "3"],
        "CUDA_VISIBLE_DEVICES",
    )
    assert visible_cards({"CUDA_VISIBLE_DEVICES": ""})[0] == []
    assert visible_cards({"WORKFLOW_FAKE_CARDS": "0,1"}) == (["0", "1"], "WORKFLOW_FAKE_CARDS")
    with pytest.raises(PipelineError, match="CUDA_VISIBLE_DEVICES=1,1: a card is named twice"):
        visible_cards({"CUDA_VISIBLE_DEVICES": "1,1"})


def test_nvidia_smi_listing_gives_indices_and_mig_instances_in_their_cards_place():
    listing = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n"
        "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-bbbb)\n"
        "  MIG 3g.20gb     Device  0: (UUID: MIG-cccc)\n"
        "  MIG 3g.20gb     Device  1: (UUID: MIG-dddd)\n"
        "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-eeee)\n"
    )
    assert parse_nvidia_smi(listing) == ["0", "MIG-cccc", "MIG-dddd", "2"]


def test_provenance_records_the_cards_a_job_saw():
    assert job_cards({}) is None
    env = {"CUDA_VISIBLE_DEVICES": "2", "WORKFLOW_CARDS_HOLDER": "abc", "WORKFLOW_CARDS_SHARE": "420/840"}
    assert job_cards(env) == {"cuda_visible_devices": "2", "holder": "abc", "share": "420/840"}


# 4 cards, 12 jobs of mixed sizes, fine-tuning at runs_per_gpu 2 (420 units a run)
MIXED = [["--cards", "2"], ["--cards", "1"], *[["--share", "420"]] * 6, ["--cards", "3"], ["--cards", "1"]]
MIXED += [["--share", "420"], ["--cards", "4"]]


def test_twelve_jobs_of_mixed_sizes_never_overload_a_card(tmp_path):
    jobs = run_jobs(tmp_path, MIXED, card_env(tmp_path, "0,1,2,3"), seconds=1.0)
    assert violations(jobs) == []
    for job, ask in zip(jobs, MIXED, strict=True):
        whole = ask[0] == "--cards"
        assert len(job.cards) == (int(ask[1]) if whole else 1) and set(job.cards) <= set(CARDS)
        # a whole-card job's cards are its own: disjoint from every job running beside it
        beside = [o for o in jobs if o is not job and o.start < job.end and job.start < o.end]
        if whole:
            assert all(not set(job.cards) & set(o.cards) for o in beside)
    assert most_units_at_once(jobs) > 840  # the cards were used side by side


def test_without_the_allocator_the_same_jobs_land_on_card_0_together(tmp_path):
    """Today's launch (plain python, torchrun on cards 0..N-1) on the same jobs: the check fails."""
    jobs = run_jobs(tmp_path, MIXED, card_env(tmp_path, "0,1,2,3"), seconds=1.0, allocate=False)
    assert any("card 0" in found for found in violations(jobs))


def test_a_restricted_cuda_visible_devices_is_respected(tmp_path):
    env = card_env(tmp_path, "0,1,2,3", CUDA_VISIBLE_DEVICES="1,3")
    jobs = run_jobs(tmp_path, [["--cards", "1"], ["--share", "420"], ["--cards", "2"], ["--share", "420"]], env, 0.5)
    assert {card for job in jobs for card in job.cards} <= {"1", "3"}
    assert violations(jobs) == []
    refused = subprocess.run(
        [*ALLOCATOR, "--cards", "3", "--", "true"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert "needs 3 card(s), but CUDA_VISIBLE_DEVICES offers 2 (1,3)" in refused.stderr


def test_two_invocations_at_once_never_share_a_card(tmp_path):
    asks = [["--share", "210"]] * 6
    for party in ("first", "second"):
        (tmp_path / party).mkdir()
    first = start_jobs(tmp_path / "first", asks, card_env(tmp_path, "0,1", WORKFLOW_CARDS_PARTY="first"), 1.0)
    second = start_jobs(tmp_path / "second", asks, card_env(tmp_path, "0,1", WORKFLOW_CARDS_PARTY="second"), 1.0)
    for proc in first[0] + second[0]:
        assert proc.wait(timeout=300) == 0
    jobs = [Seen.read(out) for out in first[1] + second[1]]
    assert {job.party for job in jobs} == {"first", "second"}
    assert violations(jobs) == []


def test_cards_come_back_after_a_sigkill_even_from_a_torchrun_like_tree(tmp_path):
    """The job's process is killed outright: its cards are free at the next look. A job whose
    launcher dies while a worker it started in a session of its own (as torchrun starts them)
    still runs keeps its card until that worker ends."""
    env = card_env(tmp_path, "0")
    ledger = Ledger(tmp_path / "locks")
    job = subprocess.Popen([*ALLOCATOR, "--cards", "1", "--", "sleep", "60"], env=env)
    wait_for(lambda: ledger.holdings(), "the job took its card")
    assert ledger.try_take(Request(cards=1), ["0"], None, "probe") is None
    job.send_signal(signal.SIGKILL)
    job.wait()
    taken = ledger.try_take(Request(cards=1), ["0"], None, "probe")
    assert taken is not None and taken.cards == {"0": 840}
    os.close(taken.fd)

    worker_pid = tmp_path / "worker.pid"
    tree = (
        "import subprocess, sys, time\n"
        "w = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        f"open({str(worker_pid)!r}, 'w').write(str(w.pid))\n"
        "time.sleep(60)\n"
    )
    launcher = subprocess.Popen([*ALLOCATOR, "--cards", "1", "--", sys.executable, "-c", tree], env=env)
    wait_for(worker_pid.exists, "the worker started")
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    assert ledger.try_take(Request(cards=1), ["0"], None, "probe") is None  # the worker still holds it
    os.kill(int(worker_pid.read_text()), signal.SIGKILL)
    wait_for(lambda: ledger.try_take(Request(cards=1), ["0"], None, "probe"), "the card came back")


def test_a_job_waits_for_its_card_saying_so_once(tmp_path):
    env = card_env(tmp_path, "0")
    first = subprocess.Popen([*ALLOCATOR, "--cards", "1", "--", "sleep", "2"], env=env)
    wait_for(lambda: Ledger(tmp_path / "locks").holdings(), "the first job took the card")
    second = subprocess.run(
        [*ALLOCATOR, "--share", "420", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    first.wait()
    assert second.returncode == 0 and second.stdout == "0\n"
    waiting = [line for line in second.stderr.splitlines() if "waiting" in line]
    assert waiting == ["cards: waiting for 420/840 of a card among 0 (0: 840/840)"]

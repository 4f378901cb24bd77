"""Where the tests' CPU goes: every test run in one process, each test's CPU seconds over the whole
machine (its subprocesses, the preloaded interpreter's runs and the Slurm daemons included) and its
wall seconds, summed by module.

    python benchmarks/bench_tests.py --label zen3 [--note "..."] [--out benchmarks/results/tests_cpu.json] \\
        [-- PYTEST_ARGS ...]

Without PYTEST_ARGS every test but the demo's own run (tests/workflow/test_demo.py, whose cost is the
demo's job-seconds: bench_demo.py). The figures come from /proc/stat, which counts every process, so
run it with nothing else on the machine. On two cores the suite beside the demo cannot take less than
half of their sum plus half of the demo's job-seconds: ``two_core_floor_s`` is the first half.

Loaded into pytest (``-p bench_tests``, which this script does) it records each test's setup, call and
teardown together, and pytest's start-up and collection, in the file named by BENCH_TESTS_RECORD.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest
from bench_demo import cpu  # the same CPU record as a whole demo's

ROOT = Path(__file__).resolve().parents[1]
RECORD = "BENCH_TESTS_RECORD"
DEFAULT_ARGS = ["--ignore", "tests/workflow/test_demo.py"]
START = "(start-up and collection)"
_records: list[dict] = []


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent on anything but idling since boot (/proc/stat)."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


# pytest loads a -p plugin before the conftest files: from here to the end of collection is start-up
_loaded = busy_seconds(), time.monotonic()


def _record(name: str, cpu0: float, wall0: float) -> None:
    _records.append(
        {"id": name, "cpu_s": round(busy_seconds() - cpu0, 2), "wall_s": round(time.monotonic() - wall0, 3)}
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    yield
    _record(START, *_loaded)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu0, wall0 = busy_seconds(), time.monotonic()
    yield
    _record(item.nodeid, cpu0, wall0)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get(RECORD):
        Path(os.environ[RECORD]).write_text(json.dumps(_records))


def by_module(records: list[dict]) -> list[dict]:
    """Tests summed by module (start-up and collection on their own), the most CPU first."""
    sums: dict[str, dict] = defaultdict(lambda: {"tests": 0, "cpu_s": 0.0, "wall_s": 0.0})
    for record in records:
        row = sums[record["id"].split("::")[0]]
        row["tests"] += record["id"] != START
        row["cpu_s"] += record["cpu_s"]
        row["wall_s"] += record["wall_s"]
    rows = [{"module": name, **{k: round(v, 2) for k, v in row.items()}} for name, row in sums.items()]
    return sorted(rows, key=lambda row: -row["cpu_s"])


def summarise(records: list[dict]) -> dict:
    cpu_s = round(sum(r["cpu_s"] for r in records), 1)
    return {
        "tests": sum(r["id"] != START for r in records),
        "cpu_s": cpu_s,
        "wall_s": round(sum(r["wall_s"] for r in records), 1),
        "two_core_floor_s": round(cpu_s / 2, 1),
        "modules": by_module(records),
        "slowest_tests": sorted(records, key=lambda r: -r["cpu_s"])[:20],
    }


def run(pytest_args: list[str]) -> tuple[int, list[dict]]:
    """The tests in one process (``-n 0``) with this module as a plugin: pytest's exit status, the records."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record.json"
        env = {
            **os.environ,
            RECORD: str(record),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])),
        }
        command = [sys.executable, "-m", "pytest", "-n", "0", "-p", "bench_tests", "-q", *pytest_args]
        status = subprocess.run(command, cwd=ROOT, env=env).returncode
        return status, json.loads(record.read_text()) if record.exists() else []


def table(result: dict, most: int = 15) -> str:
    lines = [
        f"{result['tests']} tests in one process: {result['cpu_s']:.0f} CPU s, {result['wall_s']:.0f} s wall; "
        f"on two cores at least {result['two_core_floor_s']:.0f} s beside the demo's own job-seconds / 2",
        "| module | tests | CPU s | wall s |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {m['module']} | {m['tests']} | {m['cpu_s']:.1f} | {m['wall_s']:.1f} |" for m in result["modules"][:most]
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", required=True)
    parser.add_argument("--note", default="")
    parser.add_argument("--out", type=Path)
    parser.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: all but the demo)")
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args or DEFAULT_ARGS
    status, records = run(pytest_args)
    if not records:
        print(f"pytest exited {status} and recorded no test", file=sys.stderr)
        return status or 1
    result = {"label": args.label, "note": args.note, "cpu": cpu(), "pytest_args": pytest_args, "pytest_exit": status}
    result |= summarise(records)
    print(table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())

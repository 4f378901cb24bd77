"""benchmarks/bench_tests.py runs tests in one process and says what each took, its subprocesses
included, by test and by module."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_tests  # noqa: E402

# CPU burnt in a child process and a wait that burns none. Other work on the machine can only add to
# what /proc/stat counts, so the checks are lower bounds.
SELECTION = """\
import subprocess, sys, time

BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.5: pass"


def test_burns_in_a_child():
    subprocess.run([sys.executable, "-c", BURN], check=True)


def test_waits():
    time.sleep(0.3)
"""


def test_each_tests_cpu_counts_its_child_processes_and_modules_sum_their_tests(tmp_path, capsys):
    selection = tmp_path / "test_selection.py"
    selection.write_text(SELECTION)
    out = tmp_path / "tests.json"
    status = bench_tests.main(["--label", "here", "--out", str(out), "--", str(selection), "-p", "no:cacheprovider"])
    result = json.loads(out.read_text())
    assert status == result["pytest_exit"] == 0
    tests = {r["id"].split("::")[1]: r for r in result["slowest_tests"] if r["id"] != bench_tests.START}
    assert set(tests) == {"test_burns_in_a_child", "test_waits"}
    assert tests["test_burns_in_a_child"]["cpu_s"] >= 0.45
    assert tests["test_waits"]["wall_s"] >= 0.3
    (module,) = [m for m in result["modules"] if m["module"] != bench_tests.START]
    assert module["tests"] == result["tests"] == 2
    assert module["cpu_s"] == round(sum(t["cpu_s"] for t in tests.values()), 2)
    assert result["two_core_floor_s"] == round(result["cpu_s"] / 2, 1)
    assert f"| {module['module']} | 2 |" in capsys.readouterr().out


def test_a_failing_selection_passes_its_exit_status_on(tmp_path):
    failing = tmp_path / "test_fails.py"
    failing.write_text("def test_fails():\n    assert False\n")
    assert bench_tests.main(["--label", "here", "--", str(failing), "-p", "no:cacheprovider"]) == 1

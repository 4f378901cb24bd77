"""The committed demo task data is exactly what the generator writes, and stays small."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "demo" / "raw_source" / "tasks"
SPEC = ROOT / "demo" / "generator" / "demo_tasks.yaml"


def test_generator_reproduces_the_committed_demo_tasks(tmp_path):
    out, spec = tmp_path / "tasks", tmp_path / "demo_tasks.yaml"
    subprocess.run(
        [sys.executable, str(ROOT / "demo/generator/tasks.py"), "--out", str(out), "--spec", str(spec)],
        check=True,
        cwd=tmp_path,
    )
    generated = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(COMMITTED) for p in COMMITTED.rglob("*") if p.is_file())
    assert generated == committed
    for rel in generated:
        assert (out / rel).read_bytes() == (COMMITTED / rel).read_bytes(), rel
    assert spec.read_text() == SPEC.read_text()


def test_demo_tasks_stay_small():
    assert sum(p.stat().st_size for p in COMMITTED.rglob("*") if p.is_file()) < 1_000_000


def test_demo_config_declares_the_generated_tasks():
    import yaml

    generated = yaml.safe_load(SPEC.read_text())
    config = yaml.safe_load((ROOT / "demo" / "config.yaml").read_text())["tasks"]
    assert config == {name: {k: v for k, v in spec.items() if k != "name"} for name, spec in generated.items()}

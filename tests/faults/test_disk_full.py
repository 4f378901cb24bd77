"""A full disk, made for real with a small tmpfs: the MinHash step of a corpus build, a
pretraining checkpoint and any other step stop with one line "no space left on <path>",
leave no scratch behind, and (training) keep the last good checkpoint to resume from."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import yaml

from workflow_scripts.corpus.records import row, write_parsed
from workflow_scripts.errors import PipelineError

FIX = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "corpus"


@pytest.fixture()
def small_disk(tmp_path, request):
    """A tmpfs (default 1 MiB) mounted for this test only; needs root, as in CI, and is skipped elsewhere."""
    size = getattr(request, "param", "1m")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", f"faults-{uuid.uuid4().hex[:8]}", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(mount: Path, leave: int) -> None:
    """Fill the file system until ``leave`` bytes are free."""
    free = shutil.disk_usage(mount).free
    (mount / "filler").write_bytes(b"\0" * max(0, free - leave))


def test_minhash_step_on_a_full_disk_says_so_and_leaves_no_scratch(small_disk, tmp_path):
    texts = fx.documents(300, seed=3)
    parsed = tmp_path / "p.parquet"
    write_parsed(parsed, [row(f"d{i}", "p", t) for i, t in enumerate(texts)], {"malformed": 0})
    settings = tmp_path / "s.yaml"
    # 300 documents x 1024 permutations x 4 bytes: 1.2 MB of signatures on a 1 MiB disk
    settings.write_text(
        yaml.safe_dump(
            {
                "corpus": {
                    "name": "c",
                    "type": "pubmed",
                    "shards": 1,
                    "clean": {"min_words": 0, "near_dedup": {"enabled": True, "num_perm": 1024}},
                }
            }
        )
    )
    out = small_disk / "corpus"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.corpus.build_corpus",
            "--settings",
            str(settings),
            "--in",
            str(parsed),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]  # not -7 (SIGBUS)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert errors and errors[0].startswith(f"error: no space left on {small_disk}"), done.stderr[-2000:]
    assert sorted(p.name for p in small_disk.iterdir()) == []  # scratch and partial output removed


@pytest.mark.parametrize("small_disk", ["16m"], indirect=True)
def test_checkpoint_on_a_full_disk_says_so_and_keeps_the_last_good_one(small_disk, tmp_path):
    texts = fx.documents(200)
    base = {"corpus": fx.make_corpus(tmp_path / "corpus", 200), "wordpiece": fx.make_wordpiece(tmp_path / "wp", texts)}
    common = dict(max_steps=8, checkpoint_every=2, keep_checkpoints=1, export_checkpoints=False)
    out = fx.pretrain(base, small_disk, "m", stop_after=2, **common)
    state = out / "training_state"
    assert (state / "latest").read_text().strip() == "step~00000002"
    before = {p.name for p in state.iterdir()}
    state_size = (state / "step~00000002" / "state.pt").stat().st_size
    _fill(small_disk, state_size // 2)
    with pytest.raises(PipelineError, match="^no space left on " + re.escape(str(state))):
        fx.pretrain(base, small_disk, "m", stop_after=4, **common)
    assert (state / "latest").read_text().strip() == "step~00000002"
    assert {p.name for p in state.iterdir()} <= before | {"train_log.jsonl"}  # no half-written step~4
    (small_disk / "filler").unlink()
    fx.pretrain(base, small_disk, "m", stop_after=4, **common)  # resumes from step 2
    assert (state / "latest").read_text().strip() == "step~00000004"


def test_any_step_on_a_full_disk_names_its_output_in_one_line(small_disk, tmp_path):
    raw = tmp_path / "pubmed26n0001.xml.gz"
    raw.write_bytes(gzip.compress((FIX / "medline_edge.xml").read_bytes(), mtime=0))
    settings = tmp_path / "s.yaml"
    settings.write_text(yaml.safe_dump({"corpus": {"name": "pm", "type": "pubmed", "clean": {}}}))
    (small_disk / "parsed").mkdir()
    _fill(small_disk, 0)
    out = small_disk / "parsed" / "pubmed26n0001.parquet"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.corpus.parse_corpus_file",
            "--settings",
            str(settings),
            "--in",
            str(raw),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert "Traceback" not in done.stderr
    assert errors and errors[0].startswith(f"error: no space left on {out}"), done.stderr[-2000:]
    assert list((small_disk / "parsed").iterdir()) == []  # the temporary was removed

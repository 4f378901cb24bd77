"""A rebuild that changes nothing never costs a finished model.

`snakemake --forcerun build_corpus` reruns everything downstream: the corpus is rewritten
(the same bytes, new modification times), every pack job repacks, and the pretraining job
runs again. Run as root (as in containers), Snakemake removes the job's declared outputs,
the protected `model.safetensors` included, before the rerun (for other users it refuses
to touch a write-protected output); `training_state/` is not a declared output and
survives. The rerun must then resume from its last checkpoint, train no step, and export
the same model. Restoring `results/` from a backup or copying it to another disk (new
times) must do the same, and a real change of the data must say which input changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pretrain_fixtures as fx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file

from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain import pretrain as pretrain_cli

torch.set_num_threads(1)
DECLARED = ("model.safetensors", "config.json", "provenance.json")


def _train(root: Path) -> Path:
    index = fx.pack(root / "corpus", root / "vocab", root / "results" / "packed")
    out = root / "results" / "model"
    pretrain_cli.main(fx.flags(settings=root / "settings.yaml", packed=index, tokenizer=root / "vocab", out=out))
    return out


def _rewrite_same_bytes(corpus: Path) -> None:
    for shard in corpus.glob("shard~*.parquet"):
        data = shard.read_bytes()
        shard.unlink()
        shard.write_bytes(data)


def _steps(out: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "training_state" / "train_log.jsonl").read_text().splitlines()]


@pytest.fixture()
def study(tmp_path):
    root = tmp_path / "study"
    fx.make_corpus(root / "corpus", 200, shards=2)
    fx.make_wordpiece(root / "vocab", fx.documents(200))
    fx.write_settings(root / "settings.yaml", max_steps=12, checkpoint_every=4)
    out = _train(root)
    return root, out, load_file(out / "model.safetensors"), _steps(out)


def _same_model(out: Path, before: dict) -> bool:
    after = load_file(out / "model.safetensors")
    return before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_an_identical_rebuild_reexports_without_training(study, caplog):
    root, out, model, steps = study
    _rewrite_same_bytes(root / "corpus")
    for name in DECLARED:  # what Snakemake removes before it reruns the job
        (out / name).unlink()
    caplog.set_level("INFO")
    _train(root)  # repacks every shard, then trains
    assert _steps(out) == steps  # no step trained again
    assert "training already reached max_steps=12" in caplog.text
    assert _same_model(out, model)


def test_results_copied_elsewhere_resume_from_their_checkpoint(study, tmp_path):
    root, out, model, steps = study
    moved = tmp_path / "elsewhere"
    shutil.copytree(root, moved, copy_function=shutil.copyfile)  # new modification times everywhere
    for name in DECLARED:
        (moved / "results" / "model" / name).unlink()
    out2 = _train(moved)
    assert _steps(out2) == steps
    assert _same_model(out2, model)


def test_a_real_change_names_the_input_that_changed(study):
    root, out, _, _ = study
    shard = root / "corpus" / "shard~1.parquet"
    rows = pq.read_table(shard).to_pylist()
    rows[0]["text"] += " Aspirin reduced sepsis."
    pq.write_table(pa.Table.from_pylist(rows), shard)
    (out / "model.safetensors").unlink()
    changed = r"made from different inputs: data\.seq~32/corpus/shard~1: .*delete .*training_state"
    with pytest.raises(PipelineError, match=changed):
        _train(root)
    assert (out / "training_state" / "latest").is_file()  # nothing of the checkpoint was lost


@pytest.mark.slow
def test_forcerun_build_corpus_on_a_finished_study_keeps_the_finished_model(small_study_run, tmp_path):
    """The documented command (docs/reproducibility-and-provenance.md), through Snakemake, on a copy of the
    session's finished small study (the demo cut down, its model `tiny` trained 4 steps with a checkpoint every
    2): corpora, vocabulary and packs are rebuilt (identically), the pretraining job reruns, resumes at its last
    step and exports the same bytes."""
    from workflow_harness import copy_finished, run_demo

    workdir = copy_finished(small_study_run, tmp_path)
    target = "results/pretrain/tiny/model.safetensors"
    model = (workdir / target).read_bytes()
    log = workdir / "results/pretrain/tiny/training_state/train_log.jsonl"
    steps = log.read_text()
    again = run_demo(workdir, target, "--forcerun", "build_corpus")
    assert again.returncode == 0, again.stderr[-6000:]
    for rule in ("build_corpus", "pack", "pretrain"):  # everything downstream really ran again
        assert f"rule {rule}:" in again.stdout + again.stderr
    trained = (workdir / "results/logs/pretrain/tiny.log").read_text()
    assert "(step 4 of 4)" in trained and "training already reached max_steps=4" in trained
    assert log.read_text() == steps
    assert (workdir / target).read_bytes() == model

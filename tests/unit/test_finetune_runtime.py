"""Runs per card and time limits sized from what a run really holds: the task's recorded lengths
(its longest batch for memory, its mean for time), not max_length; and the time-limit estimate
behind ``resources.finetune.runtime: auto``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_scripts.config import gpu_share
from workflow_scripts.config.resources import JobResources, check_rules
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import buckets, memory, runtime
from workflow_scripts.tasks.registry import load_registry
from workflow_scripts.tasks.spec import TaskSize, TaskSpec
from workflow_scripts.typed import parse

ROOT = Path(__file__).resolve().parents[2]
GPU_AUTO = JobResources(gpu=1, runtime="auto")


def spec_of(task: str, **overrides) -> TaskSpec:
    return parse(TaskSpec, dict(load_registry()[task], name=task, **overrides), f"tasks.{task}")


def run_settings(spec: TaskSpec, **finetune) -> dict:
    """A run's settings as step_settings resolves them (the registry's finetune keys, the task's max_length)."""
    ft = {"lr": 3e-5, "eval_batch_size": 64, "epochs": 3, "eval_every": 0, "max_length": spec.max_length}
    ft.update(spec.finetune, **finetune)
    return {"finetune": ft, "task": {"type": spec.type}}


def test_ner_sentences_put_more_runs_on_a_card_than_padding_to_512():
    """BC5CDR-chem at batch 32: sentences average 36 sub-tokens and the longest has 275; the
    longest batch (x1.25 for another vocabulary, padded to 8: 344) sizes memory."""
    spec = spec_of("bc5cdr-chem")
    settings = run_settings(spec)
    padded_to_512 = gpu_share.auto_runs_per_gpu(memory.BERT_BASE, settings, 80)
    assert padded_to_512 == 4  # what the task got before it recorded its lengths
    lengths = gpu_share.run_lengths(settings, spec.size, 512)
    assert (lengths.longest, lengths.mean) == (344, 48) and lengths.longest % buckets.MULTIPLE == 0
    base = gpu_share.auto_runs_per_gpu(memory.BERT_BASE, settings, 80, spec.size)
    large = gpu_share.auto_runs_per_gpu(memory.BERT_LARGE, settings, 80, spec.size)
    assert base > padded_to_512 and large > gpu_share.auto_runs_per_gpu(memory.BERT_LARGE, settings, 80) == 1
    # with CUDA graphs the longest batch pads up to its bucket (384), still below 512
    graphs = run_settings(spec, cuda_graphs=True)
    assert gpu_share.run_lengths(graphs, spec.size, 512).longest == 384
    assert padded_to_512 < gpu_share.auto_runs_per_gpu(memory.BERT_BASE, graphs, 80, spec.size) < base
    # the longest batch, not the mean, decides: a 48-token batch would allow the cap
    short = TaskSize(mean_tokens=35.7, max_tokens=36)
    assert gpu_share.auto_runs_per_gpu(memory.BERT_BASE, settings, 80, short) == memory.MAX_RUNS_PER_GPU > base


def test_a_512_token_task_stays_sized_at_512():
    """PubMedQA's question + abstract: its longest input (663) is cut at 512, so memory binds as before."""
    spec = spec_of("pubmedqa")
    settings = run_settings(spec, grid={})
    assert gpu_share.run_lengths(settings, spec.size, 512).longest == 512
    for shape in (memory.BERT_BASE, memory.BERT_LARGE):
        before = gpu_share.auto_runs_per_gpu(shape, settings, 80)
        assert gpu_share.auto_runs_per_gpu(shape, settings, 80, spec.size) == before
    assert gpu_share.auto_runs_per_gpu(memory.BERT_LARGE, settings, 80, spec.size) == 2  # 16 x 512


def test_a_grid_is_sized_by_its_largest_batch():
    """BLURB's grid trains batch 16 and 32 inside one run: the card must hold the 32."""
    spec = spec_of("pubmedqa")
    with_grid, without = run_settings(spec), run_settings(spec, grid={})
    assert gpu_share.pass_examples(with_grid) == 32 and gpu_share.pass_examples(without) == 16
    assert gpu_share.auto_runs_per_gpu(memory.BERT_LARGE, with_grid, 80, spec.size) == 1


def test_chunked_documents_are_sized_by_the_chunks_a_model_reads():
    """MIMIC-III-50 at up to 8,192 tokens: a 512-token model reads at most 6 chunks of 512; a model
    whose context holds 8,192 reads them whole."""
    spec = spec_of("mimic-iii-50")
    settings = run_settings(spec, max_length=8192, chunking=True, max_chunks=6, batch_size=8, micro_batch_size=2)
    bert = gpu_share.run_lengths(settings, spec.size, 512)
    assert (bert.longest, bert.mean, bert.attention) == (3072, 3072, 512)
    assert gpu_share.run_lengths(settings, spec.size, 8192).longest == 8192
    # a size that says the summaries are shorter rounds up to whole chunks
    assert gpu_share.run_lengths(settings, TaskSize(max_tokens=1000), 512).longest == 1536


def test_registry_sizes_are_the_measured_ones():
    """The registry's size entries are copied from the measurement (benchmarks/bench_task_lengths.py)."""
    measured = json.loads((ROOT / "benchmarks/results/task_lengths.json").read_text())["tasks"]
    registry = load_registry()
    for task, m in measured.items():
        size = registry[task]["size"]
        assert (size["mean_tokens"], size["max_tokens"]) == (m["mean_tokens_train"], m["max_tokens"]), task
        if task in ("hoc", "biosses"):
            continue  # HoC's train file and BIOSSES's release here are not the registry's: expected_counts count
        for split in ("train", "dev"):
            counted = size.get(split) or registry[task].get("expected_counts", {}).get(split)
            assert counted == m["examples"][split], (task, split)


def test_the_time_model_matches_the_measured_card():
    """One BERT-base run, NER-shaped (32 x 51 sub-tokens), is host-bound at about 840 examples/s
    (measured 793-865 on an H100); runs sharing the card add throughput until the GPU is busy."""
    one = 32 / runtime.pass_seconds(memory.BERT_BASE, 32, 51, 51, 1, train=True)
    assert 793 <= one <= 865

    def card(runs: int, shape=memory.BERT_BASE, tokens=51) -> float:
        return runs * 32 / runtime.pass_seconds(shape, 32, tokens, tokens, runs, train=True)

    assert card(4) == pytest.approx(4 * one) and card(8) > card(4)
    # a large model at 512 tokens is GPU-bound alone: more runs add wall time, not throughput
    assert card(3, memory.BERT_LARGE, 512) == pytest.approx(card(1, memory.BERT_LARGE, 512))


def test_a_large_model_on_mimic_gets_a_time_limit_that_fits():
    """Estimated at more than the 240 minutes fine-tuning had: with a fixed 240 the plan carries
    the estimate (the workflow warns), with auto the limit is twice the estimate plus start-up."""
    spec = spec_of("mimic-iii-50")
    settings = run_settings(spec, max_length=8192, chunking=True, max_chunks=6, batch_size=8, micro_batch_size=2)
    auto = gpu_share.plan_run(GPU_AUTO, memory.BERT_LARGE, settings, spec)
    fixed = gpu_share.plan_run(JobResources(gpu=1, runtime=240), memory.BERT_LARGE, settings, spec)
    assert fixed.runtime == 240 < fixed.estimate == auto.runtime
    examples = {"train": 8066, "dev": 1573, "test": 1729}
    seconds = runtime.run_seconds(memory.BERT_LARGE, settings["finetune"], examples, 3072, 512, auto.runs_per_gpu)
    assert seconds / 60 > 240 and auto.runtime * 60 >= runtime.MARGIN * seconds + runtime.STARTUP_S
    # alone on a card the same run is estimated shorter: sharing a busy card costs each run time
    alone = runtime.run_seconds(memory.BERT_LARGE, settings["finetune"], examples, 3072, 512, 1)
    assert alone < seconds / 2


def test_runtime_grows_with_examples_epochs_length_and_model():
    spec = spec_of("bc5cdr-chem")
    ft = run_settings(spec)["finetune"]
    examples = {"train": 4560, "dev": 4581}

    def est(shape=memory.BERT_BASE, tokens=48, **change):
        counts = {**examples, **{k: v for k, v in change.items() if k in examples}}
        settings = {**ft, **{k: v for k, v in change.items() if k not in examples}}
        return runtime.run_seconds(shape, settings, counts, tokens, tokens, 4)

    base = est()
    assert est(train=9120) > base and est(epochs=40) > base and est(tokens=256) > base
    assert est(memory.BERT_LARGE) > base and est(grid={"lr": [1e-5, 3e-5]}) == pytest.approx(2 * base)


def test_a_task_of_unknown_size_keeps_the_fallback_limit_and_max_length():
    spec = spec_of("jnlpba")
    assert spec.size is None and "train" not in spec.expected_counts
    plan = gpu_share.plan_run(GPU_AUTO, memory.BERT_BASE, run_settings(spec), spec)
    assert (plan.runs_per_gpu, plan.runtime, plan.estimate) == (4, gpu_share.FALLBACK_RUNTIME, None)


def test_runtime_auto_is_refused_where_it_cannot_apply():
    with pytest.raises(PipelineError, match=r"resources.pretrain.runtime: auto estimates a fine-tuning run"):
        check_rules("resources", {"pretrain": JobResources(gpu=8, runtime="auto")})
    with pytest.raises(PipelineError, match=r"resources.finetune.runtime: auto estimates a fine-tuning run on a GPU"):
        check_rules("resources", {"finetune": JobResources(gpu=0, runtime="auto")})
    check_rules("resources", {"finetune": GPU_AUTO})
    with pytest.raises(PipelineError, match=r"tasks.x.size.mean_tokens: 60.0 is above max_tokens 50"):
        parse(TaskSize, {"mean_tokens": 60, "max_tokens": 50}, "tasks.x.size")

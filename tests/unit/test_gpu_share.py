"""Runs per GPU: chosen from a real model config and the card's memory, and turned by Snakemake's
own group resource computation into one allocation with one card."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from snakemake.resources import GroupResources, Resources
from transformers import BertConfig

from workflow_scripts.config import gpu_share
from workflow_scripts.config.resources import JobResources, check_rules
from workflow_scripts.encoder_shape import Shape
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import memory

LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}


def settings(batch: int, length: int, task_type: str = "ner") -> dict:
    return {"finetune": {"batch_size": batch, "max_length": length, "precision": "auto"}, "task": {"type": task_type}}


def test_auto_fills_an_80_gb_card_by_the_memory_estimate(tmp_path):
    BertConfig().save_pretrained(tmp_path / "base")
    BertConfig(**LARGE).save_pretrained(tmp_path / "large")
    base, large = gpu_share.model_shape(str(tmp_path / "base")), gpu_share.model_shape(str(tmp_path / "large"))
    assert base == memory.BERT_BASE and large == memory.BERT_LARGE
    assert gpu_share.runs_per_gpu("auto", 1, base, settings(32, 128), 80) == memory.MAX_RUNS_PER_GPU
    assert gpu_share.runs_per_gpu("auto", 1, base, settings(32, 512), 80) == 4
    assert gpu_share.runs_per_gpu("auto", 1, large, settings(32, 128), 80) == 4
    assert gpu_share.runs_per_gpu("auto", 1, large, settings(32, 512), 80) == 1
    assert gpu_share.runs_per_gpu("auto", 1, large, settings(32, 512), 24) == 1
    # not trained yet (a dry run): one run a card; on the CPU, the cores decide; a number is kept
    assert gpu_share.runs_per_gpu("auto", 1, gpu_share.model_shape(str(tmp_path / "none")), settings(32, 128), 80) == 1
    assert gpu_share.runs_per_gpu("auto", 0, base, settings(32, 128), 80) == 0
    assert gpu_share.runs_per_gpu(3, 1, base, settings(32, 128), 80) == 3


def test_a_run_in_micro_batches_is_sized_by_its_micro_batch():
    """mimic-iii-50's 8 summaries of 8,192 tokens on a ModernBERT-base-sized model: estimated at
    92 GiB read at once, 26 GiB in the study's passes of 2, two of which share an 80 GB card."""
    modern = Shape(layers=22, hidden=768, intermediate=2 * 1152, vocab=50368, heads=12, positions=8192)
    whole = settings(8, 8192, "doc_classification")
    passes = {**whole, "finetune": {**whole["finetune"], "micro_batch_size": 2}}
    assert memory.estimate(modern, 8, 8192)["total"] > 80 > memory.estimate(modern, 2, 8192)["total"]
    assert gpu_share.runs_per_gpu("auto", 1, modern, whole, 80) == 1
    assert gpu_share.runs_per_gpu("auto", 1, modern, passes, 80) == 2
    assert gpu_share.pass_examples(passes) == 2 and gpu_share.pass_examples(whole) == 8


@pytest.mark.parametrize("runs", range(1, memory.MAX_RUNS_PER_GPU + 1))
def test_shares_of_a_full_card_add_up_to_one_card(runs):
    assert runs * gpu_share.gpu_share(runs) == gpu_share.GPU_SHARE_UNITS


def group_resources(per_gpu: int, runs: int, gpus: int = 1) -> dict:
    """What Snakemake asks Slurm for a group job of `runs` fine-tuning runs."""
    job = {"_cores": 4, "mem_mb": 32000, "runtime": 240, "gpu": gpu_share.group_gpus(gpus)}
    job["gpu_share"] = gpu_share.gpu_share(per_gpu)
    jobs = [SimpleNamespace(resources=dict(job), pipe_group=None) for _ in range(runs)]
    constraints = Resources.from_mapping({"gpu_share": gpu_share.GPU_SHARE_UNITS})
    return GroupResources.basic_layered([jobs], constraints, run_local=False)


def test_a_group_of_20_runs_asks_for_one_card_and_a_cards_worth_of_runs_at_a_time():
    four = group_resources(per_gpu=4, runs=20)
    assert four["gpu"] == "1"  # what the Slurm plugin turns into --gpus=1
    assert (four["_cores"], four["mem_mb"], four["runtime"]) == (16, 128000, 5 * 240)
    one = group_resources(per_gpu=1, runs=20)
    assert (one["gpu"], one["_cores"], one["mem_mb"], one["runtime"]) == ("1", 4, 32000, 20 * 240)
    # an integer gpu would be summed over the runs side by side: the bug this avoids
    assert group_resources(per_gpu=4, runs=3, gpus=0)["gpu"] == 0


def test_runs_per_gpu_is_refused_where_it_cannot_apply():
    with pytest.raises(PipelineError, match=r"resources.pretrain.runs_per_gpu: only fine-tuning runs share a GPU"):
        check_rules("resources", {"pretrain": JobResources(runs_per_gpu=2)})
    with pytest.raises(PipelineError, match=r"resources.finetune.runs_per_gpu: must be auto or 1 to 8, got 9"):
        JobResources(runs_per_gpu=9).validate("resources.finetune")
    with pytest.raises(PipelineError, match=r"a run on 2 GPUs has its allocation to itself"):
        JobResources(gpu=2, runs_per_gpu=4).validate("resources.finetune")

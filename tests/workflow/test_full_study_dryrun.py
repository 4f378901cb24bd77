"""The full study builds its whole DAG without any data present."""

import yaml
from workflow_harness import ROOT, planned_jobs, snakemake

from workflow_scripts.config.plan import (
    cloud_corpora,
    corpus_downloads,
    corpus_files,
    corpus_shards,
    evaluated_models,
    finetune_runs,
    model_packed,
)
from workflow_scripts.config.validate import load_config
from workflow_scripts.download.hub import HubCheckpoint


def test_dry_run_shows_every_stage_and_job():
    result = snakemake("-n", "--quiet", "rules")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result.stdout + result.stderr)
    study = load_config(yaml.safe_load((ROOT / "config.yaml").read_text()), ROOT / "schemas/config.schema.yaml")
    raw = sum(len(corpus_files(study, c)) for c in study.corpora)
    kinds = [m.kind for m in study.models.values()]
    assert jobs["download_corpus_file"] == sum(len(corpus_downloads(study, c)) for c in study.corpora)
    # PMC in the cloud layout: one download job and one parse job per batch of articles
    assert jobs["download_pmc_batch"] == sum(study.corpora[c].source.batches for c in cloud_corpora(study)) > 1
    assert jobs["parse_corpus_file"] == raw
    # one parse job per PubMed file of the configured release
    assert len(corpus_files(study, "pubmed")) == 1274 + 60
    assert jobs["build_corpus"] == len(study.corpora)
    assert jobs["train_vocab"] == len(study.vocabularies)
    assert jobs["vocab_diagnostics"] == len(study.vocabularies)
    # one pack job per tokenizer x corpus shard x sequence length, shared by the models that use it
    indexes = {p: m for m, e in study.models.items() if e.kind != "external" for p in model_packed(study, m)}
    per_model = sum(len(model_packed(study, m)) for m, e in study.models.items() if e.kind != "external")
    assert jobs["pack_index"] == len(indexes) < per_model
    assert jobs["pack"] == sum(corpus_shards(study, p.split("/")[3]) for p in indexes) > 1000
    # the 8k phase: PMC full text packed at 8,192 tokens with each block's documents kept apart
    long = "results/packed/vocab~pm-bpe50k/pmc/packing~documents/seq~8192/heldout~0.01/index.json"
    assert model_packed(study, "ours-base-pm-voc-8k") == [long] and long in indexes
    assert jobs["pretrain"] == kinds.count("pretrain")
    assert jobs["distill"] == kinds.count("distill")
    assert jobs["prepare_task"] == len(study.resolved_tasks)
    # the no-training baseline's runs are jobs of rule baseline, the random-weight control's of finetune
    assert jobs["finetune"] + jobs["baseline"] == len(list(finetune_runs(study))) > 2000
    assert jobs["control"] == kinds.count("control") == 1 and jobs["baseline"] > 0
    # the long-document task (MIMIC-III top-50 ICD coding) for every model: up to 8,192 tokens, read in
    # chunks by a model with a shorter context
    assert {m for m, t, _, _ in finetune_runs(study) if t == "mimic-iii-50"} == set(evaluated_models(study))
    long_docs = {study.run_finetune(m, "mimic-iii-50").max_length for m in evaluated_models(study)}
    assert long_docs == {8192} and study.resolved_tasks["mimic-iii-50"].finetune.chunking
    assert jobs["tables"] == 1 and jobs["plots"] == 1
    # one inference speed job per model with a checkpoint, one cost table over them all
    assert jobs["inference_speed"] == len(kinds) - kinds.count("baseline")
    assert jobs["cost"] == 1
    # every public checkpoint is fetched once, at its commit; the one still unpinned is named
    hub = [m for m, e in study.models.items() if isinstance(e.checkpoint, HubCheckpoint)]
    assert jobs["download_model"] == len(hub) == 16
    assert "models.biomed-roberta.checkpoint.revision: unpinned" in result.stderr


def test_the_stable_phase_is_planned_once_and_each_decay_branch_after_it():
    """Asking for the two decay branches alone plans their shared stable phase as well, once."""
    study = load_config(yaml.safe_load((ROOT / "config.yaml").read_text()), ROOT / "schemas/config.schema.yaml")
    branches = [m for m, e in study.models.items() if e.branch is not None]
    assert branches == ["ours-wsd-bio", "ours-wsd-clinical"]
    assert {study.models[b].init for b in branches} == {"ours-wsd-stable"}
    targets = [f"results/pretrain/{m}/model.safetensors" for m in branches]
    result = snakemake("-n", *targets, "--quiet", "rules")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result.stdout + result.stderr)
    assert jobs["pretrain"] == jobs["model_settings"] == 3  # the stable phase and the two branches
    # the clinical branch packs MIMIC-III with the stable phase's vocabulary; the biomedical one reads its data
    packed = {p for b in ["ours-wsd-stable", *branches] for p in model_packed(study, b)}
    assert jobs["pack_index"] == len(packed) == 3


def test_loading_the_snakefile_imports_no_torch(monkeypatch):
    """Every snakemake command loads the Snakefile first: torch (seconds to import) stays out of it."""
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    result = snakemake("--list-rules")
    assert result.returncode == 0, result.stderr[-3000:]
    imported = {
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    assert "workflow_scripts.config.validate" in imported  # the study's settings were read
    assert not {name for name in imported if name.split(".")[0] in ("torch", "transformers")}

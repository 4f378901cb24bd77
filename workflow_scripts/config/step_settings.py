"""The resolved settings handed to each step, written to results/configs/... by local rules: each
is ``to_dict`` of the very dataclass the step loads, so a file changes only when a value the step
reads changes, and Snakemake reruns only that step and what depends on it."""

from __future__ import annotations

from typing import Any

from ..controls.settings import BaselineSettings, ControlSettings
from ..corpus.settings import CorpusSettings, parse_view
from ..distill.settings import DistillModelSettings
from ..finetune.settings import FinetuneModel, FinetuneRunSettings, FinetuneTask
from ..pretrain.settings import PretrainModelSettings
from ..report.settings import ReportSettings
from ..tasks.spec import PrepareTaskSettings
from ..typed import parse, to_dict, view
from ..vocab.settings import TrainVocabSettings
from .branches import branch_start
from .plan import finetune_runs, model_dir, run_dir, vocab_dir
from .restricted import restricted as restricted_marks
from .study import Study


def _corpus(study: Study, corpus: str) -> CorpusSettings:
    restricted = corpus in restricted_marks(study).corpora
    return view(CorpusSettings, study.corpora[corpus], name=corpus, restricted=restricted)


def corpus_settings(study: Study, corpus: str) -> dict[str, Any]:
    """What building the corpus reads (its filters)."""
    return {"corpus": to_dict(_corpus(study, corpus))}


def parse_settings(study: Study, corpus: str) -> dict[str, Any]:
    """What downloading and parsing its raw files read: a filter change leaves them alone."""
    return {"corpus": to_dict(parse_view(_corpus(study, corpus)))}


def vocab_settings(study: Study, vocab: str) -> dict[str, Any]:
    return {"vocab": to_dict(TrainVocabSettings(name=vocab, train=study.vocabularies[vocab].train))}


MODEL_SETTINGS = {"pretrain": PretrainModelSettings, "distill": DistillModelSettings, "control": ControlSettings}


def model_settings(study: Study, model: str) -> dict[str, Any]:
    """What training the model reads: its recipe, or a control's seed of its random weights."""
    m = study.models[model]
    branch = {"branch": branch_start(study, model)} if m.kind == "pretrain" else {}
    return {"model": to_dict(view(MODEL_SETTINGS[m.kind], m, name=model, **branch))}


def task_settings(study: Study, task: str) -> dict[str, Any]:
    spec = study.resolved_tasks[task].spec
    return {"task": to_dict(view(PrepareTaskSettings, spec, restricted=task in restricted_marks(study).tasks))}


def _run_parts(study: Study, model: str, task: str) -> tuple[FinetuneModel, FinetuneTask]:
    marks = restricted_marks(study)
    spec = study.resolved_tasks[task].spec
    return FinetuneModel(name=model, restricted=model in marks.models), view(
        FinetuneTask, spec, restricted=task in marks.tasks
    )


def finetune_settings(study: Study, model: str, task: str) -> dict[str, Any]:
    model_part, task_part = _run_parts(study, model, task)
    settings = FinetuneRunSettings(model=model_part, task=task_part, finetune=study.run_finetune(model, task))
    return to_dict(settings)


def baseline_settings(study: Study, model: str, task: str) -> dict[str, Any]:
    """A no-training baseline reads the run's model and task, never the hyper-parameters."""
    model_part, task_part = _run_parts(study, model, task)
    return to_dict(BaselineSettings(model=model_part, task=task_part))


def _pretrain_logs(study: Study) -> dict[str, str]:
    """Each trained model's train_log.jsonl for the plots; a seeded model's first seed's."""
    logs: dict[str, str] = {}
    for name, m in study.models.items():
        if m.kind in ("pretrain", "distill"):
            logs.setdefault(study.model_and_seed(name)[0], f"{model_dir(study, name)}/train_log.jsonl")
    return logs


def _report_run(study: Study, name: str, task: str, fold: int, seed: int) -> dict[str, Any]:
    """One fine-tuning run as the tables read it: under its model's name, with its pretraining seed."""
    model, pseed = study.model_and_seed(name)
    metrics = f"{run_dir(name, task, fold, seed)}/metrics.json"
    return {"model": model, "pretrain_seed": pseed, "task": task, "fold": fold, "seed": seed, "metrics": metrics}


def report_settings(study: Study, workflow_root: str) -> dict[str, Any]:
    """Settings of the tables and plots (the only step that reads labels, domains, benchmarks, reference
    names and the aggregation); relative reference CSV paths are taken from the workflow,
    ``workflow_root`` (best relative to the run directory, so that a moved checkout changes nothing)."""
    marks = restricted_marks(study)
    models: dict[str, dict[str, Any]] = {}
    for name, m in study.models.items():
        model, seed = study.model_and_seed(name)
        if not m.evaluate:
            continue
        entry = models.setdefault(
            model,
            {
                "display": m.display or model,
                "kind": m.kind,
                "published": to_dict(m.published),
                "restricted": False,
                "pretrain_seeds": [],
            },
        )
        entry["restricted"] = entry["restricted"] or name in marks.models
        if seed is not None:
            entry["pretrain_seeds"].append(seed)
    tasks = {
        name: {
            "display": rt.spec.display,
            "type": rt.spec.type,
            "domain": rt.spec.domain,
            "benchmarks": list(rt.spec.benchmarks),
            "reference": dict(rt.spec.reference),
            "metric": rt.spec.metric,
            "folds": rt.spec.folds,
            "selection_fold": rt.spec.selection_fold,
            "restricted": name in marks.tasks,
            "seeds": list(rt.seeds),
        }
        for name, rt in study.resolved_tasks.items()
    }
    runs = [_report_run(study, *run) for run in finetune_runs(study)]
    data = {
        "models": models,
        "tasks": tasks,
        "runs": runs,
        "aggregation": to_dict(study.aggregation),
        "significance": to_dict(study.report),
        "reference": {
            key: path if path.startswith("/") else f"{workflow_root.rstrip('/')}/{path}"
            for key, path in to_dict(study.reference).items()
        },
        "pretrain_logs": _pretrain_logs(study),
        "vocab_diagnostics": {v: f"{vocab_dir(v)}/diagnostics.json" for v in study.vocabularies},
        "restricted_models": sorted(marks.models),
        "restricted_vocabularies": sorted(marks.vocabularies),
    }
    return to_dict(parse(ReportSettings, data, "report settings"))

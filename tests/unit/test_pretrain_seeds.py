"""Pretraining seeds: one model per seed in the plan, pooled cells, the multi-bootstrap in the claims,
and findings that say whether an effect survives pretraining-seed variation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from test_config import demo_config
from test_report_tables import LEWIS_CSV, TASKS, build, read_csv

from workflow_scripts.config import plan, step_settings
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError
from workflow_scripts.report import findings
from workflow_scripts.report.settings import load

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schemas/config.schema.yaml"


def _load(config: dict):
    return load_config(config, SCHEMA)


def _plain() -> dict:
    """The demo's config with every model pretrained once."""
    config = demo_config()
    for m in config["models"].values():
        m.pop("pretrain_seeds", None)
    return config


def _seeded(config: dict, model: str, seeds: list[int]) -> dict:
    config = copy.deepcopy(config)
    config["models"][model]["pretrain_seeds"] = seeds
    return config


def test_a_model_with_pretrain_seeds_is_pretrained_once_per_seed_and_the_others_keep_their_jobs():
    plain = _load(_plain())
    study = _load(_seeded(_plain(), "demo-roberta-m3", [42, 43]))
    seeded = ["demo-roberta-m3/pseed~42", "demo-roberta-m3/pseed~43"]
    assert study.seeded == {"demo-roberta-m3": seeded}
    assert [study.models[m].pretrain.seed for m in seeded] == [42, 43]
    assert [plan.model_dir(study, m) for m in seeded] == [
        "results/pretrain/demo-roberta-m3/pseed~42",
        "results/pretrain/demo-roberta-m3/pseed~43",
    ]
    # each seed's settings differ only in its name and seed
    a, b = (step_settings.model_settings(study, m)["model"] for m in seeded)
    assert a["pretrain"]["seed"] == 42 and b["pretrain"]["seed"] == 43
    assert {k: v for k, v in a["pretrain"].items() if k != "seed"} == {
        k: v for k, v in b["pretrain"].items() if k != "seed"
    }
    # every other model keeps its name, paths, settings and fine-tuning runs
    others = [m for m in plain.models if m != "demo-roberta-m3"]
    assert [m for m in study.models if m not in seeded] == others
    for m in others:
        assert plan.model_dir(study, m) == plan.model_dir(plain, m)
        if plain.models[m].kind in ("pretrain", "distill", "control"):
            assert step_settings.model_settings(study, m) == step_settings.model_settings(plain, m)
    runs, plain_runs = list(plan.finetune_runs(study)), list(plan.finetune_runs(plain))
    assert [r for r in runs if r[0] not in seeded] == [r for r in plain_runs if r[0] != "demo-roberta-m3"]
    per_model = sum(1 for r in plain_runs if r[0] == "demo-roberta-m3")
    assert sum(1 for r in runs if r[0] in seeded) == 2 * per_model
    # without the key nothing changes: the same models and the same report settings as before
    assert not plain.seeded and "pretrain_seed" not in json.dumps(
        [r for r in step_settings.report_settings(plain, ".")["runs"] if r.get("pretrain_seed") is not None]
    )


def test_adding_a_pretraining_seed_leaves_the_other_seeds_settings_alone():
    two = _load(_seeded(_plain(), "demo-roberta-m3", [42, 43]))
    three = _load(_seeded(_plain(), "demo-roberta-m3", [42, 43, 44]))
    for m, entry in two.models.items():
        if entry.kind != "baseline":
            assert step_settings.model_settings(three, m) == step_settings.model_settings(two, m)
        for task in two.resolved_tasks:
            assert step_settings.finetune_settings(three, m, task) == step_settings.finetune_settings(two, m, task)
    assert set(plan.finetune_runs(three)) - set(plan.finetune_runs(two)) == {
        r for r in plan.finetune_runs(three) if r[0] == "demo-roberta-m3/pseed~44"
    }


def test_models_trained_from_a_seeded_model_follow_its_seeds():
    study = _load(_seeded(_plain(), "demo-roberta", [1, 2]))
    # the continued models and the distilled students are trained per seed, from that seed's parent
    assert study.models["demo-roberta-m3/pseed~2"].init == "demo-roberta/pseed~2"
    assert study.models["demo-student/pseed~1"].teacher == "demo-roberta/pseed~1"
    assert study.models["demo-student/pseed~1"].distill.seed == 1
    # the random-weight control copies only the architecture and vocabulary, shared by every seed
    assert study.models["demo-control"].init == "demo-roberta/pseed~1"
    settings = step_settings.report_settings(study, ".")
    assert settings["models"]["demo-student"]["pretrain_seeds"] == [1, 2]
    runs = [r for r in settings["runs"] if r["model"] == "demo-student" and r["task"] == "demo-ner"]
    assert {(r["pretrain_seed"], r["seed"]) for r in runs} == {(p, s) for p in (1, 2) for s in range(1, 6)}
    assert runs[0]["metrics"].startswith("results/finetune/demo-student/pseed~")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["models"]["demo-control"].update(pretrain_seeds=[1, 2]), "only models trained here"),
        (lambda c: c["models"]["demo-roberta-m3"].update(pretrain_seeds=[1, 1]), "distinct seeds"),
        (
            lambda c: (
                c["models"]["demo-roberta"].update(pretrain_seeds=[1, 2])
                or c["models"]["demo-student"].update(pretrain_seeds=[3, 4])
            ),
            "models.demo-student.pretrain_seeds: it is trained from seeded models",
        ),
    ],
)
def test_bad_pretrain_seeds_are_named(edit, message):
    config = _plain()
    edit(config)
    with pytest.raises(PipelineError, match=message):
        _load(config)


TWO_TASKS = {name: TASKS[name] for name in ("bc5chem", "mednli")}


def _score(model: str, pretrain_seed: int | None, seed: int, lost: float) -> float:
    """pm beats scratch by 10 points on pretraining seed 1; on seed 2 by 10 - ``lost``."""
    if model == "scratch":
        return 0.70 + 0.01 * seed
    return 0.80 + 0.01 * seed - (lost if pretrain_seed == 2 else 0.0) + 0.001 * seed**2


def _study(root: Path, lost: float) -> Path:
    """pm with pretraining seeds 1 and 2, scratch trained once; each task has seeds 1..3."""
    models = {
        "pm": {"display": "ours-PM", "kind": "pretrain", "pretrain_seeds": [1, 2]},
        "scratch": {"display": "scratch", "kind": "external"},
    }
    runs = []
    for model, pretrain_seeds in (("pm", [1, 2]), ("scratch", [None])):
        for p in pretrain_seeds:
            trained = model if p is None else f"{model}/pseed~{p}"
            for task, t in TWO_TASKS.items():
                for seed in t["seeds"]:
                    rel = f"results/finetune/{trained}/{task}/fold~0/seed~{seed}/metrics.json"
                    runs.append({"model": model, "pretrain_seed": p, "task": task, "seed": seed, "metrics": rel})
                    s = _score(model, p, seed, lost)
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_text(json.dumps({"model": trained, "seed": seed, "test": {"score": s}}))
    settings = {
        "models": models,
        "tasks": TWO_TASKS,
        "runs": runs,
        "aggregation": {"statistic": "median", "bootstrap_samples": 200, "compare": [["pm", "scratch"]]},
        "reference": {"lewis": str(LEWIS_CSV)},
    }
    path = root / "results/configs/report.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings, sort_keys=False))
    return path


def test_cells_pool_pretraining_and_fine_tuning_seeds_and_say_so(tmp_path):
    build(tmp_path, _study(tmp_path, lost=0.04))
    rows = {(r["model"], r["task"]): r for r in read_csv(tmp_path / "results/tables/medians.csv")}
    pm = rows[("pm", "bc5chem")]
    pooled = sorted(_score("pm", p, s, 0.04) for p in (1, 2) for s in (1, 2, 3))
    assert float(pm["value"]) == pytest.approx(100 * (pooled[2] + pooled[3]) / 2, abs=1e-3)
    assert (pm["n"], pm["expected_n"], pm["status"]) == ("6", "6", "ok")
    assert "median over 2 pretraining seeds x 3 fine-tuning runs each (6 runs, pooled)" in pm["note"]
    assert "pretraining" not in rows[("scratch", "bc5chem")]["note"]
    assert (
        "ours-PM: pretrained once per seed (1, 2); each cell's statistic"
        in (tmp_path / "results/tables/medians.md").read_text()
    )
    comparisons = read_csv(tmp_path / "results/tables/comparisons.csv")
    task = next(r for r in comparisons if r["task"] == "bc5chem" and r["benchmark"] == "lewis")
    # scratch's one row is paired with each of pm's pretraining seeds, run by run
    assert (task["test"], task["n_pairs"], task["pretrain_seeds"]) == ("multi-bootstrap and paired t-test", "6", "2")
    assert float(task["mean_paired_difference"]) == pytest.approx(
        100 * sum(_score("pm", p, s, 0.04) - _score("scratch", None, s, 0) for p in (1, 2) for s in (1, 2, 3)) / 6,
        abs=1e-4,
    )


@pytest.mark.parametrize("lost, survives", [(0.01, True), (0.20, False)])
def test_a_finding_says_whether_its_effect_survives_pretraining_seed_variation(tmp_path, lost, survives):
    path = _study(tmp_path, lost)
    build(tmp_path, path)
    intro, items = findings.findings(load(path), tmp_path / "results/tables", None)
    sentence = next(f.sentence for f in items if f.sentence.startswith("ours-PM vs scratch, All mean"))
    assert "multi-bootstrap and paired t-test, n = 6: 2 pretraining x 3 fine-tuning seeds" in sentence
    if survives:
        assert "better beyond seed noise; the effect survives pretraining-seed variation" in sentence
    else:
        # +10 on one pretraining seed, -10 on the other: no effect once pretraining seeds vary
        assert "not shown to survive pretraining-seed variation" in sentence and "beyond" not in sentence
    assert "Sellam et al. (ICLR 2022" in intro and "ours-PM (2) pretraining seeds" in intro
    assert not findings.unsupported(items, 0.05)
    missing = (tmp_path / "results/tables/missing.md").read_text()
    assert "- pm: pretraining seeds 1, 2" in missing

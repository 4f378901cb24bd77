"""The study config: typed parsing, cross-references, the generated schema and the envs."""

from __future__ import annotations

import copy
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
import yaml

from workflow_scripts.config import schema as schema_mod
from workflow_scripts.config.plan import corpus_files, fetch_table, finetune_runs
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.registry import load_registry
from workflow_scripts.typed import parse, parse_yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "config.schema.yaml"


def full_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def demo_config() -> dict:
    return yaml.safe_load((ROOT / "demo" / "config.yaml").read_text())


@dataclass
class Inner:
    rate: float = field(default=0.1, metadata={"help": "a rate"})


@dataclass
class Outer:
    name: str = field(metadata={"help": "required"})
    mode: Literal["a", "b"] = field(default="a", metadata={"help": "mode"})
    sizes: list[int] = field(default_factory=list, metadata={"help": "sizes"})
    inner: Inner = field(default_factory=Inner, metadata={"help": "inner"})
    maybe: int | None = field(default=None, metadata={"help": "optional"})


def test_parse_builds_nested_dataclasses():
    obj = parse(Outer, {"name": "x", "mode": "b", "sizes": [1, 2], "inner": {"rate": 1}}, "cfg")
    assert obj.inner.rate == 1.0 and obj.sizes == [1, 2] and obj.mode == "b" and obj.maybe is None


@pytest.mark.parametrize(
    "data, message",
    [
        ({"name": "x", "colour": 1}, "cfg: unknown key 'colour'"),
        ({"mode": "a"}, "cfg.name: required key is missing"),
        ({"name": "x", "mode": "c"}, "cfg.mode: 'c' is not one of 'a', 'b'"),
        ({"name": "x", "sizes": [1, "two"]}, "cfg.sizes[1]: expected an integer"),
        ({"name": "x", "inner": {"rate": "fast"}}, "cfg.inner.rate: expected a number"),
        ({"name": "x", "maybe": True}, "cfg.maybe"),
    ],
)
def test_parse_errors_name_the_key(data, message):
    with pytest.raises(PipelineError) as err:
        parse(Outer, data, "cfg")
    assert message in str(err.value)


def test_full_study_config_is_valid_and_complete():
    study = load_config(full_config(), SCHEMA)
    assert {"pubmed", "pmc", "mimic"} <= set(study.corpora)
    # Every task of a published table, BLURB's own splits beside the releases Lewis et al. used,
    # and the long-document task.
    published = {n for n, entry in load_registry().items() if entry.get("benchmarks")}
    assert set(study.resolved_tasks) == published | {"mimic-iii-50"}
    kinds = {m.kind for m in study.models.values()}
    assert kinds == {"pretrain", "distill", "external", "control", "baseline"}
    algorithms = {v.train.algorithm for v in study.vocabularies.values()}
    assert algorithms == {"bpe", "wordpiece", "sentencepiece_unigram", "sentencepiece_bpe"}
    pubmed = corpus_files(study, "pubmed")
    assert pubmed[0].name == "pubmed25n0001.xml.gz"
    assert pubmed[0].url == "https://ftp.ncbi.nlm.nih.gov/pubmed/baseline/pubmed25n0001.xml.gz"
    assert pubmed[1274].url.endswith("/updatefiles/pubmed25n1275.xml.gz")
    assert "--md5-url" in fetch_table(study, "pubmed")["pubmed25n0001.xml.gz"]
    seeds = {t: rt.seeds for t, rt in study.resolved_tasks.items()}
    assert len(seeds["biosses"]) == 10 and len(seeds["ncbi-disease"]) == 5
    folds = {t for t, rt in study.resolved_tasks.items() if len(rt.folds) == 10}
    assert folds == {"gad", "euadr"}


def test_demo_config_is_valid():
    study = load_config(demo_config(), SCHEMA)
    types = {rt.spec.type for rt in study.resolved_tasks.values()}
    assert types == {"ner", "pico", "relation", "similarity", "doc_classification", "qa", "nli"}
    evaluated = sum(1 for m in study.models.values() if m.evaluate)
    per_model = sum(len(rt.seeds) for rt in study.resolved_tasks.values())
    assert len(list(finetune_runs(study))) == evaluated * per_model
    assert len(study.resolved_tasks["demo-hoc-long"].seeds) == 3
    assert len(study.seeds) == 5 and {m.kind for m in study.models.values()} >= {"control", "baseline"}


def _bad(mutate) -> str:
    cfg = full_config()
    mutate(cfg)
    with pytest.raises(PipelineError) as err:
        load_config(cfg, SCHEMA)
    return str(err.value)


def test_unknown_key_is_named():
    msg = _bad(lambda c: c["models"]["ours-base-pm-voc"].update(colour="blue"))
    assert "models.ours-base-pm-voc" in msg and "colour" in msg


def test_wrong_type_is_named():
    msg = _bad(lambda c: c["corpora"]["pubmed"].update(shards="many"))
    assert "corpora.pubmed.shards" in msg


def test_missing_vocabulary_is_named():
    msg = _bad(lambda c: c["models"]["ours-base-pm-voc"].update(vocab="no-such-vocab"))
    assert msg.startswith("models.ours-base-pm-voc.vocab: 'no-such-vocab' is not a vocabulary")


def test_missing_teacher_and_corpus_are_named():
    assert "models.ours-distilled-align.teacher" in _bad(
        lambda c: c["models"]["ours-distilled-align"].update(teacher="nobody")
    )
    assert "vocabularies.pm-bpe50k.corpora[0]" in _bad(
        lambda c: c["vocabularies"]["pm-bpe50k"].update(corpora=["wikipedia"])
    )


def test_task_with_bad_seeds_is_named():
    assert "tasks.biosses.seeds" in _bad(lambda c: c["tasks"]["biosses"].update(seeds=[1, 1]))


def test_job_resources_come_from_the_rule_or_the_model():
    cfg = full_config()
    cfg["models"]["ours-large-pm-voc"] = {
        **cfg["models"]["ours-base-pm-voc"],
        "resources": {"gpu": 32, "nodes": 4, "threads": 32},
    }
    study = load_config(cfg, SCHEMA)
    assert (study.job_resources("pretrain").gpu, study.job_resources("pretrain").nodes) == (16, 2)
    large = study.job_resources("pretrain", "ours-large-pm-voc")
    assert (large.gpu, large.nodes, large.threads) == (32, 4, 32)
    assert study.job_resources("pretrain", "ours-base-pm-voc").gpu == 16
    # a rule the config does not size: one thread, no GPU
    assert (study.job_resources("finetune").gpu, study.job_resources("build_corpus").threads) == (1, 8)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c["resources"].update(pretrian={"gpu": 8}), "resources.pretrian: not a rule with sized jobs"),
        (
            lambda c: c["resources"]["pretrain"].update(gpu=12, nodes=5),
            "resources.pretrain.gpu: 12 GPUs cannot be split evenly over 5 nodes",
        ),
        (lambda c: c["resources"]["finetune"].update(threads=0), "resources.finetune.threads: must be at least 1"),
        (
            lambda c: c["models"]["pubmedbert"].update(resources={"gpu": 1}),
            "models.pubmedbert.resources: only models trained here",
        ),
    ],
)
def test_bad_job_resources_are_named(change, message):
    assert message in _bad(change)


def test_init_cycle_is_refused():
    def cycle(c):
        c["models"]["roberta-base"] = {
            "kind": "pretrain",
            "init": "ours-base-pm",
            "corpora": ["pubmed"],
        }

    assert "cycle" in _bad(cycle)


def test_schema_file_is_generated_from_the_dataclasses():
    assert SCHEMA.read_text() == schema_mod.render(), "schemas/config.schema.yaml is stale: run `make schema`"


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


@pytest.mark.parametrize("env", ["pipeline.yaml", "pipeline-gpu.yaml"])
def test_conda_envs_pin_what_pyproject_pins(env):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _pins(project["dependencies"])
    data = yaml.safe_load((ROOT / "envs" / env).read_text())
    pip = next(d["pip"] for d in data["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert _pins(pip) == wanted
    python = next(d for d in data["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert python == "python=3.11"


def test_resolved_settings_do_not_alias_config():
    cfg = full_config()
    before = copy.deepcopy(cfg)
    load_config(cfg, SCHEMA)
    assert cfg == before


def test_continuing_a_model_with_another_objective_is_refused():
    def electra_from_roberta(c):
        c["models"]["electra-from-roberta"] = {
            "kind": "pretrain",
            "init": "ours-base-pm-voc",
            "corpora": ["pubmed"],
            "pretrain": {"architecture": "electra", "objective": "electra"},
        }

    msg = _bad(electra_from_roberta)
    assert msg.startswith(
        "models.electra-from-roberta.pretrain.objective: 'ours-base-pm-voc' was trained with objective mlm"
    )


def _clinical(**changes):
    def edit(c):
        entry = c["models"]["ours-wsd-clinical"]
        for key, value in changes.items():
            if key == "parent":
                c["models"]["ours-wsd-stable"]["pretrain"].update(value)
            elif key == "pretrain":
                entry["pretrain"] = {**entry["pretrain"], **value}
            else:
                entry[key] = value

    return edit


@pytest.mark.parametrize(
    "edit, message",
    [
        (_clinical(init="nope"), "models.ours-wsd-clinical.init: 'nope' is not a model of this config"),
        (_clinical(init="roberta-base"), "models.ours-wsd-clinical.init: 'roberta-base' is a kind: external model"),
        (_clinical(init="ours-wsd-bio"), "models.ours-wsd-clinical.init: 'ours-wsd-bio' is itself a decay branch"),
        (_clinical(branch={"step": 95000}), "branch.step: 95000 is outside ours-wsd-stable's steps 1..90000"),
        (
            _clinical(parent={"schedule": "wsd"}),
            "branch.step: 90000 is inside ours-wsd-stable's decay (steps 81000..90000); branch from step 81000",
        ),
        (_clinical(parent={"schedule": "linear"}), "ours-wsd-stable has schedule linear"),
        (_clinical(branch={"step": 1000}), "branch.step: 1000 is inside ours-wsd-stable's warm-up"),
        (
            _clinical(pretrain={"architecture": "bert"}),
            "models.ours-wsd-clinical.pretrain.architecture: a decay branch resumes ours-wsd-stable's weights",
        ),
        (_clinical(pretrain={"size": "large"}), "models.ours-wsd-clinical.pretrain.size: a decay branch"),
        (_clinical(vocab="pm-m3-bpe50k"), "models.ours-wsd-clinical.vocab: a decay branch keeps its parent's vocab"),
        (_clinical(pretrain={"decay_ratio": 0.2}), "models.ours-wsd-clinical.pretrain.decay_ratio: a decay branch"),
        (_clinical(pretrain={"max_steps": 90000}), "models.ours-wsd-clinical.pretrain.max_steps: must exceed"),
    ],
    ids=[
        "unknown parent",
        "external parent",
        "branch of a branch",
        "beyond max_steps",
        "inside the decay",
        "linear parent",
        "inside the warm-up",
        "architecture",
        "shape",
        "vocabulary",
        "curve key",
        "no decay left",
    ],
)
def test_a_bad_decay_branch_is_refused_naming_the_key(edit, message):
    assert message in _bad(edit)


def test_a_decay_branch_inherits_its_parents_recipe_and_the_parent_keeps_its_step():
    study = load_config(full_config(), SCHEMA)
    stable, clinical = study.models["ours-wsd-stable"].pretrain, study.models["ours-wsd-clinical"].pretrain
    assert stable.keep_steps == [90000]
    assert (clinical.batch_size, clinical.lr, clinical.phases) == (stable.batch_size, stable.lr, stable.phases)
    assert (clinical.mask_prob, stable.mask_prob) == (0.15, 0.3)
    # its own curve: no warm-up, the decay spans exactly its steps 90,000 .. 100,000
    assert (clinical.schedule, clinical.warmup_ratio, clinical.decay_ratio) == ("wsd", 0.0, 0.1)


@pytest.mark.parametrize(
    "path", ["config.yaml", "schemas/config.schema.yaml", "workflow_scripts/tasks/registry.yaml", "demo/config.yaml"]
)
def test_yaml_reads_the_same_through_libyaml(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    assert parse_yaml(text) == yaml.safe_load(text)


def test_a_yaml_error_quotes_the_offending_line_as_pyyaml_does():
    text = "tasks:\n  a: [1, 2\n  b: 3\n"
    with pytest.raises(yaml.YAMLError) as plain:
        yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError) as ours:
        parse_yaml(text)
    assert str(ours.value) == str(plain.value)
    assert "a: [1, 2" in str(ours.value)

import functools
import os
import re
import shlex
import sys

from workflow_scripts import (
    engine,
    numerics,
    paths,
    preload,
    workdir_lock,
)
from workflow_scripts.config import (
    checkpoints,
    cost_plan,
    gpu_share,
    plan,
    step_settings,
)
from workflow_scripts.config import launch
from workflow_scripts.config.launch import launch_command
from workflow_scripts.config.resources import MODEL_RULES, snakemake_resources
from workflow_scripts.config.shell_words import shell_word
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError
from workflow_scripts.download.hub import PIN_COMMAND
from workflow_scripts.atomic import write_yaml
from workflow_scripts.pack.index import build_index
from workflow_scripts.download.local_copy import local_source, tree_state

# One Snakemake per run directory: a second one stops with one clear line, never Snakemake's
# lock race (workflow_scripts/workdir_lock.py). Jobs Snakemake starts itself skip it.
if workflow.is_main_process:
    _locked = workdir_lock.acquire(sys.argv)
    if _locked:
        sys.exit(_locked)

# Snakemake's planning sped up by patches of its internals, on the Snakemake versions they were
# tested on; any other runs stock and says so (workflow_scripts/engine, docs/engine.md).
try:
    ENGINE = engine.install(workflow)
except PipelineError as exc:
    sys.exit(f"error: {exc}")

try:
    STUDY = load_config(config, workflow.source_path("../schemas/config.schema.yaml"))
except PipelineError as exc:
    sys.exit(f"error: config: {exc}")

try:
    checkpoints.check_local(STUDY)
except PipelineError as exc:
    sys.exit(f"error: config: {exc}")
# A dry run plans an unpinned hub checkpoint; a real run that needs it refuses to start (onstart).
UNPINNED = checkpoints.unpinned(STUDY)
for _key in UNPINNED.values():
    print(f"warning: config: {_key}: unpinned; run `{PIN_COMMAND}`", file=sys.stderr)

# Read once, when torch is imported: set before any job starts, so that every job inherits them.
numerics.export(STUDY.numerics)
# A Slurm allocation's Snakemake runs a group job: its fine-tuning runs fork from the job step's
# preloaded interpreter (workflow_scripts/preload.py), and its job steps inherit this.
if workflow.remote_exec:
    os.environ[preload.GROUP_JOB] = "1"

# relative to the run directory: absolute paths in params would rerun jobs of a moved checkout
WORKFLOW_ROOT = os.path.relpath(workflow.basedir)
CORPORA = list(STUDY.corpora)
TEXT_CORPORA = [c for c, e in STUDY.corpora.items() if e.type == "text"]
PARSED_CORPORA = [c for c in CORPORA if c not in TEXT_CORPORA]
CLOUD_CORPORA = plan.cloud_corpora(STUDY)
VOCABS = list(STUDY.vocabularies)
MODELS = list(STUDY.models)
TASKS = list(STUDY.resolved_tasks)
PRETRAINED = [m for m, e in STUDY.models.items() if e.kind == "pretrain"]
DISTILLED = [m for m, e in STUDY.models.items() if e.kind == "distill"]
BASELINES = plan.baseline_models(STUDY)
TRAINED_OR_LOADED = [m for m in MODELS if m not in BASELINES]
EVALUATED = plan.evaluated_models(STUDY)
PACK_TOKENIZERS = plan.pack_tokenizers(STUDY)
PACKED_SHARD = f"{paths.PACKED}/shard~{{shard}}"
TABLE_NAMES = ["medians", "groups", "blurb"]
TABLES = expand(
    f"{paths.TABLES}/{{table}}.{{ext}}", table=TABLE_NAMES, ext=["csv", "md", "tex"]
) + [f"{paths.TABLES}/spread.csv", f"{paths.TABLES}/comparisons.csv"]
CORPUS_TABLES = expand(f"{paths.TABLES}/corpora.{{ext}}", ext=["csv", "md", "tex"]) + [
    f"{paths.TABLES}/corpora_stages.csv"
]
PLOTS = expand(
    f"{paths.TABLES}/{{plot}}.png",
    plot=["scores", "pretrain_loss", "pretrain_speed", "vocab_fragmentation"],
)
CAPTIONS = "../workflow_scripts/report/captions"


def with_captions(paths):
    """Markdown tables and plots go into `snakemake --report`, each with its caption."""
    out = []
    for path in paths:
        name, ext = os.path.splitext(os.path.basename(path))
        if ext in (".md", ".png"):
            category = "Plots" if ext == ".png" else "Tables"
            path = report(path, caption=f"{CAPTIONS}/{name}.rst", category=category)
        out.append(path)
    return out


CONDA_ENV = "../envs/pipeline.yaml"
CONDA_ENV_GPU = "../envs/pipeline-gpu.yaml"


def _names(items):
    return "|".join(re.escape(i) for i in items) or "^$"


wildcard_constraints:
    corpus=_names(CORPORA),
    vocab=_names(VOCABS),
    model=_names(MODELS),
    task=_names(TASKS),
    tokenizer=_names(PACK_TOKENIZERS),
    seq_len=r"\d+",
    packing=r"(packing~[a-z]+/)?",
    heldout=r"[0-9.e+-]+",
    shard=r"\d+",
    fold=r"\d+",
    seed=r"\d+",
    file=r"[^/]+",


# Input and params functions run once per job while the DAG is built (thousands of jobs
# in the full study): memoise what they derive from the config.
corpus_files = functools.cache(lambda corpus: plan.corpus_files(STUDY, corpus))
fetch_table = functools.cache(lambda corpus: plan.fetch_table(STUDY, corpus))
corpus_urls = functools.cache(lambda corpus: plan.corpus_source_urls(STUDY, corpus))
finetune_settings = functools.cache(
    lambda model, task: step_settings.finetune_settings(STUDY, model, task)
)
model_marker = functools.cache(lambda model: plan.model_marker(STUDY, model))
model_dir = functools.cache(lambda model: plan.model_dir(STUDY, model))
model_packed = functools.cache(lambda model: plan.model_packed(STUDY, model))


def write_settings(path, settings):
    """Resolved settings of one step, written by a local rule so params are tracked."""
    write_yaml(path, settings)


def job_sizes(rule_name):
    """Every size a job of the rule may have, by the config key that sets it."""
    sizes = {f"resources.{rule_name}": STUDY.job_resources(rule_name)}
    for model, entry in STUDY.models.items():
        if entry.kind == rule_name and entry.resources:
            sizes[f"models.{model}.resources"] = entry.resources
    return sizes


# One GPU server without Slurm (profiles/gpu-server): the rules whose jobs take their cards from
# workflow_scripts/cards, with Snakemake's gpu_share budget set from the cards on offer.
try:
    GPU_SERVER = launch.gpu_server(workflow, job_sizes)
except PipelineError as exc:
    sys.exit(f"error: {exc}")


def _job_size(rule_name, wildcards):
    model = wildcards.model if rule_name in MODEL_RULES else None
    return STUDY.job_resources(rule_name, model)


# Snakemake evaluates a callable resource once per job, each time inspecting its signature:
# only the training rules, sized per model, get functions; the others get the values.
def job_threads(rule_name):
    """The rule's `threads:` from the config's `resources:` (per model for training rules)."""
    if rule_name not in MODEL_RULES:
        return STUDY.job_resources(rule_name).threads
    return lambda wildcards: _job_size(rule_name, wildcards).threads


def job_resources(rule_name):
    """The rule's `resources:` from the config's `resources:`; runtime grows with each retry."""
    models = [m for m, e in STUDY.models.items() if e.kind == rule_name]
    multi_node = any(STUDY.job_resources(rule_name, m).nodes > 1 for m in models)
    size = STUDY.job_resources(rule_name)

    def value(key):
        if rule_name not in MODEL_RULES:
            return snakemake_resources(size, multi_node)[key]
        return lambda wildcards: snakemake_resources(
            _job_size(rule_name, wildcards), multi_node
        )[key]

    resources = {key: value(key) for key in snakemake_resources(size, multi_node)}
    resources["runtime"] = lambda wildcards, attempt: (
        _job_size(rule_name, wildcards).runtime * attempt
    )
    if rule_name in GPU_SERVER:
        resources["gpu_share"] = lambda wildcards: (
            gpu_share.GPU_SHARE_UNITS * _job_size(rule_name, wildcards).gpu
        )
    return resources


def config_state(model):
    """The state of a model's config.json (none before it is trained): what a run's plan reads."""
    try:
        stat = os.stat(f"{model_dir(model)}/config.json")
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


@functools.cache
def finetune_plan(model, task, config_state):
    """Runs per card and time limit of a fine-tuning run: once per model, task and state of the
    model's config.json, from that file and the task's recorded size
    (workflow_scripts/config/gpu_share.py).
    """
    size = STUDY.job_resources("finetune")
    spec = STUDY.resolved_tasks[task].spec
    shape = gpu_share.model_shape(model_dir(model))
    run = gpu_share.plan_run(size, shape, finetune_settings(model, task), spec)
    if size.runtime != "auto" and run.estimate and run.estimate > size.runtime:
        _flag_runtime(model, task, run.estimate, size.runtime)
    return run


RUNTIME_FLAGGED = set()


def _flag_runtime(model, task, estimate, runtime):
    """Once per task: a fixed time limit shorter than a run's estimated one."""
    if task not in RUNTIME_FLAGGED:
        RUNTIME_FLAGGED.add(task)
        print(
            f"warning: resources.finetune.runtime: {runtime} min, but {model} on {task} is"
            f" estimated to need {estimate} min (twice the estimate); set runtime: auto or raise it",
            file=sys.stderr,
        )


def finetune_resources():
    """A fine-tuning run's resources: the config's, with `gpu` a string that a group job's runs
    share, the run's `gpu_share` of a card and its time limit (finetune_plan). `nodes` and
    `gpu_mem_gb` are left out: Snakemake would sum them over a group's runs."""
    size = STUDY.job_resources("finetune")

    def plan(wildcards):
        return finetune_plan(
            wildcards.model, wildcards.task, config_state(wildcards.model)
        )

    def share(wildcards):
        return gpu_share.gpu_share(plan(wildcards).runs_per_gpu)

    def runtime(wildcards, attempt):
        return plan(wildcards).runtime * attempt

    resources = job_resources("finetune")
    del resources["nodes"], resources["gpu_mem_gb"]
    return {
        **resources,
        # on a GPU server a number: no group job there, and --resources gpu=N must count it
        "gpu": size.gpu if "finetune" in GPU_SERVER else gpu_share.group_gpus(size.gpu),
        "gpu_share": share,
        "runtime": runtime,
    }


def group_step_runs(wildcards):
    """No input. A Slurm allocation's Snakemake runs the fine-tuning group job as one job step,
    its runs side by side (workflow_scripts/engine/whole_group.py): an input function is
    evaluated after the settings are final and before the groups form."""
    if workflow.remote_exec:
        workflow.group_settings = engine.whole_group.whole(
            workflow.group_settings, "finetune"
        )
    return []


def launcher(resources, threads, rule_name):
    """python, torchrun, or srun + torchrun per node; on a GPU server behind the card allocator
    (see workflow_scripts/config/launch.py)."""
    from snakemake.exceptions import WorkflowError

    gpus = int(resources.get("gpu", 0))
    try:
        command = launch_command(
            gpus,
            int(resources.get("nodes", 1)),
            threads,
            rule_name,
            "mpi" in resources.keys(),
        )
        if rule_name in GPU_SERVER:
            return launch.on_gpu_server(
                command, gpus, int(resources.get("gpu_share", 0))
            )
        return command
    except PipelineError as exc:
        raise WorkflowError(str(exc)) from exc


def task_url(task, name):
    return plan.task_source_url(STUDY, task, name)


def fetch_table_names(corpus):
    return list(fetch_table(corpus))


def parse_extra_inputs(wildcards):
    return plan.parse_extra_inputs(STUDY, wildcards.corpus, wildcards.file)


def parsed_inputs(wildcards):
    return [
        plan.parsed_path(wildcards.corpus, f.name)
        for f in corpus_files(wildcards.corpus)
    ]


def decontamination_inputs(wildcards):
    """The test texts of the tasks a corpus is decontaminated against (not their cards or settings)."""
    return [
        f"{plan.task_dir(t)}/test_texts.jsonl"
        for t in STUDY.corpora[wildcards.corpus].decontaminate
    ]


def corpus_markers(corpora):
    return [f"{plan.corpus_dir(c)}/stats.json" for c in corpora]


def model_inputs(wildcards):
    m = STUDY.models[wildcards.model]
    inputs = model_packed(wildcards.model) + plan.tokenizer_marker(
        STUDY, wildcards.model
    )
    for parent in (m.init, m.teacher):
        if parent:
            inputs += plan.model_marker(STUDY, parent)
    return inputs


def packed_args(wildcards):
    return " ".join(f"--packed {p}" for p in model_packed(wildcards.model))


def ner_task_inputs(wildcards):
    return [
        f"{plan.task_dir(t)}/data_card.json"
        for t, rt in STUDY.resolved_tasks.items()
        if rt.spec.type in ("ner", "pico")
    ]


def compare_args(wildcards):
    args = []
    for other in STUDY.vocabularies[wildcards.vocab].compare:
        path = (
            plan.vocab_dir(other)
            if other in STUDY.vocabularies
            else plan.model_dir(STUDY, other)
        )
        args.append(f"--compare {other}={shell_word(path)}")
    return " ".join(args)


def compare_inputs(wildcards):
    inputs = []
    for other in STUDY.vocabularies[wildcards.vocab].compare:
        if other in STUDY.vocabularies:
            inputs.append(f"{plan.vocab_dir(other)}/tokenizer_config.json")
        else:
            inputs += plan.model_marker(STUDY, other)
    return inputs


def task_raw_inputs(wildcards):
    return [
        paths.TASK_RAW.format(task=wildcards.task, file=name)
        for name in plan.task_files(STUDY, wildcards.task)
    ]


def all_run_files(name="metrics.json"):
    """One file of every fine-tuning run of the study."""
    return [
        f"{plan.run_dir(m, t, f, s)}/{name}" for m, t, f, s in plan.finetune_runs(STUDY)
    ]


def selection_run(wildcards):
    """GAD/EU-ADR: the other folds replay the schedule chosen on the selection fold (same seed)."""
    spec = STUDY.resolved_tasks[wildcards.task].spec
    if spec.selection_fold is None or int(wildcards.fold) == spec.selection_fold:
        return []
    return [
        f"{plan.run_dir(wildcards.model, wildcards.task, spec.selection_fold, wildcards.seed)}/metrics.json"
    ]


# Under the slurm executor, every partition the jobs will ask for is checked against
# `sinfo` once, before the first submission (a leftover SITE_ placeholder or a misspelt
# partition would otherwise fail only when its first job is submitted).
onstart:
    from snakemake.exceptions import WorkflowError

    # Local jobs are bounded by the cores, not by Snakemake's job-rate limiter, whose rescheduling
    # chains grow by one per finished job (workflow_scripts/engine/job_rate.py).
    if ENGINE:
        engine.job_rate.unlimit_local_jobs(workflow)
    try:
        checkpoints.refuse_unpinned(
            [
                UNPINNED[job.wildcards.model]
                for job in workflow.dag.needrun_jobs()
                if job.rule.name == "download_model"
                and job.wildcards.model in UNPINNED
            ]
        )
    except PipelineError as exc:
        raise WorkflowError(f"error: config: {exc}") from None
    plugin = workflow.executor_plugin
    if plugin is not None and plugin.name == "slurm":
        from workflow_scripts.config import slurm_partitions

        try:
            slurm_partitions.check_jobs(
                (job.rule.name, job.resources.get("slurm_partition"))
                for job in workflow.dag.needrun_jobs()
                if not job.is_local
            )
        except PipelineError as exc:
            raise WorkflowError(f"error: {exc}") from None

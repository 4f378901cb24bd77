"""Path patterns filled from a template parsed once: the same paths and errors as Snakemake's."""

from __future__ import annotations

import pytest
import snakefile_runs
import snakemake.api  # noqa: F401  (snakemake.io alone imports in a cycle)
from snakemake import io
from snakemake.io import AnnotatedString
from snakemake.iocontainers import Wildcards

from workflow_scripts.engine import wildcard_templates

PLAIN = io.apply_wildcards
FILL = wildcard_templates.filler(io.WILDCARD_REGEX, io.WildcardError)
VALUES = {"model": "ours-base", "task": "bc5cdr-chem", "fold": 0, "seed": 3, "a.b": "dotted", "n": 1.5}
PATTERNS = [
    "results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/metrics.json",
    "results/finetune/{model,[^/]+}/{task}/fold~{fold,\\d+}/seed~{seed}/metrics.json",
    "{model}{task}",  # adjacent
    "{seed}/{seed}.{seed}",  # repeated
    "{ model }/{task , [a-z]{3,5}}",  # spaces and a nested brace in the constraint
    "{a.b}:{n}",
    "no wildcards at all",
    "",
    "{{model}} and {model}",  # doubled braces around a wildcard
    "{not closed",
    "{}",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_fills_as_snakemake_fills_it(pattern):
    for wildcards in (VALUES, Wildcards(fromdict={k: v for k, v in VALUES.items() if "." not in k})):
        for given in (pattern, AnnotatedString(pattern)):
            try:
                expected = PLAIN(given, wildcards)
            except (io.WildcardError, AttributeError) as error:  # a Wildcards object lacks "a.b"
                with pytest.raises(type(error), match=str(error)):
                    FILL(given, wildcards)
                continue
            assert FILL(given, wildcards) == expected and type(FILL(given, wildcards)) is type(expected)
    # twice: the second reads the kept template
    assert FILL(pattern, VALUES) == PLAIN(pattern, VALUES)


def test_a_missing_wildcard_raises_snakemakes_error():
    pattern = "results/{model}/{missing}/x.txt"
    with pytest.raises(io.WildcardError) as plain:
        PLAIN(pattern, VALUES)
    with pytest.raises(io.WildcardError) as ours:
        FILL(pattern, VALUES)
    assert str(ours.value) == str(plain.value) == "'missing'"


SNAKEFILE = """\
{install}

rule all:
    input:
        expand("out/{{model}}/run~{{seed}}.txt", model=["a", "b"], seed=range(3)),

rule run:
    output:
        "out/{{model,[ab]}}/run~{{seed}}.txt",
    log:
        "logs/{{model}}/{{seed}}.log",
    benchmark:
        "bench/{{model}}-{{seed}}.tsv"
    params:
        name=lambda wc: f"{{wc.model}}-{{wc.seed}}",
    shell:
        "echo {{params.name}} > {{output}} 2> {{log}}"
"""


def test_snakemake_plans_and_prints_the_same_jobs(tmp_path):
    patched = snakefile_runs.planned_alike(tmp_path, SNAKEFILE, "wildcard_templates")
    assert sum("echo b-2 > out/b/run~2.txt 2> logs/b/2.log" in line for line in patched) == 1

"""Paths on a rule's command line reach the step as one argument, whatever they hold; a path that
needs no quoting is left as it was, so that no finished job reruns for a changed parameter."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from test_config import SCHEMA, demo_config

from workflow_scripts.config.shell_words import shell_word
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError


def _through_bash(*words: str) -> list[str]:
    """The arguments a command line made of ``words`` gives its program, as Snakemake runs it (bash)."""
    script = 'for a in "$@"; do printf "%s\\0" "$a"; done'
    line = " ".join(shell_word(w) for w in words)
    out = subprocess.run(["bash", "-c", f"set -- {line}; {script}"], capture_output=True, check=True)
    return out.stdout.decode().split("\0")[:-1]


@pytest.mark.parametrize(
    "path",
    [
        "/tmp/my study/Lökström ü/results/pretrain/m",
        "it's $HOME `id` *.json",
        "a=~/x",
        "~",
        "tab\there",
    ],
)
def test_a_path_that_needs_quoting_arrives_whole(path):
    assert _through_bash("--model", path, "--out", "results/x") == ["--model", path, "--out", "results/x"]


@pytest.mark.parametrize(
    "path", ["results/finetune/m/t/fold~0/seed~1", "results/pretrain/Lökström", "vocab~wp", "https://x.org/a,b=c@d"]
)
def test_a_plain_path_is_kept_as_it_was(path):
    assert shell_word(path) == path
    assert _through_bash(path) == [path]


def test_a_home_folder_still_expands_as_before():
    assert shell_word("~/models/bert") == "~/models/bert"
    home = os.path.expanduser("~")
    assert _through_bash("~/my models/bért") == [f"{home}/my models/bért"]


def _renamed(section: str, old: str, new: str) -> dict:
    cfg = demo_config()
    cfg[section] = {new if k == old else k: v for k, v in cfg[section].items()}
    return cfg


def test_a_name_with_non_ascii_letters_is_a_plain_path():
    study = load_config(_renamed("models", "demo-baseline", "démo-basislinie"), SCHEMA)
    assert "démo-basislinie" in study.models


@pytest.mark.parametrize(
    "section, old, new",
    [("models", "demo-baseline", "no training"), ("tasks", "demo-ner", "demo$ner"), ("corpora", "general", "~general")],
)
def test_a_name_a_command_line_would_split_or_expand_is_refused(section, old, new):
    with pytest.raises(PipelineError, match=rf"^{section}\.{re.escape(new)}: .* would need quoting"):
        load_config(_renamed(section, old, new), SCHEMA)


def test_a_source_file_name_with_a_space_is_refused():
    cfg = demo_config()
    cfg["corpora"]["general"]["source"]["files"] = ["general text.txt"]
    with pytest.raises(PipelineError, match=r"^corpora\.general\.source\.files\.general text\.txt: "):
        load_config(cfg, SCHEMA)

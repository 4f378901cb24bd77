"""What ``make install`` leaves behind: the installed packages are byte-compiled (in parallel after
pip, since pip compiles one file at a time), so that where PYTHONDONTWRITEBYTECODE is set, as in
many container images, no process compiles them again on import."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import sysconfig
from pathlib import Path

import pytest

SITE = Path(sysconfig.get_paths()["purelib"]).resolve()


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="not in a virtual environment made by make install")
@pytest.mark.skipif(not sys.dont_write_bytecode, reason="imports write the bytecode they miss here")
def test_every_installed_module_a_run_imports_is_read_from_bytecode():
    for name in ("torch", "transformers.models.bert.modeling_bert", "snakemake.api", "pandas", "tokenizers"):
        importlib.import_module(name)
    installed = [
        m
        for m in list(sys.modules.values())
        if getattr(m, "__file__", None) and m.__file__.endswith(".py") and SITE in Path(m.__file__).resolve().parents
    ]
    uncompiled = [m.__name__ for m in installed if not Path(importlib.util.cache_from_source(m.__file__)).exists()]
    assert len(installed) > 1000
    assert uncompiled == [], f"{len(uncompiled)} installed modules have no bytecode, e.g. {uncompiled[:5]}"

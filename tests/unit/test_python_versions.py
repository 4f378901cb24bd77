"""The CPythons the project admits are the ones every dependency has a wheel for: pyproject.toml's
requires-python, the Makefile's interpreters and ruff's target against the registry check that
benchmarks/wheel_check.py recorded (rerun it by hand after changing a pin or the range)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from packaging import tags
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "benchmarks" / "results" / "wheels.json"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _admitted() -> list[str]:
    spec = SpecifierSet(_pyproject()["project"]["requires-python"])
    return [f"3.{minor}" for minor in range(40) if spec.contains(f"3.{minor}.0")]


def _record() -> dict:
    return json.loads(RECORD.read_text())["pythons"]


def _pins() -> dict[str, str]:
    project = _pyproject()["project"]
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    pins = dict(line.split("==") for line in lines)
    return {canonicalize_name(name): version for name, version in pins.items()}


def test_requires_python_admits_exactly_the_versions_whose_wheels_all_exist():
    passing = [python for python, entry in _record().items() if entry["passes"]]
    assert _admitted() == passing, f"pyproject.toml admits {_admitted()}; {RECORD.name} passes {passing}"


def test_the_record_checked_every_pin_at_its_pinned_version():
    for python, entry in _record().items():
        checked = {name: package["version"] for name, package in entry["packages"].items()}
        for name, version in _pins().items():
            assert checked.get(name) == version, f"{RECORD.name} checked {name} {checked.get(name)} on {python}"


def _installable(python: str) -> set[tags.Tag]:
    """Every wheel tag CPython X.Y takes on x86-64 Linux with glibc 2.28 (the record's platform)."""
    version = tuple(int(part) for part in python.split("."))
    platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    cpython = tags.cpython_tags(version, platforms=platforms)
    return {*cpython, *tags.compatible_tags(version, "cp" + python.replace(".", ""), platforms)}


def test_each_recorded_wheel_installs_on_its_python():
    for python, entry in _record().items():
        takes = _installable(python)
        for name, package in entry["packages"].items():
            if package["wheel"]:
                assert parse_wheel_filename(package["wheel"])[3] & takes, (python, name, package["wheel"])
            else:
                assert package.get("sdist") == "pure Python" or not package["ok"], (python, name)


def test_make_looks_for_the_admitted_interpreters_and_ruff_targets_the_lowest():
    makefile = (ROOT / "Makefile").read_text()
    looked_for = re.search(r"^PYTHONS := (.*)$", makefile, re.MULTILINE).group(1).split()
    assert looked_for == [f"python{version}" for version in _admitted()]
    assert _pyproject()["tool"]["ruff"]["target-version"] == "py" + _admitted()[0].replace(".", "")

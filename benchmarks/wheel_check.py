"""Which CPython versions every dependency of the workflow installs on, from the package registry.

For each candidate CPython (3.11 to 3.15) it asks pip which file it would install of every
distribution the project's requirements pull in (runtime and ``dev``, at the versions installed in
the running venv; torch at its PyPI release, not this machine's local CPU build), on x86-64 Linux
with glibc 2.28 or newer (manylinux_2_28: RHEL 8, Debian 10, Ubuntu 20.04 and later):
``pip install --dry-run --no-deps --only-binary=:all: --python-version X.Y --platform ...``
names the wheel, or fails where there is none. A distribution with no wheel passes only where its
install here holds no compiled file and the registry lists the version for that Python (sdist of
pure Python). The CUDA build's own requirements (PyPI's torch for Linux) are checked the same way
and recorded apart: a CPU install of torch does not need them.

Needs the registry, so it is run by hand, not by the test suite:
    python benchmarks/wheel_check.py > benchmarks/results/wheels.json
tests/unit/test_python_versions.py holds pyproject.toml's requires-python (and the Makefile's
interpreters) to the versions this records as passing.
"""

from __future__ import annotations

import datetime
import importlib.metadata as md
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

CANDIDATES = ("3.11", "3.12", "3.13", "3.14", "3.15")
PLATFORM = "manylinux_2_28_x86_64"
# pip takes a wheel only for a platform tag named on its command line: every manylinux tag that glibc 2.28 runs
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)]
PLATFORMS += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
PROJECT = "biomed-lm-workflow"
EXTRAS = ("dev",)
# the public registry only: no local wheel folder, extra index or constraint from pip's configuration
PIP = (sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", "--no-input")
# no file for this Python, or only files whose Requires-Python excludes it
MISSING = re.compile(r"(?:No matching distribution found for|Cannot install) ([A-Za-z0-9_.\-]+==[^\s,]+)")


def _linux(python: str, extra: str = "") -> dict[str, str]:
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "platform_system": "Linux",
        "sys_platform": "linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": extra,
    }


def _applies(req: Requirement, env: dict[str, str]) -> bool:
    return req.marker is None or req.marker.evaluate(env)


def closure() -> dict[str, str]:
    """Every distribution the project's requirements (and its extras) pull in, at its installed
    version, by walking the installed metadata; the project itself left out."""
    env = _linux(f"{sys.version_info.major}.{sys.version_info.minor}")
    found: dict[str, str] = {}
    todo = [Requirement(f"{PROJECT}[{','.join(EXTRAS)}]")]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in found:
            continue
        dist = md.distribution(req.name)
        found[name] = dist.version
        for extra in ("", *req.extras):
            for line in dist.requires or []:
                sub = Requirement(line)
                if (sub.marker is None and extra == "") or (
                    sub.marker and Marker(str(sub.marker)).evaluate({**env, "extra": extra})
                ):
                    todo.append(sub)
    found.pop(canonicalize_name(PROJECT))
    return {name: version.split("+")[0] for name, version in sorted(found.items())}


def compiled(name: str) -> bool:
    """Whether the installed distribution holds a compiled file (an extension module or a shared library)."""
    files = md.distribution(name).files or []
    return any(f.suffix in (".so", ".pyd") or ".so." in f.name for f in files)


def _pip(python: str, args: Iterable[str], report: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [*PIP, "install", "--dry-run", "--ignore-installed", "--no-deps", "--only-binary=:all:", "--quiet"]
    cmd += ["--python-version", python, "--implementation", "cp"]
    cmd += [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    if report:
        cmd += ["--report", str(report)]
    with tempfile.TemporaryDirectory() as target:
        return subprocess.run([*cmd, "--target", target, *args], capture_output=True, text=True)


def wheels(python: str, pins: dict[str, str]) -> tuple[dict[str, str], dict]:
    """The wheel file pip picks for each pin on this Python (None where it finds none) and the
    metadata of each, from one dry run per pass: a pin with no wheel is named in pip's error and
    left out of the next pass."""
    left, picked, metadata = dict(pins), {}, {}
    while left:
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            done = _pip(python, [spec for spec in left.values()], report)
            if done.returncode == 0:
                for item in json.loads(report.read_text())["install"]:
                    name = canonicalize_name(item["metadata"]["name"])
                    picked[name] = item["download_info"]["url"].rsplit("/", 1)[-1]
                    metadata[name] = item["metadata"]
                return picked, metadata
        missing = MISSING.search(done.stderr)
        if not missing:
            raise RuntimeError(f"pip failed on Python {python} without naming a distribution:\n{done.stderr}")
        name = canonicalize_name(Requirement(missing.group(1)).name)
        if name not in left:
            raise RuntimeError(f"pip named {missing.group(1)}, which was not asked for:\n{done.stderr}")
        picked[name] = None
        del left[name]
    return picked, metadata


def listed(python: str, name: str, version: str) -> bool:
    """Whether the registry lists this version of a distribution for this Python (its requires-python)."""
    cmd = [*PIP, "index", "versions", name]
    done = subprocess.run([*cmd, "--python-version", python], capture_output=True, text=True)
    return done.returncode == 0 and version in re.split(r"[\s,:]+", done.stdout)


def check_version(python: str, versions: dict[str, str]) -> dict[str, dict]:
    """One Python: every distribution's wheel, or how it installs without one."""
    picked, _ = wheels(python, {name: f"{name}=={version}" for name, version in versions.items()})
    result = {}
    for name, version in versions.items():
        wheel = picked.get(name)
        if wheel:
            result[name] = {"version": version, "wheel": wheel, "ok": True}
        elif not compiled(name) and listed(python, name, version):
            result[name] = {"version": version, "wheel": None, "sdist": "pure Python", "ok": True}
        else:
            result[name] = {"version": version, "wheel": None, "ok": False}
    return result


def torch_cuda(python: str, torch_version: str) -> dict[str, dict]:
    """PyPI's torch for Linux is a CUDA build: its own pinned requirements on this Python."""
    _, metadata = wheels(python, {"torch": f"torch=={torch_version}"})
    if "torch" not in metadata:
        return {}
    env = _linux(python)
    reqs = [Requirement(line) for line in metadata["torch"].get("requires_dist", [])]
    pins = {
        canonicalize_name(r.name): f"{r.name}{r.specifier}"
        for r in reqs
        if _applies(r, env) and r.marker is not None and "platform_system" in str(r.marker)
    }
    picked, _ = wheels(python, pins)
    return {name: {"requirement": pins[name], "wheel": picked.get(name), "ok": bool(picked.get(name))} for name in pins}


def main() -> None:
    versions = closure()
    out = {
        "date": datetime.date.today().isoformat(),
        "command": "python benchmarks/wheel_check.py",
        "platform": PLATFORM,
        "platform_tags": PLATFORMS,
        "pip": md.version("pip"),
        "distributions": len(versions),
        "pythons": {},
    }
    for python in CANDIDATES:
        packages = check_version(python, versions)
        out["pythons"][python] = {
            "passes": all(entry["ok"] for entry in packages.values()),
            "failing": sorted(name for name, entry in packages.items() if not entry["ok"]),
            "packages": packages,
            "torch_cuda_requirements": torch_cuda(python, versions["torch"]),
        }
        print(f"Python {python}: {'passes' if out['pythons'][python]['passes'] else 'fails'}", file=sys.stderr)
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    print()


if __name__ == "__main__":
    main()

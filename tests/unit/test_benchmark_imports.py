"""Every name a benchmark imports from the package still exists: a rename inside workflow_scripts breaks no
benchmark unseen. Imports are read with ``ast`` at any depth, the lazy ones inside functions included."""

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "workflow_scripts"


def package_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of each import from the package in ``path``; name None for ``import module``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == PACKAGE:
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] == PACKAGE]
    return found


def missing(module: str, name: str | None) -> str | None:
    """Why the import fails, or None where it works."""
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        return str(exc)
    if name is None or hasattr(loaded, name):
        return None
    try:
        importlib.import_module(f"{module}.{name}")  # a submodule
    except ModuleNotFoundError:
        return f"{module} has no {name}"
    return None


def test_every_name_the_benchmarks_import_from_the_package_exists():
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    broken = [
        f"{path.relative_to(ROOT)}:{line}: {why}"
        for path in scripts
        for line, module, name in package_imports(path)
        if (why := missing(module, name))
    ]
    assert len(scripts) > 10 and not broken, "\n".join(broken)


def test_a_removed_name_imported_inside_a_function_is_found_with_its_line(tmp_path):
    script = tmp_path / "bench_old.py"
    lazy = "    from workflow_scripts.pretrain.batches import BatchBuilder, phase_of\n"
    script.write_text(f"def reference():\n{lazy}    return phase_of\n")
    found = package_imports(script)
    assert found == [
        (2, "workflow_scripts.pretrain.batches", "BatchBuilder"),
        (2, "workflow_scripts.pretrain.batches", "phase_of"),
    ]
    assert [missing(module, name) for _, module, name in found] == [
        None,
        "workflow_scripts.pretrain.batches has no phase_of",
    ]

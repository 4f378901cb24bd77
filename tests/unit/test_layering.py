"""The code layout a newcomer can walk: packages import one way, config/ composes the stages, each rule runs the
module of its own name, and modules and functions stay small.

Imports are read with ``ast`` (absolute and relative, at any depth, lazy ones inside functions included), so a
cycle hidden in a function body is found as well.
"""

import ast
import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "workflow_scripts"
COMPOSER = "config"
MAX_LINES = 400
MAX_FUNCTION_LINES = 80

# Rules that run another rule's step on other inputs, rather than a step of their own.
SHARED_STEPS = {
    "download_corpus_file": "download.fetch",  # one downloader for every file and folder
    "download_task_file": "download.fetch",
    "download_task_folder": "download.fetch",
    "tables_of_task": "report.tables",  # the study's tables over one task's runs
}


def node_of(module: str, package_dir: Path) -> str:
    """A subpackage's name for its modules; a module at the package root (or a name in it) is its own node."""
    parts = module.split(".")
    if len(parts) > 1 and (package_dir / parts[1]).is_dir():
        return parts[1]
    return ".".join(parts[:2])


def imported_modules(path: Path, module: str, is_package: bool) -> set[str]:
    """Every module of ours that ``path`` imports, relative imports resolved against ``module``."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == PACKAGE}


def import_graph(package_dir: Path) -> dict[str, dict[str, set[str]]]:
    """node -> {imported node: the importing modules}, over every module under ``package_dir``."""
    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        source = node_of(module, package_dir)
        edges = graph.setdefault(source, {})
        for target in imported_modules(path, module, is_package):
            if target != PACKAGE and (node := node_of(target, package_dir)) != source:
                edges.setdefault(node, set()).add(module)
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(graph: dict[str, dict[str, set[str]]], component: list[str]) -> str:
    return "; ".join(
        f"{a} -> {b} ({', '.join(sorted(graph[a][b]))})" for a in component for b in graph[a] if b in component
    )


def rule_modules(rules_dir: Path) -> dict[str, tuple[str, str]]:
    """rule -> (its .smk file's stage, the module its shell command runs with ``-m``)."""
    found = {}
    for smk in sorted(rules_dir.glob("*.smk")):
        for block in re.split(r"^(?=rule \w+:)", smk.read_text(), flags=re.M)[1:]:
            first, *rest = block.splitlines()
            body = "\n".join(itertools.takewhile(lambda line: not line or line[0].isspace(), rest))
            name = re.match(r"rule (\w+):", first).group(1)
            module = re.search(rf"-m {PACKAGE}\.(?:preload {PACKAGE}\.)?([\w.]+)", body)
            if module:
                found[name] = (smk.stem, module.group(1))
    return found


def test_packages_import_each_other_without_cycles():
    graph = import_graph(ROOT / PACKAGE)
    found = cycles(graph)
    assert not found, "package cycles: " + " | ".join(describe(graph, c) for c in found)


def test_no_stage_imports_the_study_composer():
    graph = import_graph(ROOT / PACKAGE)
    importers = {node: graph[node][COMPOSER] for node in graph if node != COMPOSER and COMPOSER in graph[node]}
    assert not importers, f"{COMPOSER}/ composes the stages and is imported by none of them: {importers}"


def test_root_modules_import_no_package():
    package_dir = ROOT / PACKAGE
    graph = import_graph(package_dir)
    wrong = {
        node: sorted(target for target in targets if (package_dir / target).is_dir())
        for node, targets in graph.items()
        if not (package_dir / node).is_dir()
    }
    assert not {node: targets for node, targets in wrong.items() if targets}


def test_a_cycle_through_a_lazy_relative_import_is_found(tmp_path):
    package_dir = tmp_path / PACKAGE
    for name, text in {
        "__init__.py": "",
        "errors.py": "",
        "pack/__init__.py": "",
        "pack/shard.py": "from ..errors import x\n\ndef load():\n    from ..pretrain.model import m\n",
        "pretrain/__init__.py": "",
        "pretrain/model.py": "import workflow_scripts.pack.shard\n",
        "config/__init__.py": "",
        "config/plan.py": "from ..pretrain import model\n",
    }.items():
        (package_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (package_dir / name).write_text(text)
    graph = import_graph(package_dir)
    assert cycles(graph) == [["pack", "pretrain"]]
    assert describe(graph, ["pack", "pretrain"]) == (
        "pack -> pretrain (workflow_scripts.pack.shard); pretrain -> pack (workflow_scripts.pretrain.model)"
    )
    assert graph[f"{PACKAGE}.errors"] == {} and f"{PACKAGE}.errors" in graph["pack"]


def test_each_rule_runs_the_module_of_its_own_name():
    found = rule_modules(ROOT / "rules")
    assert set(SHARED_STEPS) <= set(found), "a shared-step rule was renamed or removed: update SHARED_STEPS"
    wrong = {
        rule: module for rule, (stage, module) in found.items() if module != SHARED_STEPS.get(rule, f"{stage}.{rule}")
    }
    assert not wrong, f"rules/<stage>.smk rule R runs python -m {PACKAGE}.<stage>.R: {wrong}"
    for module in {module for _, module in found.values()}:
        assert (ROOT / PACKAGE / (module.replace(".", "/") + ".py")).is_file(), module


def test_modules_stay_small():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / PACKAGE).rglob("*.py")}
    large = {path: lines for path, lines in sizes.items() if lines > MAX_LINES}
    assert not large, f"modules over {MAX_LINES} lines (split each by what its parts do): {large}"


def test_functions_stay_short():
    long = {}
    for path in (ROOT / PACKAGE).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (make each a recipe of named steps): {long}"

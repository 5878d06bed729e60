"""The invariants ARCHITECTURE.md states, checked on the code itself.

Every check is a function of a package folder, so that the tests at the bottom can plant a
violation in a throw-away copy and show that the check catches it and says what to move where.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "fusion_switch"
PROTOCOL_MODULES = ("pygls", "lsprotocol", "cattrs")
ROOT = "<root>"  # fusion_switch/__init__.py, __main__.py

# Which package may import which (DESIGN.md section 3). Anything not listed is a layering error.
ALLOWED: dict[str, set[str]] = {
    "catalogue": set(),
    "cfg": {"catalogue"},
    "readers": set(),
    "compare": {"readers"},
    "diagnose": {ROOT, "catalogue", "readers", "compare"},
    "synth": {"catalogue", "readers"},
    "workflow": {"catalogue", "cfg", "readers", "compare", "diagnose"},
    "lsp": {ROOT, "catalogue", "cfg", "readers", "workflow"},
    "cli": {ROOT, "catalogue", "cfg", "readers", "compare", "diagnose", "synth", "workflow", "lsp"},
    ROOT: {"cli"},
}
WHY = {
    "synth": "synth/ is test data; the engine and the diagnosis must not depend on how it is made",
    "lsp": "only the protocol layer may depend on lsp/; call the pure function it wraps instead",
    "cli": "sub-commands are entry points; move the shared code into a pure package",
    "diagnose": "diagnose/ consumes the engine's rows; the engine must not call back into it",
}
PURE_PACKAGES = tuple(p for p in ALLOWED if p not in ("lsp", "cli", ROOT))
MAX_MODULE_LINES = 800
MAX_COMPARE_MODULES = 12


def module_name(package: Path, path: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    return skipped


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, lazily or not (``TYPE_CHECKING`` excluded:
    those imports never run)."""
    modules = {module_name(package, p): p for p in package.rglob("*.py")}
    top = package.name
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skipped = _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.split(".")[0] == top)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    if path.name != "__init__.py":
                        base.pop()
                    base = base[: len(base) - node.level + 1]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                if origin.split(".")[0] != top:
                    continue
                for alias in node.names:
                    candidate = f"{origin}.{alias.name}"
                    deps.add(candidate if candidate in modules else origin)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def package_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[1] in ("__main__",)):
        return ROOT
    return parts[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def cycle_problems(package: Path) -> list[str]:
    graph = import_graph(package)
    return [
        "import cycle: "
        + " <-> ".join(c)
        + ". Move what both sides need into a small module that both import, or invert the"
        " dependency (pass a function in)."
        for c in cycles(graph)
    ]


def layering_problems(package: Path) -> list[str]:
    problems = []
    for module, deps in sorted(import_graph(package).items()):
        source = package_of(module)
        for dep in sorted(deps):
            target = package_of(dep)
            if target == source or target in ALLOWED.get(source, set()):
                continue
            why = WHY.get(target, f"{source}/ may import only {sorted(ALLOWED.get(source, ()))}")
            problems.append(
                f"{module} imports {dep}: {source}/ must not import {target}/ ({why}). Move the "
                f"code {module} needs from {dep} down into a package {source}/ may import, or "
                f"move {module} up into a package allowed to use {target}/."
            )
    return problems


def size_problems(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            problems.append(
                f"{path.relative_to(package)} has {lines} lines (> {MAX_MODULE_LINES}): split "
                "it by concept, one module each"
            )
    compare = package / "compare"
    if compare.is_dir():
        direct = [p for p in compare.glob("*.py") if p.name != "__init__.py"]
        if len(direct) > MAX_COMPARE_MODULES:
            problems.append(
                f"compare/ has {len(direct)} modules (> {MAX_COMPARE_MODULES}): readers go to "
                "readers/, verdicts to diagnose/, test data to synth/"
            )
    return problems


def protocol_problems(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] not in PURE_PACKAGES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        for name in sorted(names & set(PROTOCOL_MODULES)):
            problems.append(
                f"{path.relative_to(package)} imports {name}: only lsp/ may know the protocol; "
                "return plain dataclasses and convert them in lsp/"
            )
    return problems


# -- the real package ------------------------------------------------------------------------


def test_no_import_cycles():
    assert cycle_problems(PACKAGE) == []


def test_packages_import_only_what_their_layer_allows():
    assert layering_problems(PACKAGE) == []


def test_every_package_has_a_rule():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(ALLOWED), packages - set(ALLOWED)


def test_module_sizes_and_compare_width():
    assert size_problems(PACKAGE) == []


def test_pure_packages_never_import_the_protocol():
    assert protocol_problems(PACKAGE) == []


def test_pure_layers_load_without_pygls_at_run_time():
    code = (
        "import sys, fusion_switch.cfg, fusion_switch.compare.engine, "
        "fusion_switch.diagnose.attribution, fusion_switch.diagnose.summary, "
        "fusion_switch.readers.graph, fusion_switch.workflow.annotate, "
        "fusion_switch.workflow.job\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_engine_never_loads_the_generator_at_run_time():
    code = (
        "import sys, fusion_switch.compare.engine, fusion_switch.compare.workers, "
        "fusion_switch.diagnose.summary\n"
        "print(sorted(m for m in sys.modules if m.startswith('fusion_switch.synth')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the checks catch planted violations -------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "fusion_switch"
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in {p.parent for p in package.rglob("*.py")}:
        (folder / "__init__.py").touch()
    return package


def test_a_planted_cycle_is_caught_and_the_message_says_what_to_do(tmp_path):
    package = _tree(
        tmp_path,
        {
            "readers/graph.py": "from .graph_text import parse\n",
            # a lazy import still closes the cycle at run time
            "readers/graph_text.py": "def parse():\n    from .graph import load\n",
        },
    )
    problems = cycle_problems(package)
    assert problems == [
        "import cycle: fusion_switch.readers.graph <-> fusion_switch.readers.graph_text. Move "
        "what both sides need into a small module that both import, or invert the dependency "
        "(pass a function in)."
    ]


def test_type_checking_imports_do_not_count_as_cycles(tmp_path):
    package = _tree(
        tmp_path,
        {
            "lsp/server.py": "from .state import State\n",
            "lsp/state.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .server import S\n"
            ),
        },
    )
    assert cycle_problems(package) == []


def test_a_planted_engine_to_synth_import_is_caught(tmp_path):
    package = _tree(
        tmp_path,
        {
            "compare/engine.py": "from ..synth.generator import generate_case\n",
            "synth/generator.py": "def generate_case():\n    pass\n",
        },
    )
    problems = layering_problems(package)
    assert len(problems) == 1
    assert problems[0].startswith(
        "fusion_switch.compare.engine imports fusion_switch.synth.generator: compare/ must not "
        "import synth/ (synth/ is test data; the engine and the diagnosis must not depend on how "
        "it is made)."
    )
    assert "Move the code" in problems[0]


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("compare/engine.py", "from ..diagnose import summary\n"),
        ("readers/dump.py", "from ..compare import metrics\n"),
        ("cfg/parse.py", "import fusion_switch.lsp.server\n"),
    ],
)
def test_other_planted_layering_errors_are_caught(tmp_path, source, text):
    package = _tree(tmp_path, {source: text})
    for target in ("diagnose/summary.py", "compare/metrics.py", "lsp/server.py"):
        (package / target).parent.mkdir(parents=True, exist_ok=True)
        (package / target).touch()
        (package / target).parent.joinpath("__init__.py").touch()
    assert len(layering_problems(package)) == 1


def test_planted_protocol_import_and_oversized_module_are_caught(tmp_path):
    package = _tree(
        tmp_path,
        {
            "cfg/hover.py": "from lsprotocol import types\n",
            "readers/big.py": "x = 1\n" * (MAX_MODULE_LINES + 1),
            **{f"compare/m{i}.py": "" for i in range(MAX_COMPARE_MODULES + 1)},
        },
    )
    assert protocol_problems(package) == [
        "cfg/hover.py imports lsprotocol: only lsp/ may know the protocol; return plain "
        "dataclasses and convert them in lsp/"
    ]
    sizes = size_problems(package)
    assert sizes[0].startswith("readers/big.py has 801 lines")
    assert sizes[1].startswith("compare/ has 13 modules")

"""``compare/metrics/`` is used through its public names only.

Before the split, ``workers.py`` called ``metrics._kernel``, ``metrics._chosen`` and
``metrics._kernel_messages``; the kernel's entry points are now public (``native``), and these
tests keep code outside the package from reaching past them again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import fusion_switch
from fusion_switch.compare import metrics

PACKAGE = Path(fusion_switch.__file__).parent
METRICS = PACKAGE / "compare" / "metrics"


def private_uses(source: str) -> list[str]:
    """Private names of the metrics package that ``source`` imports or reads as attributes."""
    tree = ast.parse(source)
    found = []
    aliases = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = "." * node.level + (node.module or "")
        if "metrics" in module.split("."):  # from .metrics(.native) import name, ...
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"from {module} import {alias.name}")
                aliases.add(alias.asname or alias.name)
        else:  # from . import metrics, from fusion_switch.compare import metrics
            aliases.update(a.asname or a.name for a in node.names if a.name == "metrics")
    aliases.add("metrics")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_a_planted_private_use_is_caught():
    planted = (
        "from . import metrics\n"
        "from .metrics.native import _kernel\n"
        "values = metrics._chosen(names)\n"
        "from .metrics import native\n"
        "native._kernel_messages(0, False, '', '')\n"
    )
    assert private_uses(planted) == [
        "from .metrics.native import _kernel",
        "metrics._chosen",
        "native._kernel_messages",
    ]
    assert private_uses("from .metrics import cells_from_bytes\nmetrics.kernel_in_use()\n") == []


def test_no_module_outside_the_package_uses_its_private_names():
    outside = [p for p in PACKAGE.rglob("*.py") if METRICS not in p.parents]
    problems = {
        str(path.relative_to(PACKAGE)): uses
        for path in outside
        if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert problems == {}


def test_the_public_names_stay_importable_from_the_package():
    # what other packages, the CLI, the tests and the benchmarks import from compare.metrics
    for name in (
        "ALGORITHMS",
        "NAN_TEXT",
        "AlgorithmSelectionError",
        "MetricCells",
        "MetricResult",
        "SizeMismatchError",
        "cells_from_bytes",
        "compute_metrics",
        "format_value",
        "kernel_in_use",
        "metric_cells",
        "parse_algorithms",
        "NUMPY_ONLY_VARIABLE",
        "SCRATCH",
    ):
        assert hasattr(metrics, name), name
    assert sorted(metrics.__all__) == sorted(set(metrics.__all__))

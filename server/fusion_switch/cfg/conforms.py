"""Whether a compacted instance (see structure.py) is valid against the generated schema,
answered without python-jsonschema.

Importing jsonschema and building its validator is the largest part of the server's first
check, yet almost every file the user opens is valid. This yes/no check follows the schema
that `schema.build_schema` writes, keyword by keyword as jsonschema reads them (`type` by
isinstance, `enum` by ==, `pattern` by re.search); only when it says no does structure.py ask
jsonschema for the errors, so every message still comes from jsonschema. A test compares the
two answers on generated instances.
"""

from __future__ import annotations

import re

from ..catalogue import SECTIONS
from .schema import PRIORITY_PATTERNS, SWITCH_VALUES

_STAGE_PATTERNS = {stage: re.compile(pattern) for stage, pattern in PRIORITY_PATTERNS.items()}
_SWITCH_VALUES = tuple(SWITCH_VALUES)


def conforms(instance: object) -> bool:
    """True exactly when jsonschema would find no error in `instance`."""
    if not isinstance(instance, dict):
        return False
    for key, value in instance.items():
        if key == "Switch":
            ok = _sections(value, _switches)
        elif key == "Priority":
            ok = _sections(value, _stages)
        elif key == "ExceptionalPassOfO1Level":
            ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        else:
            return False
        if not ok:
            return False
    return True


def _sections(value: object, check) -> bool:
    if not isinstance(value, dict):
        return False
    return all(key in SECTIONS and check(section) for key, section in value.items())


def _switches(section: object) -> bool:
    if not isinstance(section, dict):
        return False
    return all(v in _SWITCH_VALUES and isinstance(v, str) for v in section.values())


def _stages(section: object) -> bool:
    if not isinstance(section, dict):
        return False
    for stage, priorities in section.items():
        pattern = _STAGE_PATTERNS.get(stage)
        if pattern is None or not isinstance(priorities, dict):
            return False
        for priority in priorities.values():
            if not isinstance(priority, str) or pattern.search(priority) is None:
                return False
    return True

"""The generated schema: up to date, flat, and right when used by python-jsonschema directly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from cfg_helpers import FORBIDDEN, GRAPH, UB
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.cfg.schema import SCHEMA_FILE, build_schema, schema_text

ROOT = Path(__file__).resolve().parents[2]


def test_schema_file_is_what_the_script_generates():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "schemas/fusion_switch.schema.json is stale: run scripts/generate_schema.py"
    )


def test_script_check_mode(tmp_path):
    out = tmp_path / "schema.json"
    script = ROOT / "scripts" / "generate_schema.py"
    run = [sys.executable, str(script), "--output", str(out)]
    assert subprocess.run([*run, "--check"], capture_output=True).returncode == 1
    assert subprocess.run(run, capture_output=True).returncode == 0
    assert subprocess.run([*run, "--check"], capture_output=True).returncode == 0
    assert out.read_text(encoding="utf-8") == schema_text()


def _keywords(node, found=None):
    found = set() if found is None else found
    if isinstance(node, dict):
        found.update(node)
        for value in node.values():
            _keywords(value, found)
    elif isinstance(node, list):
        for value in node:
            _keywords(value, found)
    return found


def test_schema_is_flat_and_documents_every_rule():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert not {"oneOf", "anyOf", "allOf", "$ref"} & _keywords(schema)
    cat = builtin_catalogue()
    for section in ("GraphFusion", "UBFusion"):
        props = schema["properties"]["Switch"]["properties"][section]["properties"]
        assert set(props) == {"ALL", *cat.names(section)}
        for prop in props.values():
            assert prop["enum"] == ["on", "off"]
            assert prop["description"] and prop["markdownDescription"]
            assert len(prop["markdownEnumDescriptions"]) == 2
    forbidden = schema["properties"]["Switch"]["properties"]["GraphFusion"]["properties"][FORBIDDEN]
    assert "no effect" in forbidden["markdownEnumDescriptions"][1]


GOOD = [
    {"Switch": {"GraphFusion": {"ALL": "off", GRAPH: "on"}, "UBFusion": {UB: "off"}}},
    {"Switch": {"GraphFusion": {"SomeUnknownRule": "off"}}},  # unknown names: our warning
    {
        "Switch": {},
        "Priority": {
            "GraphFusion": {"Top": {GRAPH: "10"}, "Main": {UB: "1500"}, "Down": {FORBIDDEN: "2999"}}
        },
    },
    {"ExceptionalPassOfO1Level": [GRAPH]},
    {},
]
BAD = [
    [],
    {"switch": {}},
    {"Switch": {"GraphFusions": {}}},
    {"Switch": {"GraphFusion": []}},
    {"Switch": {"GraphFusion": {GRAPH: "On"}}},
    {"Switch": {"GraphFusion": {"Unknown": 1}}},
    {"Switch": {"UBFusion": {"ALL": " off"}}},
    {"Priority": {"GraphFusion": {"Middle": {}}}},
    {"Priority": {"GraphFusion": {"Top": {GRAPH: "1000"}}}},
    {"Priority": {"GraphFusion": {"Main": {GRAPH: 1500}}}},
    {"ExceptionalPassOfO1Level": "x"},
]


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("instance", GOOD)
def test_schema_accepts(validator, instance):
    validator.validate(instance)


@pytest.mark.parametrize("instance", BAD)
def test_schema_rejects(validator, instance):
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(instance)


def test_build_schema_matches_the_file():
    assert build_schema(builtin_catalogue()) == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))

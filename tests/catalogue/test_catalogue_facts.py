"""Catalogue facts the cfg layer relies on: targets, extra files, merging, suggestions."""

from __future__ import annotations

import json

import pytest
from fusion_switch.catalogue import (
    builtin_catalogue,
    load_catalogue,
    load_extra_file,
    resolve_target,
)


@pytest.mark.parametrize(
    ("given", "target_id", "ub"),
    [
        ("Ascend950PR_9599", "atlas-350", False),
        ("Ascend950DT_9591", "atlas-350", False),
        ("Atlas 350", "atlas-350", False),
        ("atlas350", "atlas-350", False),
        ("Ascend910B1", "atlas-a2", True),
        ("Ascend910_9391", "atlas-a3", True),
        ("Ascend310P3", "atlas-inference", True),
        ("nonsense", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_resolve_target(given, target_id, ub):
    target = resolve_target(given)
    assert (target.id if target else None) == target_id
    if target:
        assert target.ub_fusion is ub


def test_builtin_catalogue_facts():
    cat = builtin_catalogue()
    assert len(cat) == 674
    assert cat.get("AABiasaddConvFusion").cannot_switch_off
    assert cat.get("LayerNormGradV3FusionPass").default == "on"
    assert cat.get("SoftmaxSmallOpFusionPass").default == "off"
    assert cat.section_of("TbeEltwiseFusionPass") == ["UBFusion"]


def test_suggest_puts_the_case_difference_first():
    cat = builtin_catalogue()
    assert cat.suggest("convbatchnormfusionpass")[0] == "ConvBatchnormFusionPass"
    assert cat.suggest("ConvBatchnormFusionPas", "GraphFusion")[0] == "ConvBatchnormFusionPass"
    assert cat.suggest("Zzzz") == []


def test_extra_files(tmp_path):
    ours = tmp_path / "ours.json"
    ours.write_text(
        json.dumps(
            {
                "rules": [
                    {"name": "MyFusionPass", "section": "GraphFusion", "description": "mine"},
                    {
                        "name": "ConvBatchnormFusionPass",
                        "section": "GraphFusion",
                        "cannot_switch_off": True,
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    cann = tmp_path / "fusion_config.json"
    cann.write_text(
        json.dumps(
            {
                "Switch": {"UBFusion": {"MyUbPass": "off", "ALL": "on"}},
                "ExceptionalPassOfO1Level": ["MyO1Pass"],
            }
        ),
        encoding="utf-8",
    )
    cat, errors = load_catalogue([str(ours), str(cann)])
    assert errors == []
    assert cat.get("MyFusionPass").description == "mine"
    merged = cat.get("ConvBatchnormFusionPass")
    assert merged.cannot_switch_off and merged.description  # built-in facts kept
    assert cat.get("MyUbPass", "UBFusion").default == "off"
    assert cat.get("ALL") is None
    assert cat.get("MyO1Pass").o1_exceptional


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (None, "file not found"),
        ('{"rules": [}', "line 1, column 12"),
        ('{"rules": [{"name": "X", "section": "Elsewhere"}]}', "not a fusion-switch catalogue"),
        # a review: these raised (RecursionError, TypeError) or read "XYZ" as rules X, Y, Z
        ("[" * 100_000 + "]" * 100_000, "nested too deep"),
        ('{"Switch": {}, "ExceptionalPassOfO1Level": 5}', "ExceptionalPassOfO1Level"),
        ('{"Switch": {}, "ExceptionalPassOfO1Level": "XYZ"}', "a list of rule names"),
        ('{"Switch": {"GraphFusion": {"A": "on"}}, "Priority": 3}', "Priority"),
    ],
)
def test_bad_extra_file_is_one_clear_error(tmp_path, content, phrase):
    path = tmp_path / "extra.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    cat, error = load_extra_file(path)
    assert cat is None and str(path) in str(error) and phrase in error.message
    merged, errors = load_catalogue([str(path)])
    assert len(merged) == 674 and len(errors) == 1


def test_the_forbidden_close_mark_follows_the_catalogue_in_force():
    """A review: the server only ever set cannot_switch_off on the results it shows, so a
    rule an extra catalogue had forbidden stayed withheld after the catalogue was removed."""
    from fusion_switch.catalogue import builtin_catalogue
    from fusion_switch.catalogue.rules import mark_unswitchable

    entries = [
        {"rule": "AABiasaddConvFusion", "section": "GraphFusion"},
        {"rule": "ConvBatchnormFusionPass", "section": "GraphFusion", "cannot_switch_off": True},
    ]
    mark_unswitchable(entries, builtin_catalogue())
    assert entries[0].get("cannot_switch_off") is True
    assert "cannot_switch_off" not in entries[1]

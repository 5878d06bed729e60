"""Settings: every accepted payload shape, bad values reported and ignored."""

from __future__ import annotations

import pytest
from fusion_switch.lsp.settings import SETTINGS, CompareSettings, Settings, parse_settings

BASE = Settings(target="Atlas A2", extra_files=("/a.json",))


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"target": "Atlas 350"}, Settings(target="Atlas 350")),
        ({"fusionSwitch": {"target": " Ascend950PR_9599 "}}, Settings(target="Ascend950PR_9599")),
        ({"fusionSwitch.target": "Atlas 350"}, Settings(target="Atlas 350")),
        (
            {"catalogue": {"extraFiles": ["/x.json", " ", "/y.json"]}},
            Settings(extra_files=("/x.json", "/y.json")),
        ),
        (
            {"fusionSwitch": {"catalogue.extraFiles": ["/x.json"]}},
            Settings(extra_files=("/x.json",)),
        ),
        ({"catalogue": {"extraFiles": "/one.json"}}, Settings(extra_files=("/one.json",))),
        (
            {"compare": {"onDump": "/on", "offGraph": "/g.json"}},
            Settings(compare=CompareSettings(on_dump="/on", off_graph="/g.json")),
        ),
        (
            {"compare": {"memoryBudget": " 4G "}},
            Settings(compare=CompareSettings(memory_budget="4G")),
        ),
        ({"fusionSwitch.compare.memoryBudget": ""}, Settings()),  # no limit
        ({"compare": {"workers": 2}}, Settings(compare=CompareSettings(workers=2))),
        ({"compare": {"workers": " 3 "}}, Settings(compare=CompareSettings(workers=3))),
        ({"fusionSwitch.compare.workers": 0}, Settings()),  # every core
        ({"compare": {"workers": ""}}, Settings()),  # Emacs sends "" for a key left unset
        (
            {"compare": {"rank": 1, "iteration": " 7 "}},
            Settings(compare=CompareSettings(rank="1", iteration="7")),
        ),
        (
            {"fusionSwitch.compare.iteration": "all"},
            Settings(compare=CompareSettings(iteration="all")),
        ),
        ({"compare": {"step": 3}}, Settings(compare=CompareSettings(step="3"))),  # Helix's TOML
        ({"fusionSwitch.compare.step": " step1 "}, Settings(compare=CompareSettings(step="step1"))),
        ({}, Settings()),
        (None, Settings()),
        ("garbage", Settings()),
        ({"other": {"target": "x"}}, Settings()),
    ],
)
def test_shapes(payload, expected: Settings) -> None:
    settings, problems = parse_settings(payload)
    assert settings == expected
    assert problems == []


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"target": 350}, "fusionSwitch.target must be a string"),
        ({"catalogue": {"extraFiles": [1, 2]}}, "fusionSwitch.catalogue.extraFiles must be a list"),
        ({"catalogue": "x"}, "fusionSwitch.catalogue must be an object"),
        ({"compare": {"output": ["x"]}}, "fusionSwitch.compare.output must be a string"),
        (
            {"compare": {"memoryBudget": "lots"}},
            "fusionSwitch.compare.memoryBudget: 'lots' is not a size like 4G or 512M",
        ),
        ({"compare": {"memoryBudget": "1K"}}, "fusionSwitch.compare.memoryBudget: 1K: give"),
        # numbers float() takes that are no size (a review: they raised out of the parser)
        ({"compare": {"memoryBudget": "inf"}}, "fusionSwitch.compare.memoryBudget: 'inf' is not"),
        ({"compare": {"memoryBudget": "nan"}}, "fusionSwitch.compare.memoryBudget: 'nan' is not"),
        ({"compare": {"memoryBudget": "1e400"}}, "fusionSwitch.compare.memoryBudget: '1e400' is"),
        ({"compare": {"workers": -1}}, "fusionSwitch.compare.workers must be 0 (every core) or"),
        ({"compare": {"workers": 1.5}}, "fusionSwitch.compare.workers must be 0 (every core) or"),
        ({"compare": {"workers": True}}, "fusionSwitch.compare.workers must be 0 (every core) or"),
        ({"compare": {"workers": "all"}}, "fusionSwitch.compare.workers must be 0 (every core) or"),
        ({"compare": {"workers": "²"}}, "fusionSwitch.compare.workers must be 0 (every core) or"),
    ],
)
def test_bad_values_keep_the_previous_ones(payload, problem: str) -> None:
    settings, problems = parse_settings(payload, BASE)
    assert settings.target == BASE.target
    assert settings.extra_files == BASE.extra_files
    assert len(problems) == 1 and problems[0].startswith(problem)


def test_absent_keys_keep_base_and_null_target_keeps_it() -> None:
    settings, _ = parse_settings({"fusionSwitch": {"target": None}}, BASE)
    assert settings == BASE
    cleared, _ = parse_settings({"target": ""}, BASE)
    assert cleared.target == "" and cleared.extra_files == BASE.extra_files


def test_settings_table_is_complete_and_well_formed() -> None:
    assert set(SETTINGS) == {
        "fusionSwitch.target",
        "fusionSwitch.catalogue.extraFiles",
        "fusionSwitch.compare.onDump",
        "fusionSwitch.compare.offDump",
        "fusionSwitch.compare.onGraph",
        "fusionSwitch.compare.offGraph",
        "fusionSwitch.compare.output",
        "fusionSwitch.compare.memoryBudget",
        "fusionSwitch.compare.workers",
        "fusionSwitch.compare.rank",
        "fusionSwitch.compare.iteration",
        "fusionSwitch.compare.step",
        "fusionSwitch.trace.server",
    }
    for key, spec in SETTINGS.items():
        assert spec["type"] in {"string", "array", "integer"}, key
        assert spec["description"].endswith("."), key
        assert "default" in spec, key


def test_every_server_setting_is_read() -> None:
    """Each non-client setting in SETTINGS changes the parsed value (nothing listed is dead)."""
    values = {"string": "/some/value", "array": ["/some/file.json"], "integer": 2}
    examples = {"fusionSwitch.compare.memoryBudget": "4G"}  # a size, not a path
    for key, spec in SETTINGS.items():
        if spec.get("client_only"):
            continue
        settings, problems = parse_settings({key: examples.get(key, values[spec["type"]])})
        assert problems == [] and settings != Settings(), key

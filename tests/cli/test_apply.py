"""`fusion-switch apply RESULTS CFG`: only rules the comparison proved (verdict `introduces`)
unless --include-unverified; keeps the user's entries; ends the recipe on the configuration
from before `off --all`; asks unless --yes; restorable byte for byte."""

from __future__ import annotations

import json

from cli_support import GRAPH_RULE, UB_RULE, USER_CFG, fs, user_cfg

PROPAGATING = "AASquareSumMaximumRsqrtMulFusionPass"


def summary_with_verdicts(tmp_path):
    out = tmp_path / "compare-out"
    out.mkdir()
    (out / "summary.json").write_text(
        json.dumps(
            {
                "rules": [
                    {
                        "rule": GRAPH_RULE,
                        "section": "GraphFusion",
                        "verdict": "introduces",
                        "ops": ["fused_1"],
                    },
                    {
                        "rule": UB_RULE,
                        "section": "UBFusion",
                        "verdict": "heuristic",
                        "ops": ["fused_2"],
                    },
                    {
                        "rule": PROPAGATING,
                        "section": "GraphFusion",
                        "verdict": "propagates",
                        "ops": ["fused_3"],
                    },
                ]
            }
        )
    )
    return out


def test_applies_only_proven_rules_by_default(tmp_path):
    cfg = user_cfg(tmp_path)
    results = summary_with_verdicts(tmp_path)
    done = fs("apply", results, cfg, "--yes")
    assert done.returncode == 0, done.stderr
    switch = json.loads(cfg.read_bytes())["Switch"]
    assert switch["GraphFusion"] == {"ZetaRule": "on", "AlphaRule": "off", GRAPH_RULE: "off"}
    assert switch["UBFusion"] == {"ALL": "on"}
    assert "--include-unverified" in done.stderr and UB_RULE in done.stderr
    assert PROPAGATING not in done.stdout + done.stderr  # innocent: never offered
    assert fs("check", cfg).returncode == 0
    assert fs("restore", cfg, "--yes").returncode == 0
    assert cfg.read_bytes() == USER_CFG


def test_include_unverified_labels_them(tmp_path):
    cfg = user_cfg(tmp_path)
    done = fs(
        "apply",
        summary_with_verdicts(tmp_path) / "summary.json",
        cfg,
        "--yes",
        "--include-unverified",
    )
    assert done.returncode == 0, done.stderr
    assert f"{UB_RULE} (UBFusion): unverified: heuristic suspect" in done.stdout
    assert json.loads(cfg.read_bytes())["Switch"]["UBFusion"][UB_RULE] == "off"


def test_heuristic_suspects_are_unverified(tmp_path):
    """Today's summary: `suspects` without a verdict are heuristic, not proven."""
    cfg = user_cfg(tmp_path)
    out = tmp_path / "old"
    out.mkdir()
    (out / "summary.json").write_text(
        json.dumps({"suspects": [{"rule": GRAPH_RULE, "section": "GraphFusion", "ops": ["x"]}]})
    )
    done = fs("apply", out, cfg, "--yes")
    assert done.returncode == 0 and "proves no rule guilty" in done.stdout
    assert cfg.read_bytes() == USER_CFG
    forced = fs("apply", out, cfg, "--yes", "--include-unverified")
    assert forced.returncode == 0 and "heuristic" in forced.stdout


def test_after_all_off_applies_to_the_users_configuration(tmp_path):
    """The recipe: off --all, compare, apply: the user's own file minus the guilty rule."""
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    done = fs("apply", summary_with_verdicts(tmp_path), cfg, "--yes")
    assert done.returncode == 0, done.stderr
    switch = json.loads(cfg.read_bytes())["Switch"]
    assert switch == {
        "UBFusion": {"ALL": "on"},
        "GraphFusion": {"ZetaRule": "on", "AlphaRule": "off", GRAPH_RULE: "off"},
    }
    # the plain restore goes back to the user's own configuration (from before 'off --all');
    # the hint says so and names the version that holds the all-off file
    assert f"'fusion-switch restore {cfg}' brings that configuration back" in done.stdout
    assert f"fusion-switch restore {cfg} --version 2" in done.stdout, done.stdout
    assert fs("restore", cfg, "--yes").returncode == 0
    assert cfg.read_bytes() == USER_CFG


def test_a_recipe_started_without_a_configuration_ends_with_only_the_guilty_rule_off(
    tmp_path,
):
    """A review: `off --all` created the file, and `apply` kept its "ALL": "off" in both
    sections, saying only that it switched the rule off."""
    cfg = tmp_path / "fusion_switch.cfg"
    assert fs("off", cfg, "--all").returncode == 0
    done = fs("apply", summary_with_verdicts(tmp_path), cfg, "--yes")
    assert done.returncode == 0, done.stderr
    switch = json.loads(cfg.read_bytes())["Switch"]
    assert switch == {"GraphFusion": {GRAPH_RULE: "off"}}, switch


def test_asks_first_and_bad_results_are_errors(tmp_path):
    cfg = user_cfg(tmp_path)
    declined = fs("apply", summary_with_verdicts(tmp_path), cfg)
    assert declined.returncode == 1 and cfg.read_bytes() == USER_CFG
    assert GRAPH_RULE in declined.stdout  # listed before asking
    missing = fs("apply", tmp_path / "nowhere", cfg, "--yes")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    (tmp_path / "junk.json").write_text("[1, 2")
    junk = fs("apply", tmp_path / "junk.json", cfg, "--yes")
    assert junk.returncode == 2 and "not valid JSON" in junk.stderr
    assert "Traceback" not in missing.stderr + junk.stderr


def test_a_damaged_history_is_a_clear_error_not_a_traceback(tmp_path):
    """A review: apply raised HistoryError/Untrusted out of the recipe's look at the history
    (off and restore said it cleanly)."""
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    (index,) = (tmp_path / ".fusion-switch").rglob("index.json")
    index.write_text("{not json")
    done = fs("apply", summary_with_verdicts(tmp_path), cfg, "--yes")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "index.json" in done.stderr


def test_a_rule_name_that_would_write_another_line_is_refused(tmp_path):
    """A summary naming "FooFusionPass:on\\nALL" (verdict introduces) made `apply` write
    "FooFusionPass:on" and "ALL:off" into a line-format cfg, and `check` passed it; `off` took
    the same name from the command line (a review)."""
    cfg = tmp_path / "lines.cfg"
    original = b"ConvBatchnormFusionPass:on\nSoftmaxFusionPass:on\n"
    cfg.write_bytes(original)
    out = tmp_path / "out"
    out.mkdir()
    hostile = [
        "FooFusionPass:on\nALL",
        "Foo\rBar",
        "ALL",
        'Foo"Bar',
        "",
    ]
    for name in hostile:
        rule = {"rule": name, "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
        (out / "summary.json").write_text(json.dumps({"rules": [rule]}))
        done = fs("apply", out, cfg, "--yes", "--include-unverified")
        assert cfg.read_bytes() == original, (name, done.stdout, done.stderr)
        assert done.returncode != 0 or not name, (name, done.stdout, done.stderr)
        if name:
            assert "not a rule name" in done.stderr, (name, done.stderr)
    for name in ("GraphFusion:Foo:on\nALL", "UBFusion:ALL", "Foo Bar"):
        done = fs("off", cfg, name)
        assert done.returncode == 2 and "not a rule name" in done.stderr, (name, done.stderr)
        assert cfg.read_bytes() == original
    assert fs("off", cfg, "GraphFusion:My-Custom.Pass_2").returncode == 0  # custom names
    assert b"My-Custom.Pass_2:off" in cfg.read_bytes()


def test_an_all_off_file_edited_since_is_said_to_stay_all_off(tmp_path):
    """The recipe's base is the file 'off --all' wrote, matched byte for byte: one re-indented
    on save was not recognised, and apply added the rule beside "ALL": "off" without a word,
    leaving all fusion off (a review). apply says so, and how to end on the user's own file."""
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    cfg.write_text(cfg.read_text().replace("  ", "\t"))  # an editor's save
    done = fs("apply", summary_with_verdicts(tmp_path), cfg, "--yes")
    assert done.returncode == 0, done.stderr
    assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"][GRAPH_RULE] == "off"
    assert '"ALL": "off"' in done.stderr and "GraphFusion" in done.stderr, done.stderr
    assert "restore" in done.stderr and "--version 1" in done.stderr, done.stderr

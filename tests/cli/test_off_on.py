"""`fusion-switch off` / `on` as subprocesses: byte-exact round trips through `restore`, the
user's layout kept, rules in their catalogue section, refusals with the reason."""

from __future__ import annotations

import json
import os

from cli_support import FORBIDDEN, GRAPH_RULE, UB_RULE, USER_CFG, fs, user_cfg
from fusion_switch.workflow.history import History


def test_all_off_then_restore_is_byte_exact(tmp_path):
    cfg = user_cfg(tmp_path)
    done = fs("off", cfg, "--all")
    assert done.returncode == 0, done.stderr
    switch = json.loads(cfg.read_text())["Switch"]
    assert switch == {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}
    assert fs("check", cfg).returncode == 0
    again = fs("off", cfg, "--all")
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert len(History(cfg).versions()) == 1  # no second version for a no-op
    restored = fs("restore", cfg, "--yes")
    assert restored.returncode == 0, restored.stderr
    assert cfg.read_bytes() == USER_CFG


def test_off_rules_keeps_the_layout_and_uses_the_right_section(tmp_path):
    cfg = user_cfg(tmp_path)
    done = fs("off", cfg, GRAPH_RULE, UB_RULE)
    assert done.returncode == 0, done.stderr
    text = cfg.read_bytes()
    added = [f',\r\n         "{r}": "off"'.encode() for r in (UB_RULE, GRAPH_RULE)]
    assert all(a in text for a in added)
    for a in added:  # nothing but the two new entries differs from the user's bytes
        text = text.replace(a, b"")
    assert text == USER_CFG
    text = cfg.read_bytes()
    data = json.loads(text)["Switch"]
    assert data["GraphFusion"] == {"ZetaRule": "on", "AlphaRule": "off", GRAPH_RULE: "off"}
    assert data["UBFusion"] == {"ALL": "on", UB_RULE: "off"}
    assert list(data) == ["UBFusion", "GraphFusion"]  # key order kept
    assert fs("check", cfg).returncode == 0
    assert fs("on", cfg, GRAPH_RULE).returncode == 0
    assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"][GRAPH_RULE] == "on"
    assert fs("restore", cfg, "--version", "1", "--yes").returncode == 0
    assert cfg.read_bytes() == USER_CFG


def test_rule_cannot_switch_off_is_refused_with_the_reason(tmp_path):
    cfg = user_cfg(tmp_path)
    done = fs("off", cfg, GRAPH_RULE, FORBIDDEN)
    assert done.returncode == 2
    assert "forbidden-close" in done.stderr and FORBIDDEN in done.stderr
    assert cfg.read_bytes() == USER_CFG  # nothing written, not even the valid rule
    assert History(cfg).versions() == []


def test_unknown_rule_is_refused_with_did_you_mean(tmp_path):
    cfg = user_cfg(tmp_path)
    done = fs("off", cfg, GRAPH_RULE.lower())
    assert done.returncode == 2
    assert f"Did you mean {GRAPH_RULE}" in done.stderr
    forced = fs("off", cfg, "GraphFusion:MyCustomPass")
    assert forced.returncode == 0
    assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"]["MyCustomPass"] == "off"


def test_missing_cfg_is_created_and_restore_removes_it(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    assert fs("off", cfg, "--all").returncode == 0
    assert fs("check", cfg).returncode == 0
    assert fs("restore", cfg, "--yes").returncode == 0
    assert not cfg.exists()


def test_symlinked_cfg_is_refused(tmp_path):
    real = user_cfg(tmp_path)
    link = tmp_path / "link.cfg"
    os.symlink(real, link)
    done = fs("off", link, "--all")
    assert done.returncode == 2 and "symbolic link" in done.stderr
    assert real.read_bytes() == USER_CFG and link.is_symlink()


def test_bad_arguments_are_errors_not_tracebacks(tmp_path):
    cfg = user_cfg(tmp_path)
    both = fs("off", "--all", cfg, GRAPH_RULE)
    assert both.returncode == 2 and "either --all or rule names" in both.stderr
    cfg.write_bytes(b'{"Switch": {"GraphFusion": {"A": "on",}}')
    broken = fs("off", cfg, GRAPH_RULE)
    assert broken.returncode == 2 and "syntax errors" in broken.stderr
    assert "Traceback" not in both.stderr + broken.stderr


def test_a_rule_fe_forces_on_at_o1_is_refused_with_the_reason(tmp_path):
    """A review (forty-first round): FE turns on any pass in ExceptionalPassOfO1Level, from
    the user's file or CANN's own fusion config, before it reads the switch
    (fusion_config_parser.cc GetFusionSwitchByOptimizationOption): "off" did nothing while
    `off` said it was switched off."""
    cfg = tmp_path / "fusion_switch.cfg"
    original = (
        '{"Switch": {"GraphFusion": {"ALL": "on"}},\n'
        ' "ExceptionalPassOfO1Level": ["' + GRAPH_RULE + '"]}\n'
    ).encode()
    cfg.write_bytes(original)
    done = fs("off", cfg, GRAPH_RULE)
    assert done.returncode == 2, done.stdout
    assert "ExceptionalPassOfO1Level" in done.stderr and GRAPH_RULE in done.stderr
    assert cfg.read_bytes() == original

    config = tmp_path / "fusion_config.json"  # CANN's own, listing it (given as a catalogue)
    config.write_text(json.dumps({"ExceptionalPassOfO1Level": ["VendorKeptOnPass"]}))
    (tmp_path / "plain").mkdir()
    plain = user_cfg(tmp_path / "plain")
    done = fs("off", plain, "VendorKeptOnPass", "--catalogue", config)
    assert done.returncode == 2, done.stdout
    assert "ExceptionalPassOfO1Level" in done.stderr
    assert plain.read_bytes() == USER_CFG


def test_a_ge_pass_written_into_a_line_format_file_converts_it_to_json(tmp_path):
    """A review (forty-first round): passes GE registers itself (REG_FUSION_PASS) are run by
    its pass executor, which reads the switches of a JSON file only
    (FusionUtils::ParseFusionSwitch; FE alone falls back to the line format): a
    `Name:off` line left such a pass on while `off` said it was switched off. The file is
    converted to JSON (FE reads that too), said so, and restore brings the line format back."""
    cfg = tmp_path / "fusion_switch.cfg"
    original = b"AAMatMulNzToNdFusionPass:off\nALL:on\n"
    cfg.write_bytes(original)
    ge_pass = "AddRmsNormDynamicQuantV2FusionPass"
    done = fs("off", cfg, ge_pass)
    assert done.returncode == 0, done.stderr
    assert "JSON" in done.stdout + done.stderr
    switch = json.loads(cfg.read_text())["Switch"]
    assert switch["GraphFusion"][ge_pass] == "off"
    assert switch["GraphFusion"]["AAMatMulNzToNdFusionPass"] == "off"  # the file's own, kept
    assert fs("restore", cfg, "--yes").returncode == 0
    assert cfg.read_bytes() == original

    fe_only = fs("off", cfg, UB_RULE)  # FE reads the line format: edited in place
    assert fe_only.returncode == 0, fe_only.stderr
    assert cfg.read_bytes().startswith(b"AAMatMulNzToNdFusionPass:off\n")


def test_all_off_names_the_rules_cann_s_own_config_keeps_on(tmp_path):
    """A review (forty-first round): FE merges its built-in configuration after the user's file
    and looks a name up before ALL, so the rules it lists "on" stay on under "ALL": "off";
    `off --all` said "all fusion off" without a word."""
    cfg = user_cfg(tmp_path)
    done = fs("off", cfg, "--all")
    assert done.returncode == 0, done.stderr
    note = done.stdout + done.stderr
    for rule in ("GridSampler3DFusionPass", "LayerNormGradV3FusionPass"):
        assert rule in note, note
    assert f"fusion-switch off {cfg}" in note  # how to switch them off too


def test_a_switch_written_into_a_file_cann_rejects_is_said_to_do_nothing(tmp_path):
    """A review: a file CANN rejects (a comment, "On") was edited and `off` said the rule was
    switched off; CANN still rejects the whole file, so nothing is switched."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text('{"Switch": {"GraphFusion": {"ALL": "On"}}}\n')
    done = fs("off", cfg, GRAPH_RULE)
    assert json.loads(cfg.read_text())["Switch"]["GraphFusion"][GRAPH_RULE] == "off"
    assert "CANN rejects" in done.stderr and "check" in done.stderr, done.stderr

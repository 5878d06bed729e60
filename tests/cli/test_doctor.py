"""`fusion-switch doctor` as a subprocess: every line ok/problem/info with a fix for problems;
finds a CANN install and its fusion_config.json, the target's UB fusion, the cfg's validity and
wiring, dump settings and free disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cli_support import USER_CFG

FUSION_CONFIG = {
    "Switch": {
        "GraphFusion": {"ConvToFullyConnectionFusionPass": "on"},
        "UBFusion": {"TbeConvDequantSigmoidMulAddFusionPass": "off"},
    }
}


def doctor(folder, *args, env=None):
    done = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "doctor", str(folder), "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}, **(env or {})},
    )
    checks = json.loads(done.stdout)
    return done.returncode, {c["topic"]: c for c in checks}


def fake_cann(tmp_path):
    home = tmp_path / "Ascend" / "latest"
    config = home / "opp/built-in/fusion_pass/config/fusion_config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps(FUSION_CONFIG))
    (home / "version.cfg").write_text("Version=8.1.RC1\n")
    return home


def test_a_prepared_folder(tmp_path):
    work = tmp_path / "train"
    work.mkdir()
    (work / "fusion_switch.cfg").write_bytes(USER_CFG)
    (work / "train.py").write_text(
        "config = torchair.CompilerConfig()\n"
        f'config.fusion_config.fusion_switch_file = "{work / "fusion_switch.cfg"}"\n'
        "config.dump_config.enable_dump = True\n"
    )
    (work / "acl.json").write_text(
        json.dumps({"dump": {"dump_path": "/data/dump", "dump_list": []}})
    )
    home = fake_cann(tmp_path)
    code, checks = doctor(work, "--target", "Ascend910B1", env={"ASCEND_TOOLKIT_HOME": str(home)})
    assert checks["python"]["status"] == "ok"
    assert checks["CANN"]["status"] == "ok" and "8.1.RC1" in checks["CANN"]["detail"]
    assert (
        checks["catalogue"]["status"] == "ok"
        and "fusion_config.json" in checks["catalogue"]["detail"]
    )
    assert (
        checks["target"]["status"] == "ok" and "UB fusion both apply" in checks["target"]["detail"]
    )
    assert checks["cfg fusion_switch.cfg"]["status"] == "ok"
    assert checks["wired fusion_switch.cfg"]["status"] == "ok"
    assert "train.py:2 (torchair)" in checks["wired fusion_switch.cfg"]["detail"]
    assert checks["dump"]["status"] == "ok" and "/data/dump" in checks["dump"]["detail"]
    assert "train.py:3" in checks["dump options"]["detail"]
    assert checks["disk"]["status"] in ("ok", "problem") and "GB free" in checks["disk"]["detail"]
    problems = [c for c in checks.values() if c["status"] == "problem"]
    assert code == (1 if problems else 0)
    assert all(c["fix"] for c in problems)


def test_an_unprepared_folder_says_what_to_do(tmp_path):
    work = tmp_path / "train"
    work.mkdir()
    (work / "fusion_switch.cfg").write_text('{"Switch": {"GraphFusion": {"A": "on",}}}')
    code, checks = doctor(work, "--target", "Atlas 350")
    assert code == 1
    assert checks["CANN"]["status"] == "problem" and "set_env.sh" in checks["CANN"]["fix"]
    assert checks["target"]["status"] == "info" and "no UB fusion" in checks["target"]["detail"]
    assert checks["cfg fusion_switch.cfg"]["status"] == "problem"
    assert "trailing-comma" in checks["cfg fusion_switch.cfg"]["detail"]
    assert checks["wired fusion_switch.cfg"]["status"] == "problem"
    assert "fusion-switch wire" in checks["wired fusion_switch.cfg"]["fix"]


def test_an_acl_json_nested_too_deep_is_a_problem_not_a_traceback(tmp_path):
    """A review: RecursionError escaped `doctor` (it caught OSError and ValueError)."""
    (tmp_path / "acl.json").write_text("[" * 100_000 + "]" * 100_000)
    code, checks = doctor(tmp_path)
    assert code == 1
    assert checks["dump"]["status"] == "problem" and "acl.json" in checks["dump"]["detail"]


def test_text_output_and_bad_input(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "doctor", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    first = done.stdout.splitlines()[0].split()
    assert first[0] in ("ok", "problem", "info") and first[1] == "python"
    missing = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "doctor", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_a_cfg_given_with_a_tilde_is_found(tmp_path):
    """A review: "~/x.cfg", quoted so that the shell left it, was "no such file"."""
    (tmp_path / "fusion_switch.cfg").write_bytes(USER_CFG)
    _, checks = doctor(tmp_path, "--cfg", "~/fusion_switch.cfg", env={"HOME": str(tmp_path)})
    assert checks["cfg fusion_switch.cfg"]["status"] == "ok"


def test_a_relative_path_in_a_script_is_flagged(tmp_path):
    """A review: `cd device$i && python ../train.py` reads device$i/fusion_switch.cfg."""
    (tmp_path / "fusion_switch.cfg").write_bytes(USER_CFG)
    (tmp_path / "train.py").write_text(
        'config.fusion_config.fusion_switch_file = "fusion_switch.cfg"\n'
    )
    _, checks = doctor(tmp_path)
    wired = checks["wired fusion_switch.cfg"]
    assert wired["status"] == "info" and "train.py:1 (torchair)" in wired["detail"]
    assert "relative to the job's working directory" in wired["detail"]
    assert "absolute path" in wired["fix"]


# The reviewer's folders: lines that wire nothing, which doctor reported as wired.
UNWIRED = {
    "run.sh": "python train.py --fusion_switch_file={cfg}\n",
    "train.py": 'ms.set_context(mode=ms.GRAPH_MODE, fusion_switch_file="{cfg}")\n',
    "start.sh": "export FUSION_SWITCH_FILE={cfg}\npython train.py\n",
}


def test_lines_that_wire_nothing_are_not_wired(tmp_path):
    for name, text in UNWIRED.items():
        work = tmp_path / name.replace(".", "_")
        work.mkdir()
        cfg = work / "fusion_switch.cfg"
        cfg.write_bytes(USER_CFG)
        (work / name).write_text(text.replace("{cfg}", str(cfg)))
        _, checks = doctor(work)
        wired = checks["wired fusion_switch.cfg"]
        assert wired["status"] == "problem", (name, wired)


def test_an_argument_to_the_users_script_is_not_wiring(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    (tmp_path / "run.sh").write_text(f"python train.py --fusion_switch_file={cfg}\n")
    _, checks = doctor(tmp_path)
    wired = checks["wired fusion_switch.cfg"]
    assert wired["status"] == "problem"
    assert "run.sh:1 passes it to your script (python train.py)" in wired["detail"]
    assert "forwards it" in wired["detail"]


def test_a_torchair_line_is_torchair_only(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    (tmp_path / "train.py").write_text(
        f'config = torchair.CompilerConfig()\nconfig.fusion_config.fusion_switch_file = "{cfg}"\n'
    )
    _, checks = doctor(tmp_path)
    assert checks["wired fusion_switch.cfg"]["detail"] == "train.py:2 (torchair)"


def test_a_tilde_path_in_a_script_is_not_wired_and_says_why(tmp_path):
    (tmp_path / "fusion_switch.cfg").write_bytes(USER_CFG)
    (tmp_path / "r.sh").write_text("atc --model=m.onnx --fusion_switch_file=~/fusion_switch.cfg\n")
    _, checks = doctor(tmp_path, env={"HOME": str(tmp_path)})
    wired = checks["wired fusion_switch.cfg"]
    assert wired["status"] == "problem" and "r.sh:1 (atc): '~' is not expanded" in wired["detail"]


def test_mindspore_wiring_in_pynative_mode_is_a_problem(tmp_path):
    """A review: the reviewer's d5 (PYNATIVE_MODE with ascend_config ge_options) was "wired"."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    (tmp_path / "train.py").write_text(
        "import mindspore as ms\nms.set_context(mode=ms.PYNATIVE_MODE, ascend_config="
        f'{{"ge_options": {{"global": {{"ge.fusionSwitchFile": "{cfg}"}}}}}})\n'
    )
    _, checks = doctor(tmp_path)
    wired = checks["wired fusion_switch.cfg"]
    assert wired["status"] == "problem" and "train.py:2 (mindspore)" in wired["detail"]
    assert "PYNATIVE_MODE" in wired["detail"] and "without GE" in wired["detail"]
    assert "fusion-switch wire mindspore" in wired["fix"]


def test_torchair_wiring_in_reduce_overhead_mode_is_a_problem(tmp_path):
    """The reviewer's d4: "reduce-overhead" mode, where the file may not take effect."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    (tmp_path / "train.py").write_text(
        'config = torchair.CompilerConfig()\nconfig.mode = "reduce-overhead"\n'
        f'config.fusion_config.fusion_switch_file = "{cfg}"\n'
    )
    _, checks = doctor(tmp_path)
    wired = checks["wired fusion_switch.cfg"]
    assert wired["status"] == "problem" and "train.py:3 (torchair)" in wired["detail"]
    assert "reduce-overhead" in wired["detail"] and "TNG_LOG_LEVEL=0" in wired["detail"]


def test_optimization_switch_naming_a_rule_of_the_cfg_is_a_problem(tmp_path):
    """A review: it overrides the cfg for the same rule, and doctor did not say so."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)  # switches ZetaRule and AlphaRule
    wiring = f'config.fusion_config.fusion_switch_file = "{cfg}"\n'
    for override, status in (("OtherRule:off", "info"), ("ZetaRule:off;OtherRule:on", "problem")):
        (tmp_path / "train.py").write_text(
            wiring + f'config.ge_config.optimization_switch = "{override}"\n'
        )
        _, checks = doctor(tmp_path)
        found = checks["optimization_switch"]
        assert found["status"] == status and "train.py:2" in found["detail"], found
        assert "wins over" in found["detail"] and found["fix"]
    assert "ZetaRule" in found["detail"]

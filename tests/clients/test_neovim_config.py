"""client-config/neovim/fusion_switch.lua as a user installs it, in a real headless Neovim.

The user's init file puts the folder on `package.path` and calls `setup()` with a target; the only
test-specific input is FUSION_SWITCH_SERVER_CMD (which the config reads) naming this checkout's
server. Neovim 0.7.2 (Debian) takes the `vim.lsp.start_client` path, newer ones `vim.lsp.start`.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from client_case import (
    CLIENT_CONFIG,
    DRIVERS,
    MATCHING_NAMES,
    OTHER_NAMES,
    TARGET,
    UNKNOWN_RULE_LINE,
    dotted_keys,
    driver_env,
    editor_env,
    make_workspace,
    run_driver,
    server_read_settings,
    vscode_patterns,
)

NVIM = shutil.which("nvim")
FAKE_JOB = Path(__file__).resolve().parents[1] / "cli" / "fake_job.py"
pytestmark = [
    pytest.mark.editor,
    pytest.mark.skipif(NVIM is None, reason="nvim not installed (CI: apt-get install neovim)"),
]

USER_INIT = """\
vim.cmd('filetype plugin indent on')
vim.cmd('syntax on')
package.path = {config_dir} .. '/?.lua;' .. package.path
require('fusion_switch').setup({{
  settings = {{ fusionSwitch = {{ target = {target} }} }},
}})
"""


def lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lua string literal here


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Runs the driver once and returns what Neovim received."""
    tmp_path = tmp_path_factory.mktemp("editor with space")  # {cfg} quoted for the job's shell
    workspace = make_workspace(tmp_path)
    init = tmp_path / "init.lua"
    init.write_text(
        USER_INIT.format(
            config_dir=lua_string(str(CLIENT_CONFIG / "neovim")), target=lua_string(TARGET)
        )
    )
    out = tmp_path / "nvim-out.json"
    fired = {"SoftmaxFusionPass": {"effect_times": "1", "match_times": "1"}}
    fusion_result = tmp_path / "fusion_result.json"
    fusion_result.write_text(json.dumps({"session_and_graph_id_0_0": {"graph_fusion": fired}}))
    job = f"FAKE_GUILTY=SoftmaxFusionPass {shlex.quote(sys.executable)} {FAKE_JOB} {{cfg}}"
    env = driver_env(
        tmp_path,
        workspace,
        out,
        FUSION_SWITCH_TEST_BISECT_JOB=job,
        FUSION_SWITCH_TEST_FUSION_RESULT=str(fusion_result),
    )
    command = [
        NVIM,
        "--headless",
        "--clean",
        "-u",
        str(init),
        "-c",
        f"luafile {DRIVERS / 'neovim_drive.lua'}",
    ]
    data, stderr = run_driver("Neovim", command, workspace, env, out)
    data["stderr"] = stderr
    return data


def test_filetype_and_attach(session: dict) -> None:
    assert session["filetype"] == "fusion_switch"
    assert session["syntax"] == "json"
    assert session["attached"] is True
    assert session["client_name"] == "fusion-switch"


def test_user_commands_are_defined(session: dict) -> None:
    assert sorted(session["user_commands"]) == [
        "FusionSwitchAllOff",
        "FusionSwitchApplySuspects",
        "FusionSwitchBisect",
        "FusionSwitchCancelBisect",
        "FusionSwitchCancelCompare",
        "FusionSwitchCompare",
        "FusionSwitchReloadCatalogue",
        "FusionSwitchRestore",
        "FusionSwitchShowReport",
        "FusionSwitchTarget",
    ]


def test_bisect_takes_the_job_and_finds_the_guilty_rule(session: dict) -> None:
    """A review: :FusionSwitchBisect sent no job, so the server always answered "bisect needs
    `job`"."""
    assert session["bisect_nargs"] == "+"
    assert session["bisect"]["err"] is None, session["bisect"]
    result = session["bisect"]["result"]
    assert [g["rule"] for g in result.get("guilty", [])] == ["SoftmaxFusionPass"], result


def test_cancelling_a_comparison_leaves_a_bisection_running(session: dict) -> None:
    """A review: :FusionSwitchCancelCompare cancelled the first cancellable progress token, a
    running bisection's too."""
    tokens = [s.get("token") for s in session["cancel_compare_sent"]]
    assert "fusionSwitch/bisect/test" not in tokens, session["cancel_compare_sent"]


def test_filetype_patterns_are_the_vscode_ones(session: dict) -> None:
    assert sorted(session["patterns"]) == sorted(vscode_patterns())


def test_unknown_rule_diagnostic_with_did_you_mean(session: dict) -> None:
    assert session["all_codes_arrived"], session["diagnostics"]
    unknown = [d for d in session["diagnostics"] if d["code"] == "unknown-rule"]
    assert len(unknown) == 1, session["diagnostics"]
    (diag,) = unknown
    assert diag["lnum"] == UNKNOWN_RULE_LINE
    assert diag["source"] == "fusion-switch"
    assert "ConvBatchnormFusionPas" in diag["message"]
    assert "did you mean" in diag["message"].lower()
    assert "ConvBatchnormFusionPass" in diag["message"]


def test_target_from_the_settings_reaches_the_server(session: dict) -> None:
    codes = [d["code"] for d in session["diagnostics"]]
    assert "ub-unsupported-on-target" in codes, session["diagnostics"]
    assert session["command"]["err"] is None
    assert session["command"]["result"]["rules"] > 600
    assert session["command"]["result"]["target"]


def test_changing_the_target_revalidates(session: dict) -> None:
    assert session["retargeted"] is True


def test_completion_offers_graph_fusion_rules(session: dict) -> None:
    labels = session["completion"]
    assert "ConvBatchnormFusionPass" in labels, labels[:20]
    assert "TbeConv2DAddMulQuantPass" not in labels  # a UBFusion rule: wrong section


def test_the_config_sends_exactly_the_settings_the_server_reads(session: dict) -> None:
    assert dotted_keys(session["settings"]) == server_read_settings()


LSPCONFIG_INIT = """\
if vim.fn.has('nvim-0.8') == 0 then
  vim.g.do_filetype_lua = 1 -- Neovim 0.7: vim.filetype.add needs the Lua detection
end
vim.cmd('filetype plugin indent on')
vim.cmd('syntax on')
"""


@pytest.fixture(scope="module")
def lspconfig_session(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """lspconfig.lua and lsp/fusion_switch.lua loaded against stand-ins for nvim-lspconfig."""
    tmp_path = tmp_path_factory.mktemp("editor")
    workspace = make_workspace(tmp_path)
    init = tmp_path / "init.lua"
    init.write_text(LSPCONFIG_INIT)
    cfg = workspace / "sub" / "fusion_switch_resnet.cfg"
    cfg.parent.mkdir()
    cfg.write_text("{}\n")
    out = tmp_path / "lspconfig-out.json"
    env = editor_env(
        tmp_path,
        {
            "FUSION_SWITCH_CONFIG_DIR": str(CLIENT_CONFIG / "neovim"),
            "FUSION_SWITCH_TEST_CFG": str(cfg),
            "FUSION_SWITCH_TEST_OUT": str(out),
            "FUSION_SWITCH_TEST_NAMES": ",".join(MATCHING_NAMES + OTHER_NAMES),
        },
    )
    script = DRIVERS / "neovim_lspconfig_drive.lua"
    command = [NVIM, "--headless", "--clean", "-u", str(init), "-c", f"luafile {script}"]
    data, _stderr = run_driver("Neovim", command, workspace, env, out, timeout=60)
    data["cfg_folder"] = str(cfg.parent)
    return data


def test_lspconfig_snippet_registers_a_custom_server(lspconfig_session: dict) -> None:
    s = lspconfig_session
    assert s["registered"] == s["setup_name"] == "fusion_switch"
    assert s["cmd"] == ["fusion-switch", "serve"]
    assert s["filetypes"] == ["fusion_switch"]
    assert s["single_file_support"] is True
    assert ".git" in s["root_markers"]
    assert s["root"] == s["cfg_folder"]  # no marker: the file's folder
    assert s["filetype"] == "fusion_switch"
    assert s["syntax"] == "json"
    detected = s["detected"]
    assert {n: detected[n] for n in MATCHING_NAMES} == dict.fromkeys(MATCHING_NAMES, s["filetype"])
    assert "fusion_switch" not in {detected[n] for n in OTHER_NAMES}
    assert dotted_keys(s["setup_settings"]) == server_read_settings()


def test_neovim_011_config_matches(lspconfig_session: dict) -> None:
    config = lspconfig_session["lsp_config"]
    assert config["cmd"] == ["fusion-switch", "serve"]
    assert config["filetypes"] == ["fusion_switch"]
    assert dotted_keys(config["settings"]) == server_read_settings()


def test_a_server_that_cannot_start_is_said_once_without_a_traceback(tmp_path: Path) -> None:
    """A review: on Neovim 0.7 the "cannot start ... pip install fusion-switch" message came
    wrapped in "Error executing lua callback" with a stack traceback, once per buffer."""
    import subprocess

    init = tmp_path / "init.lua"
    init.write_text(
        f"package.path = {lua_string(str(CLIENT_CONFIG / 'neovim'))} .. '/?.lua;' .. package.path\n"
        "require('fusion_switch').setup({ cmd = { '/opt/no such venv/bin/fusion-switch', "
        "'serve' } })\n"
    )
    for name in ("fusion_switch.cfg", "fusion_switch_b.cfg"):
        (tmp_path / name).write_text("{}\n")
    done = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", str(init), "fusion_switch.cfg",
         "-c", "edit fusion_switch_b.cfg", "-c", "sleep 300m", "-c", "qa!"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert "stack traceback" not in said and "Error executing lua" not in said, said
    assert said.count("pip install fusion-switch") == 1, said

"""client-config/emacs/fusion-switch.el as a user installs it, in real Emacs + eglot (batch).

The user's init file adds the folder to `load-path`, requires `fusion-switch`, hooks
`eglot-ensure`; the project's .dir-locals.el sets the target, as the README says. The only
test-specific input is FUSION_SWITCH_SERVER_CMD (which the config reads). Emacs runs without -Q
so that Debian's site-lisp (elpa-eglot) is found.
"""

from __future__ import annotations

import json
import shutil

import pytest
from client_case import (
    CLIENT_CONFIG,
    DRIVERS,
    MATCHING_NAMES,
    OTHER_NAMES,
    SERVER_COMMAND,
    TARGET,
    UNKNOWN_RULE_LINE,
    dotted_keys,
    driver_env,
    make_workspace,
    run_driver,
    server_read_settings,
)

EMACS = shutil.which("emacs")
pytestmark = [
    pytest.mark.editor,
    pytest.mark.skipif(
        EMACS is None, reason="emacs not installed (CI: apt-get install emacs-nox elpa-eglot)"
    ),
]

USER_INIT = """\
(add-to-list 'load-path {config_dir})
(require 'fusion-switch)
(add-hook 'fusion-switch-mode-hook #'eglot-ensure)
"""
DIR_LOCALS = """\
((fusion-switch-mode . ((fusion-switch-target . {target}))))
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Runs the driver once and returns what Emacs received."""
    tmp_path = tmp_path_factory.mktemp("editor")
    workspace = make_workspace(tmp_path)
    init = tmp_path / "init.el"
    init.write_text(USER_INIT.format(config_dir=json.dumps(str(CLIENT_CONFIG / "emacs"))))
    (workspace / ".dir-locals.el").write_text(DIR_LOCALS.format(target=json.dumps(TARGET)))
    out = tmp_path / "emacs-out.json"
    env = driver_env(
        tmp_path,
        workspace,
        out,
        FUSION_SWITCH_TEST_NAMES=",".join(MATCHING_NAMES + OTHER_NAMES),
    )
    command = [EMACS, "--batch", "-l", str(init), "-l", str(DRIVERS / "emacs_drive.el")]
    data, _stderr = run_driver("Emacs", command, workspace, env, out)
    return data


def test_mode_and_server_from_the_config(session: dict) -> None:
    assert session["major_mode"] == "fusion-switch-mode"
    assert session["connected"] is True
    assert session["server_command"] == SERVER_COMMAND


def test_unknown_rule_diagnostic_with_did_you_mean(session: dict) -> None:
    assert session["all_codes_arrived"], session["diagnostics"]
    unknown = [d for d in session["diagnostics"] if "[unknown-rule]" in d["text"]]
    assert len(unknown) == 1, session["diagnostics"]
    (diag,) = unknown
    assert diag["line"] == UNKNOWN_RULE_LINE
    assert diag["type"] == "eglot-warning"
    assert "fusion-switch" in diag["text"]
    assert "did you mean" in diag["text"].lower()
    assert "ConvBatchnormFusionPass" in diag["text"]


def test_target_from_the_settings_reaches_the_server(session: dict) -> None:
    assert any("[ub-unsupported-on-target]" in d["text"] for d in session["diagnostics"])
    assert session["command_rules"] > 600
    assert session["command_target"]


def test_changing_the_target_revalidates(session: dict) -> None:
    assert session["retargeted"] is True


def test_completion_offers_graph_fusion_rules(session: dict) -> None:
    labels = session["completion"]
    assert "ConvBatchnormFusionPass" in labels, labels[:20]
    assert "TbeConv2DAddMulQuantPass" not in labels


def test_the_config_sends_exactly_the_settings_the_server_reads(session: dict) -> None:
    assert dotted_keys(json.loads(session["settings"])) == server_read_settings()


def test_cancelling_a_comparison_leaves_a_bisection_running(session: dict) -> None:
    """A review: M-x fusion-switch-cancel-compare cancelled the first cancellable progress
    token, a running bisection's too."""
    assert "fusionSwitch/bisect/test" not in session["cancel_compare_tokens"], session


def test_restore_after_an_edit_asks_and_restores(session: dict) -> None:
    """A review: eglot declares no window.showMessage, so the server refused a restore over
    edits made since all-off, and fusion-switch-restore had no way to send `force`."""
    assert session["restore_after_edit"] == "restored", session["restore_after_edit"]


def test_auto_mode_covers_the_same_names_as_vscode(session: dict) -> None:
    modes = session["modes"]
    assert {name: modes[name] for name in MATCHING_NAMES} == dict.fromkeys(
        MATCHING_NAMES, "fusion-switch-mode"
    )
    assert "fusion-switch-mode" not in [modes[name] for name in OTHER_NAMES]

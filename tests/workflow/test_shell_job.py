"""A bisection job typed as a shell command line (the Emacs and Neovim commands): run by
``sh -c`` as typed, ``{cfg}`` the trial's path whatever it holds and however it was quoted
(a review: pasted unquoted, a folder with a space split it; quoted blindly, a ``{cfg}`` the
user had quoted broke)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fusion_switch.workflow.trials import CFG_VARIABLE, Runner, shell_command

PRINT_ARGS = f"{sys.executable} -c 'import json, sys; print(json.dumps(sys.argv[1:]))'"


@pytest.mark.parametrize(
    ("typed", "argument"),
    [
        ("{cfg}", "{path}"),
        ("'{cfg}'", "{path}"),
        ('"{cfg}"', "{path}"),
        ("--file={cfg}", "--file={path}"),
        ('"--file={cfg}.bak"', "--file={path}.bak"),
        ("--file={cfg}x", "--file={path}x"),
        ('"a\\"b {cfg}"', 'a"b {path}'),
    ],
)
def test_the_path_reaches_the_job_as_one_word(tmp_path, typed, argument):
    trial = tmp_path / "my cfgs" / "fusion_switch.cfg"
    runner = Runner(shell_command(f"{PRINT_ARGS} {typed}"), judge=None)
    done = subprocess.run(
        runner.argv(trial),
        env={**os.environ, CFG_VARIABLE: str(trial)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == [argument.replace("{path}", str(trial))]


def test_a_line_without_cfg_is_run_as_typed():
    assert shell_command("make train | tee log") == ["sh", "-c", "make train | tee log"]

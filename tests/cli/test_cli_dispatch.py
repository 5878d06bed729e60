"""The command line registers only the sub-command it is asked for (issue 16: `serve` must
not import and build the twelve others); help and errors read exactly as with all of them."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest
from fusion_switch.cli import SUBCOMMANDS, build_parser, main


def _run(run, argv: list[str]) -> tuple[int | str | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def _full(argv: list[str]):
    """What the parser with every sub-command registered says (it only parses)."""
    return build_parser().parse_args(argv)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_of_each_sub_command_is_that_of_the_full_parser(name):
    ours = _run(main, [name, "--help"])
    assert ours == _run(_full, [name, "--help"])
    assert ours[0] == 0 and ours[1].startswith(f"usage: fusion-switch {name}")


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_an_unknown_option_is_reported_as_by_the_full_parser(name):
    ours = _run(main, [name, "--no-such-option-here"])
    assert ours == _run(_full, [name, "--no-such-option-here"])
    assert ours[0] == 2 and "error:" in ours[2]


@pytest.mark.parametrize("argv", [["--help"], ["no-such-command"], ["--version"]])
def test_without_a_sub_command_every_one_is_listed(argv):
    ours = _run(main, argv)
    assert ours == _run(_full, argv)


def test_the_top_level_help_names_every_sub_command():
    code, out, _ = _run(main, ["--help"])
    assert code == 0
    assert all(name in out for name in SUBCOMMANDS)


def test_only_the_named_sub_command_is_registered():
    parser = build_parser(only="serve")
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == ["serve"]
    assert set(next(a for a in build_parser()._actions if a.dest == "command").choices) == set(
        SUBCOMMANDS
    )


def test_ctrl_c_during_a_class_definition_is_an_interrupt(capsys):
    """Python 3.11 turns an exception raised in ``__set_name__`` (a dataclass field, at import)
    into RuntimeError: Ctrl-C at that moment printed a traceback and exited 1, which `compare`
    also uses for "differences found" (found by a kill test at random delays)."""
    from fusion_switch import cli

    class Field:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def run():
        class Model:  # what an import does when Ctrl-C lands inside it
            value = Field()

    assert cli._interruptible(run) == 130
    assert "interrupted" in capsys.readouterr().err


def test_sigterm_raised_as_an_interrupt_keeps_its_status(capsys):
    from fusion_switch import cli
    from fusion_switch.cli.interrupts import Terminated

    def run():
        raise Terminated

    assert cli._interruptible(run) == 143
    assert "interrupted" in capsys.readouterr().err


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def _unset(monkeypatch, variables) -> None:
    """Unset ``variables`` for one test; restored after it even if the test sets them (a
    plain ``delenv`` of an unset variable records nothing to restore)."""
    for variable in variables:
        monkeypatch.setenv(variable, "restored-after-the-test")
        monkeypatch.delenv(variable)


@pytest.mark.parametrize("name", ["compare", "demo"])
def test_comparing_commands_load_blas_with_one_thread(name, monkeypatch):
    """compare runs one process per core (and the replay beside it): BLAS's own threads
    spin on the cores those processes need (issue 16: 35 ms of CPU for numpy's import alone,
    ~7% of a 5,000-op comparison with the replay). Set before numpy is imported."""
    _unset(monkeypatch, BLAS_THREADS)
    assert _run(main, [name, "--no-such-option-here"])[0] == 2
    import os

    assert {v: os.environ.get(v) for v in BLAS_THREADS} == dict.fromkeys(BLAS_THREADS, "1")


@pytest.mark.parametrize("chosen", BLAS_THREADS)
def test_a_blas_thread_count_the_user_chose_in_any_variable_is_kept_alone(chosen, monkeypatch):
    """One variable set (OMP_NUM_THREADS=2, say) is the user's choice: adding
    OPENBLAS_NUM_THREADS=1 beside it would override it (OpenBLAS reads that one first)."""
    import os

    _unset(monkeypatch, BLAS_THREADS)
    monkeypatch.setenv(chosen, "2")
    _run(main, ["compare", "--no-such-option-here"])
    assert {v: os.environ.get(v) for v in BLAS_THREADS} == {
        v: ("2" if v == chosen else None) for v in BLAS_THREADS
    }


@pytest.mark.parametrize("name", ["bisect", "check", "serve", "wire"])
def test_other_commands_leave_the_blas_threads_alone(name, monkeypatch):
    """bisect runs the user's own job, which inherits our environment: it must get the
    user's, not ours."""
    import os

    _unset(monkeypatch, BLAS_THREADS)
    _run(main, [name, "--no-such-option-here"])
    assert not [v for v in BLAS_THREADS if v in os.environ]


NO_DEV_NULL = """
import os, sys
os.close(0)
sys.stdin = None
real_open = os.open
def no_dev_null(path, *rest, **named):
    if path == os.devnull:
        raise FileNotFoundError(2, "No such file or directory", path)
    return real_open(path, *rest, **named)
os.open = no_dev_null
from fusion_switch.cli import standard_streams_open
standard_streams_open()
print("stdin", sys.stdin)
"""


def test_no_dev_null_leaves_a_closed_stream_as_python_left_it():
    """A bare chroot without /dev/null: the closed stream stays None, and the program runs on
    (the OSError escaped main before any sub-command; a review)."""
    done = subprocess.run([sys.executable, "-c", NO_DEV_NULL], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stdin None"

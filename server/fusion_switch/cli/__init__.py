"""`fusion-switch` command line: one module per sub-command, each with `register(subparsers)`.

A sub-command module defines `register(subparsers) -> None`, adding its parser and setting
`func=run` where `run(args) -> int` returns the exit status.
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:
    import argparse

SUBCOMMANDS = (
    "serve",
    "check",
    "compare",
    "passes",
    "dumps",
    "demo",
    "off",
    "on",
    "apply",
    "restore",
    "wire",
    "doctor",
    "bisect",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every sub-command, or with `only` that one (`main` when the command
    line names one: help and errors read the same, and the other modules are not imported,
    so `fusion-switch serve` starts without them)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="fusion-switch",
        description="Editor and command-line companion for CANN fusion anomaly detection.",
    )
    parser.add_argument("--version", action="version", version=f"fusion-switch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only is None else (only,):
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


# What editors run: straight to the language server, without building an option parser
# (importing and building argparse's is ~10 ms of every start of the server; issue 16).
EDITOR_SERVE = (["serve"], ["serve", "--stdio"])


# Sub-commands run as one process over a large heap of acyclic objects (graphs, rows, the
# verdict): the cyclic collector stays off for them (the comparison job and the diagnose stage
# already pause it), and when run as the program the process ends without freeing that heap.
LARGE_HEAP = ("compare",)


# Sub-commands that write the user's configuration (workflow.changes): stopped by SIGTERM or
# SIGHUP (the terminal or the SSH session closed) while they write, they must end as on
# Ctrl-C, their temporary file removed and the history's pending version dropped, where the
# default action killed them on the spot (a review: a temp file left beside the cfg for good).
CFG_WRITERS = ("off", "on", "apply", "restore")

# Sub-commands for which SIGTERM raises (cli.interrupts) from the first moment, before their
# module is even imported: their clean-up stops workers and removes temporary files.
TERMINATE_AS_INTERRUPT = ("compare", *CFG_WRITERS)

# ... and SIGHUP as well (HungUp, exit 129), unless it is ignored (nohup).
HANGUP_AS_INTERRUPT = CFG_WRITERS


# Sub-commands that compare in one process per core: BLAS loads with one thread in each (its
# own threads spun on the cores those processes need: numpy's import alone took 35 ms more
# CPU, and a 5,000-op comparison with the replay ~7% more; issue 16). Not for commands that
# start the user's own job (bisect), which inherits this environment.
ONE_BLAS_THREAD = ("compare", "demo")
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        standard_streams_open()
    words = sys.argv[1:] if argv is None else argv
    if list(words) in EDITOR_SERVE:
        from .serve import serve_stdio

        return _interruptible(serve_stdio)
    command = words[0] if words and words[0] in SUBCOMMANDS else None
    bytes_as_named()
    if command in ONE_BLAS_THREAD:
        one_blas_thread()
    if command in TERMINATE_AS_INTERRUPT:
        from .interrupts import hangup_as_interrupt, terminate_as_interrupt

        with terminate_as_interrupt(), hangup_as_interrupt(command in HANGUP_AS_INTERRUPT):
            return _interruptible(lambda: _run_command(argv, command))
    return _interruptible(lambda: _run_command(argv, command))


def standard_streams_open() -> None:
    """A program started with stdin, stdout or stderr closed (``>&-``, ``2>&-``; a daemon or
    a cron line) gets ``/dev/null`` there. Python leaves such a stream None: `compare`'s
    verdict raised AttributeError after the outputs were written (exit 1, a proven rule's
    status), its progress before any output, with no word. And the first file opened took the
    free descriptor, where the processes it starts would have written their own output."""
    import os

    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:  # no /dev/null (a bare chroot): the stream stays as Python left it
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            errors = "backslashreplace" if fd == 2 else None
            mode = "r" if fd == 0 else "w"
            setattr(sys, name, open(fd, mode, errors=errors, closefd=False))  # noqa: SIM115


def bytes_as_named() -> None:
    """A path with a byte that is not UTF-8 (Python reads it as a lone surrogate) is printed
    as the file system names it, where a strict stdout raised UnicodeEncodeError after the
    outputs were written (stderr already escapes it)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="surrogateescape")


def one_blas_thread() -> None:
    """Ask the BLAS numpy loads (OpenBLAS, MKL, or one built with OpenMP) for one thread,
    unless the user chose a number in any of the variables (OpenBLAS reads its own before
    OMP_NUM_THREADS: setting it beside the user's would override their choice). Read when
    numpy is first imported, and inherited by the processes the comparison starts."""
    import os

    if not any(variable in os.environ for variable in BLAS_THREAD_VARIABLES):
        os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))


_AS_THE_PROGRAM = []  # holds True once main() runs as the `fusion-switch` program


def running_as_the_program() -> bool:
    """Whether this process is the `fusion-switch` program (``main()`` on its own command
    line), not a script that calls ``main([...])``."""
    return bool(_AS_THE_PROGRAM)


def _run_command(argv: list[str] | None, command: str | None) -> int:
    """Parse and run one sub-command; Ctrl-C anywhere in it (its imports included) is left to
    :func:`_interruptible`."""
    if argv is None:
        _AS_THE_PROGRAM.append(True)
    paused = command in LARGE_HEAP and gc.isenabled()
    if paused:  # from here: its walks of the imports and the start-up were ~0.02 s (issue 16)
        gc.disable()
    try:
        parser = build_parser(command)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        if paused and getattr(args, "scheduler", None):  # Dask's event loop makes cycles
            gc.enable()
            paused = False
        program = argv is None and command in LARGE_HEAP
        if program:
            from ..readers.collector import exit_drops_the_heap

            exit_drops_the_heap()
        try:
            status = int(args.func(args) or 0)
        except BrokenPipeError:  # `| head`: the reader left; nothing more to say to it
            from .quiet_stdout import quiet_stdout

            quiet_stdout()
            status = 141  # as a shell reports a program SIGPIPE ended
        if program:
            exit_without_teardown(status)
        return status
    finally:
        if paused:
            gc.enable()


def exit_without_teardown(status: int) -> None:
    """End the process now as the interpreter would, less its teardown: no thread of ours is
    left to wait for, the exit handlers run (multiprocessing, coverage, logging), stdout and
    stderr are flushed, then ``os._exit``. The teardown freed a 5,000-op comparison's heap
    object by object: ~0.03 s of every run (issue 16). Returns (the usual exit follows) when
    a non-daemon thread is alive or a stream cannot be flushed (a closed pipe): the
    interpreter then reports it as it always has."""
    import atexit
    import os
    import signal
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    if threading.current_thread() is main_thread:
        # the run is over: Ctrl-C or SIGTERM now just end the process (compare's handlers
        # raised inside the exit handlers, which printed the exception with a traceback)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        os._exit(120)  # what the interpreter exits with when it cannot flush stdout
    os._exit(status)


def _interruptible(run) -> int:
    try:
        return int(run() or 0)
    except KeyboardInterrupt as stop:
        return _interrupted(stop)
    except RuntimeError as error:
        # Python 3.11 wraps an exception raised in __set_name__ (Ctrl-C landing in an import's
        # class definition) in RuntimeError: still an interrupt, not an internal error
        if isinstance(error.__cause__, KeyboardInterrupt):
            return _interrupted(error.__cause__)
        raise


def _interrupted(stop: KeyboardInterrupt) -> int:
    from .interrupts import interrupt_status  # only now: `serve` starts without it

    print("fusion-switch: interrupted", file=sys.stderr)
    return interrupt_status(stop)

"""The process one rank of ``compare --rank all`` is compared in: forked from a server that
imported the comparison once, not a new interpreter per rank.

A new interpreter (``python -m fusion_switch compare ...``) spent ~0.2 s of CPU per rank
starting and importing before it compared anything: on 64 ranks of 300 ops, 23.0 s of CPU
against 10.6 s forked from a server, and on two cores the ranks side by side were slower than
the same ranks in turn in one process (issue 16). multiprocessing's ``forkserver`` start method
is that server: started once per run (with Ctrl-C and SIGTERM blocked, so that neither ends
it, during its imports or after: the ranks it forks take them once they can), it imports
:data:`PRELOAD` and forks each rank from that state. The rank runs the ``compare`` command
line as a program (its stdout and stderr given here), and ends as one
(``exit_without_teardown``), with its exit status.
Where no server can start, or multiprocessing has no such start method (Windows), each rank
is a new interpreter, as before.

A rank's process is the fork server's child, not this process's, so the parent-death signal
would name the server, which outlives it; it watches this process instead
(``compare_tree.die_with_rank_parent``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import types
import weakref
from typing import IO, Any

from ..compare.parent_death import has_ended, pidfd, wait_until_ended
from .rank_server_folder import mark, server_folder, sweep

# what a rank's comparison imports (the modules a `compare` run loads before its first row)
PRELOAD = (
    "fusion_switch.cli.rank_server",  # the server's own clean-up
    "fusion_switch.cli.compare",
    "fusion_switch.cli.compare_tree",
    "fusion_switch.cli.compare_ahead",
    "fusion_switch.compare.engine",
    "fusion_switch.compare.workers",
    "fusion_switch.compare.runners",
    "fusion_switch.diagnose.summary",
    "fusion_switch.diagnose.report",
    "fusion_switch.diagnose.replay_background",
    "fusion_switch.readers.graph",
)

# what the fork server (38 MB RSS with PRELOAD) and multiprocessing's resource tracker (13 MB),
# started with it, hold beside the ranks: counted once against --memory-budget
SERVER_BYTES = 56 << 20


def forked_ranks() -> bool:
    """Whether ranks are forked from a server here (else: a new interpreter each): only in the
    ``fusion-switch`` program itself. A script that calls ``cli.main([...])`` keeps its own
    multiprocessing as it was: the fork server is one per process, and this one, with the
    signals it holds and its imports, would have been its fork server too (its processes
    born with SIGTERM blocked: ``terminate()`` did nothing; a review)."""
    from . import running_as_the_program

    return running_as_the_program() and "forkserver" in multiprocessing.get_all_start_methods()


def start_rank(argv: list[str], stdout: IO[bytes], env: dict[str, str]) -> Any:
    """Start ``fusion-switch`` with ``argv`` (``["compare", ...]``) as one rank; its stdout
    goes to ``stdout`` (a file), its stderr to the returned object's ``stderr`` (a pipe, read
    by the caller). What it returns has what the caller uses of a ``Popen``: ``pid``,
    ``stderr``, ``wait()``, ``returncode``, ``send_signal()``. Call it with SIGINT blocked in
    this thread: the rank (and the fork server, started by the first call) is born so."""
    if forked_ranks():
        try:
            return _ForkedRank(argv, stdout, env)
        except (OSError, EOFError):  # no server here (a temporary directory it cannot use,
            pass  # or it died while it started): as below
    command = [sys.executable, "-m", "fusion_switch", *argv]
    return subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, env=env)


# multiprocessing reads a forked process's exit status from a pipe when it is polled, and
# starting a process polls every earlier one: a rank's wait and another rank's start, in two
# threads, read one status between them, and the wait that lost took the pipe's end for a
# server that died, status 255 ("== rank 1: exit 255" in one run of ten of 16 ranks)
_POLLING = threading.Lock()


class _ForkedRank:
    def __init__(self, argv: list[str], stdout: IO[bytes], env: dict[str, str]) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))  # read when the server starts, once
        read, write = os.pipe()
        ours = [write]  # closed here whatever happens: the rank has its copies
        try:
            go, started = os.pipe()
            ours += [go, started]
            self._process = context.Process(
                target=_rank_main,
                args=(argv, _Fd(stdout.fileno()), _Fd(write), _changed(env), _Fd(go)),
                name="fusion-switch-rank",
            )
            with _POLLING, _main_module_hidden():
                _server_marked()
                self._process.start()
            os.write(started, b"1")  # see _started
        except BaseException:
            os.close(read)
            raise
        finally:
            for fd in ours:
                os.close(fd)
        self.stderr = os.fdopen(read, "rb")
        self.pid = self._process.pid
        # this very process, whatever reuses its pid later: the rank is not our child, and
        # once its server is gone nothing else tells its end from a stranger's (a review)
        self._pidfd = pidfd(self.pid)
        if self._pidfd is not None:
            weakref.finalize(self, os.close, self._pidfd)
        self.returncode: int | None = None
        self.status_lost = False

    def wait(self) -> int:
        from multiprocessing.connection import wait as ready

        ready([self._process.sentinel])  # its end is there to read (not read here)
        with _POLLING:
            self.returncode = self._process.exitcode
        self._process.join()  # the status is known: no read
        if self._server_gone():  # the rank runs on without it: its end is waited for
            wait_until_ended(self.pid, self._pidfd)
            self.status_lost = True  # its summary (stdout) tells how it ended
        return self.returncode

    def send_signal(self, signum: int) -> None:
        with _POLLING:
            running = self._process.exitcode is None
        if not (running or self._server_gone()):
            return
        if self._pidfd is None:
            os.kill(self.pid, signum)
            return
        with contextlib.suppress(ProcessLookupError):  # it has just ended
            signal.pidfd_send_signal(self._pidfd, signum)

    def _server_gone(self) -> bool:
        """multiprocessing's status 255: the server ended (killed alone) with the rank still
        running, its status lost; the rank was reported ended, and a stop skipped it."""
        return self._process.exitcode == _SERVER_GONE and not has_ended(self.pid, self._pidfd)


_SERVER_GONE = 255  # what multiprocessing reports when the fork server's pipe ends
_NOT_STARTED = 254  # a forked rank whose caller never learnt its pid: nobody waits for it

_MARKED: list[int] = []  # the lock on this process's server folder, held while it lives


def _server_marked() -> None:
    """Start the fork server if it does not run, then, the first time, mark and lock its
    socket folder, which a SIGKILL to the whole group would leave, and remove those earlier
    runs left (:mod:`.rank_server_folder`). Marked before the first rank is asked for: that
    waits for the server's imports, 0.2-0.3 s in which a kill left the folder unmarked. A
    server started again (its own killed alone) uses the same folder."""
    from multiprocessing import forkserver

    forkserver.ensure_running()  # returns once the server is spawned, before its imports
    folder = server_folder()
    if _MARKED or folder is None:
        return
    held = mark(folder)
    _MARKED.append(-1 if held is None else held)
    sweep(os.path.dirname(folder), keep=folder)


@contextlib.contextmanager
def _main_module_hidden():
    """multiprocessing has each forked process import the caller's ``__main__`` (to find the
    objects it is sent). A rank needs nothing from it, and a script that runs ``cli.main`` ran
    again in each rank: printing its own output there, or, unguarded, failing every rank
    (RuntimeError "... before the current process has finished its bootstrapping phase")."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _changed(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that differ from this process's (the server has those)."""
    return {name: value for name, value in env.items() if os.environ.get(name) != value}


class _Fd:
    """A file descriptor handed to the forked rank (multiprocessing sends it along)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self):
        from multiprocessing import reduction

        return _received, (reduction.DupFd(self.fd),)


def _received(duplicate) -> int:
    return duplicate.detach()


def _started(go: int) -> bool:
    """Whether the caller learnt this rank's pid: a server killed after its fork but before
    its reply fails the start (EOFError), and the caller starts the rank again as a new
    interpreter; the rank forked then must not run too (a review). The caller writes a byte
    once the start returned; it closes the pipe without one when the start failed, or when
    it was killed."""
    try:
        return os.read(go, 1) == b"1"
    finally:
        os.close(go)


def _rank_main(argv: list[str], stdout: int, stderr: int, env: dict[str, str], go: int) -> None:
    """In the forked rank: its streams and variables, then the command line as a program."""
    if not _started(go):
        os._exit(_NOT_STARTED)
    for fd, target in ((stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    # a server started with either stream closed has None there: main() as a program gives
    # the rank streams on its 1 and 2 (standard_streams_open)
    os.environ.update(env)
    sys.argv = ["fusion-switch", *argv]
    from . import main

    status = 1
    try:
        status = main()  # argv None: as a program, which ends by os._exit after its exit handlers
    except SystemExit as stop:  # what the interpreter prints and returns for it
        if stop.code is None or isinstance(stop.code, int):
            status = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:  # printed as the interpreter prints what nothing caught: status 1
        sys.excepthook(*sys.exc_info())
    finally:
        _end_as_a_program(status)


def _end_as_a_program(status: int) -> None:
    """End as the interpreter ends a program, where ``main`` returned instead: its threads
    waited for, the exit handlers run, the streams flushed. multiprocessing would run only its
    own exit handler, which waits for this process's children: a helper the comparison keeps
    for the replay, ended by our handler, kept the rank waiting for ever (a SIGKILL to the
    ``--rank all`` process while the ranks started)."""
    import atexit
    import threading

    here = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not here and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120
    os._exit(status)

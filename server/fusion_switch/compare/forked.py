"""One function call in a forked child, its answer back through a pipe.

Used where a serial stretch can overlap with work in this process (the fusion-off graph read
while the fusion-on one is; the replay while the rows are judged). The child is forked, so it
needs nothing pickled but its answer. Whatever goes wrong (fork not available or refused, the
child killed, an exception, an answer that does not unpickle), :meth:`ForkedCall.answer` is
None and the caller does the work itself, so a failure looks as it would without the child.

With ``early=True`` the target also gets ``tell``, which sends a value ahead of the answer
(:meth:`ForkedCall.early`): the part of the answer the caller can use while the child finishes
(the fusion-off graph's name, known long before its digest). Values told are read in order;
those the caller does not read are skipped by :meth:`ForkedCall.answer` (a helper that picks the
fusion-off graph from a folder tells the pick, then the graph's name).

:func:`start_ahead` starts a call before the code that will use it is even imported (the
command line forks the fusion-off graph's reader before numpy loads); that code claims it
with :func:`take_ahead`, and :func:`close_ahead` ends any call nobody claimed.

A target that returns :class:`Kept` answers and stays: its child then waits for one more
request from the caller (:meth:`ForkedCall.follow`) and answers it with what it kept (the
fusion-off graph's helper keeps the graph for the replay, which would otherwise read it again
in a process of its own).
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import pickle
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..readers.signals_held import HELD_SIGNALS, signals_held
from .parent_death import arm_parent_death_signal

_EARLY, _ANSWER, _KEPT = "early", "answer", "kept"
GRAPH_FORK_BYTES = 64 << 10  # smaller graph files are read in the process: a fork costs more


def _send(connection: Any, kind: str, value: Any) -> None:
    with contextlib.suppress(OSError, pickle.PicklingError):
        connection.send_bytes(pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL))


class Kept:
    """What a target returns to answer now and stay: ``then(receive)`` runs after ``answer``
    is sent; ``receive()`` waits for the caller's request (None when the caller closed the call
    without one) and what ``then`` returns is the second answer (None: no answer)."""

    def __init__(self, answer: Any, then: Callable[[Callable[[], Any]], Any]) -> None:
        self.answer = answer
        self.then = then


def _request(connection: Any) -> Any | None:
    with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
        return pickle.loads(connection.recv_bytes())
    return None


def _run(
    target: Callable[..., Any],
    args: tuple,
    connection: Any,
    early: bool = False,
    theirs: Any = None,
    caller: int | None = None,
) -> None:
    # Ctrl-C at a terminal reaches the whole process group: it is the caller's to handle (it
    # closes the call, or waits for it), not a reason to stop here or print a traceback.
    # SIGTERM ends this process as by default, not through the caller's handler (`compare`
    # raises an exception from it for its own clean-up)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # forked with both held (ForkedCall.start): what arrived since now meets these handlers
    with contextlib.suppress(AttributeError, OSError, ValueError):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)
    if caller is not None:
        _end_with(caller)
    if theirs is not None:  # the caller's end: not held here, so that the caller's close (and
        theirs.close()  # its death) is an end of file, or a failed send, here; processes the
        # caller forks later hold it too, so ForkedCall.close() kills the child rather than
        # count on it
    try:
        if early:

            def tell(value: Any) -> None:
                _send(connection, _EARLY, value)

            answer = target(*args, tell=tell)
        else:
            answer = target(*args)
        if isinstance(answer, Kept):
            _send(connection, _KEPT, answer.answer)
            then = answer.then
            answer = None  # the first answer is sent: not kept alive while ``then`` runs
            answer = then(lambda: _request(connection))
            if answer is None:
                return
        _send(connection, _ANSWER, answer)
    except BaseException:  # the caller does the work again, and reports what goes wrong then
        pass
    finally:
        connection.close()


def _end_with(caller: int) -> None:
    """End this child when its caller's process dies, even killed with SIGKILL: Linux's
    parent-death signal (sent when the forking *thread* ends: armed only for calls started in
    the main thread, see :meth:`ForkedCall.start`). Elsewhere the closed pipe ends it at its
    next send or receive."""
    arm_parent_death_signal(signal.SIGKILL)
    if os.getppid() != caller:  # gone before the signal was armed
        os._exit(1)


class ForkedCall:
    """``ForkedCall(target, args).start()`` → (work here) → ``answer()`` → ``close()`` (always,
    e.g. in ``finally``; it kills a child that is still running)."""

    def __init__(
        self,
        target: Callable[..., Any],
        args: tuple = (),
        daemon: bool = True,
        early: bool = False,
        keep: bool = False,
    ) -> None:
        self.target = target
        self.args = args
        self.daemon = daemon  # a daemonic child cannot fork workers of its own
        self.early_value = early  # the target takes ``tell`` (see :meth:`early`)
        self.keep = keep  # the target may return Kept (see :meth:`follow`)
        self.kept = False  # the child answered with Kept and waits for a request
        self.companion: Any = None  # what the starter keeps with the call, closed with it
        self._process: Any = None
        self._connection: Any = None
        self._received: tuple | None = None  # the answer, read while waiting for an early value

    def start(self) -> ForkedCall:
        if "fork" not in multiprocessing.get_all_start_methods():
            return self
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=self.keep)
        main = threading.current_thread() is threading.main_thread()
        process = context.Process(
            target=_run,
            args=(
                self.target,
                self.args,
                sender,
                self.early_value,
                receiver,
                os.getpid() if main else None,
            ),
            daemon=self.daemon,
        )
        # held until the child has its own handlers (see _run); one held meanwhile is raised
        # here as the block ends, when the child is already this call's to close
        with signals_held():
            try:
                process.start()
            except (OSError, AssertionError, ValueError):  # e.g. a daemon process cannot fork
                receiver.close()
                return self
            finally:
                sender.close()
            self._process, self._connection = process, receiver
            if self.keep:
                _watch_kept(self)
        return self

    @property
    def busy(self) -> bool:
        """A child is working on the call (else :meth:`answer` is None at once)."""
        return self._connection is not None

    def early(self) -> Any | None:
        """The next value the target passed to ``tell`` (waiting for it), or None when no
        child runs, or it answered or ended without telling more; then :meth:`answer` gives
        the answer."""
        if self._received is not None:  # the answer, already read
            return None
        message = self._receive()
        if message is not None and message[0] == _EARLY:
            return message[1]
        self._received = message
        return None

    def answer(self) -> Any | None:
        """The target's return value, or None when no child ran or it gave no answer. A
        child that answered with :class:`Kept` stays (:attr:`kept`) for :meth:`follow`;
        otherwise the call is closed."""
        message, self._received = self._received, None
        if message is None:
            message = self._receive()
            while message is not None and message[0] == _EARLY:  # told, but not read
                message = self._receive()
        self.kept = message is not None and message[0] == _KEPT
        if self.kept:
            return message[1]
        self.close()
        return message[1] if message is not None and message[0] == _ANSWER else None

    def follow(self, request: Any) -> bool:
        """Send the request a :attr:`kept` child waits for; its answer comes from
        :meth:`answer`. False (the call closed) when there is no such child or the request
        could not be sent: the caller does the work itself."""
        if not self.kept or self._connection is None:
            return False
        self.kept = False
        try:
            self._connection.send_bytes(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
            return True
        except (OSError, ValueError, pickle.PicklingError, TypeError, AttributeError):
            self.close()
            return False

    def _receive(self) -> tuple | None:
        if self._connection is None:
            return None
        with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
            message = pickle.loads(self._connection.recv_bytes())
            if isinstance(message, tuple) and len(message) == 2:
                return message
        return None

    def close(self) -> None:
        if self.companion is not None:  # ends with the call
            with contextlib.suppress(Exception):
                self.companion.close()
            self.companion = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._process = None


_KEPT_CALLS: weakref.WeakSet[ForkedCall] = weakref.WeakSet()
_KEPT_WATCHED = False  # _close_kept registered


def _watch_kept(call: ForkedCall) -> None:
    """A child that may stay is not daemonic, and multiprocessing's exit handler joins such
    children: one nobody closed (an error on the way, a job abandoned after Ctrl-C) would
    keep this process from exiting. Registered after that handler (multiprocessing has just
    started a process), this one runs before it and ends them."""
    global _KEPT_WATCHED
    if not _KEPT_WATCHED:
        atexit.register(_close_kept)
        _KEPT_WATCHED = True
    _KEPT_CALLS.add(call)


def _close_kept() -> None:
    for call in list(_KEPT_CALLS):
        call.close()


_AHEAD: dict[tuple, ForkedCall] = {}


def path_key(kind: str, path: str | os.PathLike) -> tuple:
    """A :func:`start_ahead` key for work on one file, however its path was spelt."""
    return (kind, os.path.realpath(path))


def start_ahead(
    key: tuple,
    target: Callable[..., Any],
    args: tuple,
    early: bool = False,
    keep: bool = False,
) -> ForkedCall | None:
    """Start ``target(*args)`` in a child now, for the code that will ask for ``key`` later;
    the call, or None when no child could be started. ``keep``: the target may stay for a
    request (:class:`Kept`); such a child may fork processes of its own (it is not daemonic),
    so the caller must end it: :func:`close_ahead`."""
    close_ahead(key)
    call = ForkedCall(target, args, daemon=not keep, early=early, keep=keep).start()
    if not call.busy:
        return None
    _AHEAD[key] = call
    return call


def keep_ahead(key: tuple, call: ForkedCall) -> None:
    """Register a running call under ``key`` (a kept child handed on to the code that will
    send its request): :func:`take_ahead` claims it, :func:`close_ahead` ends it."""
    close_ahead(key)
    if call.busy:
        _AHEAD[key] = call


def take_ahead(key: tuple) -> ForkedCall | None:
    """The running call started for ``key`` by :func:`start_ahead` (now the caller's to close)."""
    return _AHEAD.pop(key, None)


def close_ahead(key: tuple | None = None) -> None:
    """End the call started for ``key`` (every unclaimed call without a key)."""
    for k in [key] if key is not None else list(_AHEAD):
        call = _AHEAD.pop(k, None)
        if call is not None:
            call.close()

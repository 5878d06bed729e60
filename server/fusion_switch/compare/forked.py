"""One function call in a forked child, its answer back through a pipe.

Used where a serial stretch can overlap with work in this process (the fusion-off graph read
while the fusion-on one is; the replay while the rows are judged). The child is forked, so it
needs nothing pickled but its answer. Whatever goes wrong (fork not available or refused, the
child killed, an exception, an answer that does not unpickle), :meth:`ForkedCall.answer` is
None and the caller does the work itself, so a failure looks as it would without the child.

With ``early=True`` the target also gets ``tell``, which sends one value ahead of the answer
(:meth:`ForkedCall.early`): the part of the answer the caller can use while the child finishes
(the fusion-off graph's name, known long before its digest).

:func:`start_ahead` starts a call before the code that will use it is even imported (the
command line forks the fusion-off graph's reader before numpy loads); that code claims it
with :func:`take_ahead`, and :func:`close_ahead` ends any call nobody claimed.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
from collections.abc import Callable
from typing import Any

_EARLY, _ANSWER = "early", "answer"
GRAPH_FORK_BYTES = 64 << 10  # smaller graph files are read in the process: a fork costs more


def _send(connection: Any, kind: str, value: Any) -> None:
    with contextlib.suppress(OSError, pickle.PicklingError):
        connection.send_bytes(pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL))


def _run(target: Callable[..., Any], args: tuple, connection: Any, early: bool = False) -> None:
    try:
        if early:
            told = []

            def tell(value: Any) -> None:
                if not told:  # one early value: the parent reads at most one
                    told.append(True)
                    _send(connection, _EARLY, value)

            answer = target(*args, tell=tell)
        else:
            answer = target(*args)
        _send(connection, _ANSWER, answer)
    except BaseException:  # the caller does the work again, and reports what goes wrong then
        pass
    finally:
        connection.close()


class ForkedCall:
    """``ForkedCall(target, args).start()`` → (work here) → ``answer()`` → ``close()`` (always,
    e.g. in ``finally``; it kills a child that is still running)."""

    def __init__(
        self, target: Callable[..., Any], args: tuple = (), daemon: bool = True, early: bool = False
    ) -> None:
        self.target = target
        self.args = args
        self.daemon = daemon  # a daemonic child cannot fork workers of its own
        self.early_value = early  # the target takes ``tell`` (see :meth:`early`)
        self._process: Any = None
        self._connection: Any = None
        self._received: tuple | None = None  # the answer, read while waiting for an early value

    def start(self) -> ForkedCall:
        if "fork" not in multiprocessing.get_all_start_methods():
            return self
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(
            target=_run, args=(self.target, self.args, sender, self.early_value), daemon=self.daemon
        )
        try:
            process.start()
        except (OSError, AssertionError, ValueError):  # e.g. a daemon process cannot fork
            receiver.close()
            return self
        finally:
            sender.close()
        self._process, self._connection = process, receiver
        return self

    @property
    def busy(self) -> bool:
        """A child is working on the call (else :meth:`answer` is None at once)."""
        return self._connection is not None

    def early(self) -> Any | None:
        """The value the target passed to ``tell`` (waiting for it), or None when no child
        runs, or it answered or ended without telling. Call it at most once, before
        :meth:`answer`."""
        message = self._receive()
        if message is not None and message[0] == _EARLY:
            return message[1]
        self._received = message
        return None

    def answer(self) -> Any | None:
        """The target's return value, or None when no child ran or it gave no answer."""
        message, self._received = self._received, None
        if message is None:
            message = self._receive()
            if message is not None and message[0] == _EARLY:  # told, but early() not called
                message = self._receive()
        self.close()
        return message[1] if message is not None and message[0] == _ANSWER else None

    def _receive(self) -> tuple | None:
        if self._connection is None:
            return None
        with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
            message = pickle.loads(self._connection.recv_bytes())
            if isinstance(message, tuple) and len(message) == 2:
                return message
        return None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._process = None


_AHEAD: dict[tuple, ForkedCall] = {}


def path_key(kind: str, path: str | os.PathLike) -> tuple:
    """A :func:`start_ahead` key for work on one file, however its path was spelt."""
    return (kind, os.path.realpath(path))


def start_ahead(key: tuple, target: Callable[..., Any], args: tuple, early: bool = False) -> None:
    """Start ``target(*args)`` in a child now, for the code that will ask for ``key`` later."""
    close_ahead(key)
    call = ForkedCall(target, args, early=early).start()
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

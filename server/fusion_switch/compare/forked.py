"""One function call in a forked child, its answer back through a pipe.

Used where a serial stretch can overlap with work in this process (the fusion-off graph read
while the fusion-on one is; the replay while the rows are judged). The child is forked, so it
needs nothing pickled but its answer. Whatever goes wrong (fork not available or refused, the
child killed, an exception, an answer that does not unpickle), :meth:`ForkedCall.answer` is
None and the caller does the work itself, so a failure looks as it would without the child.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
from collections.abc import Callable
from typing import Any


def _run(target: Callable[..., Any], args: tuple, connection: Any) -> None:
    try:
        answer = target(*args)
        with contextlib.suppress(OSError, pickle.PicklingError):
            connection.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    except BaseException:  # the caller does the work again, and reports what goes wrong then
        pass
    finally:
        connection.close()


class ForkedCall:
    """``ForkedCall(target, args).start()`` → (work here) → ``answer()`` → ``close()`` (always,
    e.g. in ``finally``; it kills a child that is still running)."""

    def __init__(self, target: Callable[..., Any], args: tuple = (), daemon: bool = True) -> None:
        self.target = target
        self.args = args
        self.daemon = daemon  # a daemonic child cannot fork workers of its own
        self._process: Any = None
        self._connection: Any = None

    def start(self) -> ForkedCall:
        if "fork" not in multiprocessing.get_all_start_methods():
            return self
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(
            target=_run, args=(self.target, self.args, sender), daemon=self.daemon
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

    def answer(self) -> Any | None:
        """The target's return value, or None when no child ran or it gave no answer."""
        answer = None
        if self._connection is not None:
            with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
                answer = pickle.loads(self._connection.recv_bytes())
        self.close()
        return answer

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._process = None

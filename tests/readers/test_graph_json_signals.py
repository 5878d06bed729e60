"""Ctrl-C or SIGTERM at the very start of `compare` never crashes the interpreter.

A kill test at random delays crashed `compare` with a segmentation fault in 3 of 41 Ctrl-C
sent 40-60 ms after start, in msgspec's construction of the graph decoder: a KeyboardInterrupt
landing in ``import msgspec`` or in that construction leaves msgspec 0.23 broken. Both now run
with SIGINT and SIGTERM held back (``readers.signals_held``); they are delivered right after.
"""

from __future__ import annotations

import importlib
import signal
import subprocess
import sys

import msgspec
import pytest


def test_the_graph_decoder_is_built_with_the_signals_held(monkeypatch):
    import fusion_switch.readers.graph_json as graph_json

    real = msgspec.json.Decoder
    seen = []

    def recording(*args, **kwargs):
        seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
        return real(*args, **kwargs)

    monkeypatch.setattr(msgspec.json, "Decoder", recording)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        importlib.reload(graph_json)
    finally:
        monkeypatch.undo()
        importlib.reload(graph_json)
    assert seen and {signal.SIGINT, signal.SIGTERM} <= seen[0]
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # given back


def test_a_signal_held_back_is_delivered_after(monkeypatch):
    import threading

    import fusion_switch.readers.graph_json as graph_json

    real = msgspec.json.Decoder

    def interrupted(*args, **kwargs):
        # arrives while the decoder is built, for this thread: sent to the process, it went to
        # another thread of pytest's (one an earlier test left) that does not hold it back, and
        # the KeyboardInterrupt escaped this test (a clean-clone CI run, fortieth round)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(msgspec.json, "Decoder", interrupted)
    # Python's own handler, whatever an earlier test in this process left installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            importlib.reload(graph_json)
    finally:
        signal.signal(signal.SIGINT, previous)
        monkeypatch.undo()
        importlib.reload(graph_json)


_WATCH_IMPORT = """
import signal, sys

class Watch:  # sees the signal mask when msgspec is imported, then lets the import go on
    def find_spec(self, name, path=None, target=None):
        if name == "msgspec":
            held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
            print(signal.SIGINT in held and signal.SIGTERM in held)
        return None

sys.meta_path.insert(0, Watch())
import {module}
"""


@pytest.mark.parametrize(
    "module", ["fusion_switch.readers.graph_json", "fusion_switch.diagnose.summary"]
)
def test_msgspec_is_imported_with_the_signals_held(module):
    done = subprocess.run(
        [sys.executable, "-c", _WATCH_IMPORT.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True"], done.stdout + done.stderr

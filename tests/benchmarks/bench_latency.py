"""Completion latency while the document is being edited fast (issue 12, DESIGN.md 4).

Over stdio against the real `fusion-switch serve`: a 1,000-entry configuration is opened, then
completion requests are timed (p50/p95/max) first on a quiet server, then while the client
sends 50 incremental edits a second (a rule's value toggled "on"/"off", each a new version).
Budget: completion p95 < 200 ms during the flood; before issue 12 it was 1-4 s, because every
edit queued a full check and publish ahead of the completion. Also prints how many diagnostics
notifications the flood produced (checks are debounced, never queued) and the delay from the
last edit to the diagnostics of the final version.
Run from the repository root:
    .venv/bin/python tests/benchmarks/bench_latency.py [--entries 1000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time

from fusion_switch.cfg.sample import sample_document
from lsprotocol import types
from pygls.lsp.client import LanguageClient

SERVER = [sys.executable, "-m", "fusion_switch", "serve"]
URI = "file:///bench/fusion_switch.cfg"
BUDGET_P95_MS = 200.0
_MEMBER = re.compile(r'^[ \t]*"([A-Za-z0-9_]+)"[ \t]*:[ \t]*"(on|off)"', re.MULTILINE)


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("bench-latency", "0")
        self.published: list[tuple[float, int | None]] = []

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.perf_counter(), params.version))

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass


def position(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


def percentiles(times: list[float]) -> tuple[float, float, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95, ordered[-1]


async def completion_ms(client: Client, where: types.Position) -> float:
    t0 = time.perf_counter()
    await client.text_document_completion_async(
        types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=URI), position=where)
    )
    return (time.perf_counter() - t0) * 1000


async def run(entries: int, seconds: float, rate: float) -> None:
    text = sample_document(entries)
    members = list(_MEMBER.finditer(text))
    edited = members[len(members) // 2]  # edits toggle this value
    probe = members[len(members) // 3]  # completion inside this key
    client = Client()
    await client.start_io(*SERVER)
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None)
    )
    client.initialized(types.InitializedParams())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=URI, language_id="json", version=1, text=text)
        )
    )
    where = position(text, probe.start(1) + 2)
    await asyncio.sleep(1.0)  # start-up and first check done

    quiet = [await completion_ms(client, where) for _ in range(40)]

    version = 1
    value_start, value_end = edited.span(2)
    current = edited.group(2)
    stop = asyncio.Event()

    async def flood() -> None:
        nonlocal version, current, value_end
        interval = 1.0 / rate
        next_at = time.perf_counter()
        while not stop.is_set():
            new = "off" if current == "on" else "on"
            version += 1
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(
                                position(text, value_start), position(text, value_end)
                            ),
                            text=new,
                        )
                    ],
                )
            )
            value_end = value_start + len(new)
            current = new
            # a steady rate: when the client falls behind it does not send a burst to catch up
            next_at = max(next_at + interval, time.perf_counter())
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

    published_before = len(client.published)
    flooding = asyncio.ensure_future(flood())
    busy = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        busy.append(await completion_ms(client, where))
        await asyncio.sleep(0.05)
    stop.set()
    await flooding
    last_edit = time.perf_counter()
    final = version
    while not any(v == final for _, v in client.published):
        await asyncio.sleep(0.01)
        if time.perf_counter() - last_edit > 30:
            break
    settled = [t for t, v in client.published if v == final]
    edits = final - 1
    notifications = len(client.published) - published_before

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    print(f"{entries}-entry document, {rate:.0f} edits/s for {seconds:.0f} s ({edits} edits)")
    print(f"{'completion':32} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}   budget / before")
    for label, times in (("quiet server", quiet), ("during the edit flood", busy)):
        p50, p95, worst = percentiles(times)
        reference = (
            f"p95 < {BUDGET_P95_MS:.0f} ms / 1000-4000 ms" if times is busy else "p95 < 200 ms"
        )
        print(f"{label:32} {len(times):4} {p50:8.1f} {p95:8.1f} {worst:8.1f}   {reference}")
    print(f"diagnostics notifications during the flood: {notifications} for {edits} versions")
    if settled:
        delay = (settled[0] - last_edit) * 1000
        print(f"last edit -> diagnostics of the final version: {delay:.0f} ms")
    else:
        print("the final version's diagnostics did not arrive within 30 s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=50.0, help="edits per second")
    args = parser.parse_args(argv)
    asyncio.run(run(args.entries, args.seconds, args.rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())

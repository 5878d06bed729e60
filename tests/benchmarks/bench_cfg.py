"""Benchmark the cfg editing path against the budgets of DESIGN.md 4, beside references.

Prints, for one realistic 5,000-entry document (`fusion_switch.cfg.sample_document`), checked
against a catalogue that knows all its names (`sample_catalogue`; in the server through
`fusionSwitch.catalogue.extraFiles`), as the JSON schema reference also accepts them all:
  - in process: parse, parse + check, parse + check + publish (diagnostics converted to LSP
    and serialised), completion at a rule key, and completion in an empty section (every
    rule offered: 5,001 items) as the server answers it, beside how it answered before
    (lsprotocol objects serialised by cattrs);
  - over stdio against `fusion-switch serve`: server start → `initialize` reply,
    didChange → publishDiagnostics round trip, completion request round trips, and the
    server's CPU time per 5,001-item completion request;
  - references in the same run: vscode-json-languageservice (node) parse + doValidation and
    doComplete with schemas/fusion_switch.schema.json, python-jsonschema `iter_errors`, and
    `json.loads`; with the ratios ours / reference.
All figures are medians. Run from the repository root:
    .venv/bin/python tests/benchmarks/bench_cfg.py [--runs 30] [--entries 5000]
`--first-only`: only server start -> first diagnostics against a bare pygls server;
`--instructions`: the instructions each server runs until it writes its first publish
(valgrind's callgrind, a few minutes), a figure the load of a shared machine does not move.
The node reference needs `npm ci` (or `npm install`) in tests/benchmarks/node once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fusion_switch import cfg
from fusion_switch.cfg.model import Context
from fusion_switch.cfg.sample import sample_catalogue
from fusion_switch.lsp.capabilities import ClientFeatures
from fusion_switch.lsp.convert import Converter
from fusion_switch.lsp.features.completion import completion_json
from fusion_switch.lsp.features.diagnostics import DEBOUNCE, MAX_DIAGNOSTICS
from fusion_switch.lsp.text import LineIndex
from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schemas" / "fusion_switch.schema.json"
NODE_DIR = Path(__file__).resolve().parent / "node"
SERVER = [sys.executable, "-m", "fusion_switch", "serve"]
BUDGETS_MS = {"check+publish": 20.0, "completion": 10.0}
_MEMBER = re.compile(r'^[ \t]*"([A-Za-z0-9_]+)"[ \t]*:[ \t]*"(on|off)"', re.MULTILINE)


def median_ms(fn, runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def probe(text: str) -> re.Match:
    """A `"Rule": "on"` member near the middle: completion inside its key, edits on its value."""
    match = _MEMBER.search(text, len(text) // 2)
    if match is None:
        raise SystemExit("the sample document has no rule member after its middle")
    return match


# in process ----------------------------------------------------------------------------
def bench_in_process(text: str, runs: int, ctx: Context) -> dict:
    member = probe(text)
    offset = member.start(1) + 2

    def publish(context: Context, defer: bool = False) -> None:
        """What the server does for publishDiagnostics (features/diagnostics.py `_publish`)."""
        analysis = cfg.analyse(text, context, defer_suggestions=defer)
        conv = Converter(LineIndex(text), "utf-16", ClientFeatures(related_information=True))
        shown = analysis.findings[:MAX_DIAGNOSTICS]
        conv.diagnostics_text(shown, "file:///f.cfg").encode()

    analysis = cfg.analyse(text, ctx)
    empty = '{"Switch": {"GraphFusion": {}}}'
    empty_doc = cfg.parse(empty)
    unknown = Context()
    return {
        "findings": len(analysis.findings),
        "parse": median_ms(lambda: cfg.parse(text), runs),
        "check": median_ms(lambda: cfg.analyse(text, ctx), runs),
        "check+publish": median_ms(lambda: publish(ctx), runs),
        "unknown_findings": len(cfg.analyse(text, unknown).findings),
        "unknown_check+publish": median_ms(lambda: publish(unknown), max(runs // 3, 3)),
        # the first check in a catalogue: nothing searched before (a fresh copy each run)
        "unknown_first_plain": median_ms(lambda: publish(_fresh()), max(runs // 3, 3)),
        "unknown_first_deferred": median_ms(
            lambda: publish(_fresh(), defer=True), max(runs // 3, 3)
        ),
        "completion": median_ms(lambda: cfg.complete(analysis.document, offset, ctx), runs),
        "completion_items": len(cfg.complete(analysis.document, offset, ctx)),
        "completion_all": median_ms(lambda: cfg.complete(empty_doc, len(empty) - 3, ctx), runs),
        "completion_all_items": len(cfg.complete(empty_doc, len(empty) - 3, ctx)),
        "completion_all_json": median_ms(lambda: answer(empty_doc, len(empty) - 3, ctx), runs),
        "completion_all_attrs": median_ms(
            lambda: attrs_answer(empty_doc, len(empty) - 3, ctx), max(runs // 3, 3)
        ),
        "json.loads": median_ms(lambda: json.loads(text), runs),
        "symbols_one_line": median_ms(lambda: one_line_symbols(text), max(runs // 3, 3)),
    }


def one_line_symbols(text: str) -> None:
    """documentSymbol as the server answers it, for the document written on one line with
    non-ASCII names (each position counted in UTF-16 along a line of ~100 KB)."""
    members = json.loads(text)["Switch"]
    one_line = json.dumps(
        {"Switch": {s: {f"规{k}": v for k, v in m.items()} for s, m in members.items()}},
        ensure_ascii=False,
    )
    conv = Converter(LineIndex(one_line), "utf-16", ClientFeatures(hierarchical_symbols=True))
    [conv.document_symbol(symbol) for symbol in cfg.symbols(cfg.parse(one_line))]


def _converter(text: str) -> Converter:
    """A converter for VS Code's completion capabilities (snippets, markdown)."""
    client = ClientFeatures(snippets=True, completion_markdown=True)
    return Converter(LineIndex(text), "utf-16", client)


def answer(doc: cfg.CfgDocument, offset: int, ctx: Context) -> bytes:
    """What the server does for textDocument/completion (features/completion.py), up to the
    bytes it writes: the items and their JSON text."""
    conv = _converter(doc.text)
    return b"".join(completion_json(doc, offset, ctx, conv).pieces)


def attrs_answer(doc: cfg.CfgDocument, offset: int, ctx: Context) -> bytes:
    """The same answer the way the server gave it before issue 16's fourth round: lsprotocol
    objects per item, serialised by pygls (cattrs unstructure, then `json.dumps`)."""
    from pygls.protocol import default_converter

    conv = _converter(doc.text)
    items = cfg.complete(doc, offset, ctx, snippets=True)
    result = types.CompletionList(
        is_incomplete=False, items=[conv.completion_item(i) for i in items]
    )
    return json.dumps(default_converter().unstructure(result)).encode()


def _fresh() -> Context:
    """The built-in catalogue in a new object: no suggestion of it is cached yet."""
    from fusion_switch.catalogue import Catalogue, builtin_catalogue

    return Context(catalogue=builtin_catalogue().merged(Catalogue()))


def catalogue_file(ctx: Context, folder: Path) -> Path:
    """The synthetic rules as an extra catalogue file, for the server."""
    rules = [
        {"name": name, "section": "GraphFusion"}
        for name in ctx.catalogue.names("GraphFusion")
        if ctx.catalogue.get(name, "GraphFusion").origin == "synthetic"
    ]
    path = folder / "synthetic_rules.json"
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


def bench_jsonschema(text: str, runs: int) -> dict | None:
    if not SCHEMA.exists():
        return None
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    data = json.loads(text)
    return {
        "iter_errors": median_ms(lambda: list(validator.iter_errors(data)), runs),
        "loads+iter_errors": median_ms(lambda: list(validator.iter_errors(json.loads(text))), runs),
    }


# node reference ------------------------------------------------------------------------
def bench_node(text: str, runs: int) -> dict | str:
    if shutil.which("node") is None:
        return "node not on PATH"
    if not (NODE_DIR / "node_modules" / "vscode-json-languageservice").exists():
        return f"run `npm ci` in {NODE_DIR} first"
    if not SCHEMA.exists():
        return f"{SCHEMA} missing"
    member = probe(text)
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        proc = subprocess.run(
            [
                "node",
                str(NODE_DIR / "bench_json_ls.mjs"),
                f.name,
                str(SCHEMA),
                str(member.start(1) + 2),
                str(runs),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=NODE_DIR,
        )
    finally:
        Path(f.name).unlink()
    if proc.returncode != 0:
        return f"node failed: {proc.stderr.strip()[-500:]}"
    return json.loads(proc.stdout)


# over stdio ----------------------------------------------------------------------------
class _Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("bench", "0")
        self.published: dict[int, asyncio.Future] = {}
        # when each version's first publishDiagnostics was read and parsed as JSON, before
        # this client turns it into lsprotocol objects (cattrs: ~0.1 s for 2,000 diagnostics
        # on a loaded machine, a cost of the pygls client, not of the server)
        self.arrived: dict[int | None, float] = {}
        self.last_arrived: dict[int | None, float] = {}  # a version's last publish so far
        self.answered = 0.0  # when the last response was read and parsed as JSON
        structure = self.protocol.structure_message

        def timed(data: dict):
            if "result" in data and "id" in data:
                self.answered = time.perf_counter()
            if data.get("method") == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
                version = (data.get("params") or {}).get("version")
                self.arrived.setdefault(version, time.perf_counter())
                self.last_arrived[version] = time.perf_counter()
            return structure(data)

        self.protocol.structure_message = timed

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            future = self.published.get(params.version)
            if future is not None and not future.done():
                future.set_result(params)

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass


def _position(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def _start(options: dict | None = None) -> tuple[_Client, float]:
    client = _Client()
    t0 = time.perf_counter()
    await client.start_io(*SERVER)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            process_id=None,
            initialization_options=options,
        )
    )
    elapsed = (time.perf_counter() - t0) * 1000
    client.initialized(types.InitializedParams())
    return client, elapsed


async def _stop(client: _Client) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def bench_stdio(text: str, runs: int, starts: int, extra: Path) -> dict:
    start_times = []
    for _ in range(starts):
        client, elapsed = await _start()
        start_times.append(elapsed)
        await _stop(client)

    client, _ = await _start({"catalogue": {"extraFiles": [str(extra)]}})
    loop = asyncio.get_running_loop()
    uri = "file:///bench/fusion_switch.cfg"
    client.published[1] = loop.create_future()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="json", version=1, text=text)
        )
    )
    opened = await asyncio.wait_for(client.published[1], 30)

    member = probe(text)
    value_start, value_end = member.span(2)
    current = member.group(2)
    # Half the edits come after a quiet spell (the server checks such an edit at once: the
    # check + publish budget), half right after the last publish, which the server debounces
    # (one check per DEBOUNCE seconds while a file is edited, by design: issue 12).
    import psutil

    server = psutil.Process(client._server.pid)
    quiet_trips, debounced_trips, quiet_cpu = [], [], 0.0
    for version in range(2, 2 * runs + 4):
        quiet = version % 2 == 0
        if quiet:
            await asyncio.sleep(DEBOUNCE + 0.05)
            cpu_before = sum(server.cpu_times()[:2])
        new = "off" if current == "on" else "on"
        rng = types.Range(_position(text, value_start), _position(text, value_end))
        client.published[version] = loop.create_future()
        t0 = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new)],
            )
        )
        await asyncio.wait_for(client.published[version], 30)
        (quiet_trips if quiet else debounced_trips).append((time.perf_counter() - t0) * 1000)
        if quiet and version > 2:  # the first one warms up, as for the round trips
            quiet_cpu += sum(server.cpu_times()[:2]) - cpu_before
        text = text[:value_start] + new + text[value_end:]
        value_end = value_start + len(new)
        current = new

    position = _position(text, member.start(1) + 2)
    completion_times = []
    items = 0
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        result = await client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=position
            )
        )
        completion_times.append((time.perf_counter() - t0) * 1000)
        items = len(result.items) if result else 0
    all_times, all_cpu, all_items = await _complete_everything(client, runs)
    await _stop(client)
    return {
        "start": statistics.median(start_times),
        "round_trip": statistics.median(quiet_trips[1:]),
        "round_trip_debounced": statistics.median(debounced_trips[1:]),
        "round_trip_cpu": quiet_cpu * 1000 / max(1, len(quiet_trips) - 1),
        "completion": statistics.median(completion_times[1:]),
        "completion_items": items,
        "completion_all": statistics.median(all_times),
        "completion_all_cpu": all_cpu,
        "completion_all_items": all_items,
        "findings": len(opened.diagnostics),
    }


async def _complete_everything(client: _Client, runs: int) -> tuple[list[float], float, int]:
    """Completion in an empty GraphFusion section (every rule of the catalogue offered):
    round trips until the answer was read and parsed as JSON (before this pygls client turns
    5,001 items into lsprotocol objects, its own cost), and the server's CPU ms per request
    (reading the request, answering, writing; the load of other processes does not count)."""
    import psutil

    uri = "file:///bench/empty/fusion_switch.cfg"
    text = '{"Switch": {"GraphFusion": {}}}'
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="json", version=1, text=text)
        )
    )
    params = types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=_position(text, len(text) - 3)
    )
    result = await client.text_document_completion_async(params)  # warm-up
    server = psutil.Process(client._server.pid)
    times = []
    cpu_before = sum(server.cpu_times()[:2])
    for _ in range(runs):
        t0 = time.perf_counter()
        await client.text_document_completion_async(params)  # the only request in flight
        times.append((client.answered - t0) * 1000)
    cpu_ms = (sum(server.cpu_times()[:2]) - cpu_before) * 1000 / runs
    return times, cpu_ms, len(result.items) if result else 0


# start -> first diagnostics, against a bare pygls server -------------------------------
BARE_SERVER = """
import json
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls, params):
    document = params.text_document
    try:
        json.loads(document.text)
        message = "parsed"
    except ValueError as error:
        message = str(error)
    where = types.Range(types.Position(0, 0), types.Position(0, 1))
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=document.uri,
            version=document.version,
            diagnostics=[types.Diagnostic(range=where, message=message)],
        )
    )


server.start_io()
"""


# Prepended to a server's start (`python -c`): when the process first writes a
# publishDiagnostics to stdout, its CPU time so far goes to the file named by the
# FIRST_PUBLISH_CPU variable. It wraps stdout and imports nothing (importing pygls here would
# load lsprotocol before our server pauses the collector).
_FIRST_PUBLISH_HOOK = """
import os, sys, time
class _Stdout:
    def __init__(self, text):
        self._text, self.buffer = text, self
        self._raw, self._out = text.buffer, os.environ.get("FIRST_PUBLISH_CPU")
    def write(self, data):
        if self._out and b"textDocument/publishDiagnostics" in data:
            with open(self._out, "w") as f:
                f.write(repr(time.process_time() * 1000))
            self._out = None
        return self._raw.write(data)
    def flush(self):
        return self._raw.flush()
    def __getattr__(self, name):
        return getattr(self._raw, name)
sys.stdout = _Stdout(sys.stdout)
"""


def with_first_publish_cpu(script: str) -> list[str]:
    """A `python -c` command running `script` after `_FIRST_PUBLISH_HOOK`."""
    return [sys.executable, "-c", _FIRST_PUBLISH_HOOK + script]


# Instead: exit right after writing the first publishDiagnostics (for `--instructions`).
_EXIT_AT_FIRST_PUBLISH_HOOK = """
import os, sys
class _Stdout:
    def __init__(self, text):
        self._raw, self.buffer = text.buffer, self
    def write(self, data):
        written = self._raw.write(data)
        if b"textDocument/publishDiagnostics" in data:
            self._raw.flush()
            os._exit(0)
        return written
    def flush(self):
        return self._raw.flush()
    def __getattr__(self, name):
        return getattr(self._raw, name)
sys.stdout = _Stdout(sys.stdout)
"""


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream) -> dict | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        if line in (b"\r\n", b"\n") and length is not None:
            return json.loads(stream.read(length))


def instructions_to_first_publish(script: str, text: str) -> int | None:
    """Instructions (valgrind callgrind's Ir) a server runs from its start to writing the first
    publishDiagnostics of a file opened right after `initialized`: a count that does not
    depend on the machine's load (wall and CPU time on a shared machine do)."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={folder}/callgrind.out",
            sys.executable,
            "-c",
            _EXIT_AT_FIRST_PUBLISH_HOOK + script,
        ]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # same dict and set layouts every run
        )
        initialize = {"processId": None, "capabilities": {}}
        proc.stdin.write(
            _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        )
        proc.stdin.flush()
        while (message := _read_message(proc.stdout)) is not None and message.get("id") != 1:
            pass
        item = {"uri": "file:///bench/fusion_switch.cfg", "languageId": "json", "version": 1}
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        opened = {"textDocument": {**item, "text": text}}
        proc.stdin.write(
            _frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened})
        )
        proc.stdin.flush()
        while _read_message(proc.stdout) is not None:
            pass
        stderr = proc.stderr.read().decode(errors="replace")
        proc.wait()
    found = re.search(r"Collected : (\d+)", stderr)
    return int(found.group(1)) if found else None


def report_instructions(entries: int) -> int:
    """`--instructions`: ours and the bare server, the small and the 5,000-entry file."""
    if shutil.which("valgrind") is None:
        print("valgrind not on PATH (apt-get install valgrind)")
        return 1
    byte_compile()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(BARE_SERVER)
    servers = {
        "fusion-switch": "import runpy; sys.argv = ['fusion-switch', 'serve']; "
        "runpy.run_module('fusion_switch', run_name='__main__', alter_sys=True)",
        "bare pygls": f"import runpy; runpy.run_path({handle.name!r}, run_name='__main__')",
    }
    texts = {"small cfg": '{"Switch": {"GraphFusion": {"ALL": "on"}}}\n'}
    texts[f"{entries} entries"] = cfg.sample_document(entries)
    print("instructions from start to the first publishDiagnostics (callgrind, one run each)")
    try:
        for name, text in texts.items():
            counts = {who: instructions_to_first_publish(s, text) for who, s in servers.items()}
            ours, bare = counts["fusion-switch"], counts["bare pygls"]
            if ours is None or bare is None:
                print(f"  {name}: valgrind gave no count")
                continue
            print(
                f"  {name:<14} fusion-switch {ours / 1e6:8,.0f} M   bare pygls {bare / 1e6:8,.0f} M"
                f"   {ours / bare:5.3f}x"
            )
    finally:
        Path(handle.name).unlink()
    return 0


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


async def first_diagnostics(command: list[str], text: str) -> tuple[float, ...]:
    """ms from starting ``command`` to the first publishDiagnostics of a didOpen sent right
    after ``initialized`` (what a user waits for when opening the file): (arrived: read and
    parsed as JSON; handled: also turned into lsprotocol objects by this pygls client, as
    measured before issue 16's work; CPU ms the server process used from start to its exit
    right after; complete: the last publish of that version before the server answered
    `shutdown`, i.e. with the "did you mean" a file with many unknown names gets in a second
    publish; CPU ms the server had used when it wrote its first publish, if ``command`` was
    made by `with_first_publish_cpu`, else NaN). CPU time depends less on what else the
    machine runs, so it separates our cost from the load of a shared machine."""
    cpu_file = Path(tempfile.mkdtemp()) / "cpu"
    os.environ["FIRST_PUBLISH_CPU"] = str(cpu_file)
    cpu_before = _children_cpu_ms()
    client = _Client()
    loop = asyncio.get_running_loop()
    client.published[1] = loop.create_future()
    t0 = time.perf_counter()
    await client.start_io(*command)
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None)
    )
    client.initialized(types.InitializedParams())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri="file:///bench/fusion_switch.cfg", language_id="json", version=1, text=text
            )
        )
    )
    await asyncio.wait_for(client.published[1], 60)
    handled = (time.perf_counter() - t0) * 1000
    arrived = (client.arrived[1] - t0) * 1000
    await _stop(client)  # `shutdown` is answered after every publish already due
    complete = (client.last_arrived[1] - t0) * 1000
    first_cpu = float(cpu_file.read_text()) if cpu_file.exists() else float("nan")
    shutil.rmtree(cpu_file.parent, ignore_errors=True)
    return arrived, handled, _children_cpu_ms() - cpu_before, complete, first_cpu


FIRST_FIGURES = ("arrived", "handled", "cpu", "complete", "first_cpu")


async def bench_first(texts: dict[str, str], starts: int) -> dict[str, dict[str, float]]:
    """Per document: medians (and, with a `min_` prefix, minima) of wall and CPU ms, ours and
    the bare pygls server's, runs interleaved (so both see the same machine load); both
    servers start through `with_first_publish_cpu`, ours as `python -m fusion_switch serve`
    does (`runpy`), the bare one as `python FILE` does."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(BARE_SERVER)
    bare = with_first_publish_cpu(
        f"import runpy; runpy.run_path({handle.name!r}, run_name='__main__')"
    )
    ours_cmd = with_first_publish_cpu(
        "import runpy; sys.argv = ['fusion-switch', 'serve']; "
        "runpy.run_module('fusion_switch', run_name='__main__', alter_sys=True)"
    )
    try:
        out = {}
        for name, text in texts.items():
            ours, theirs = [], []
            for _ in range(starts):
                ours.append(await first_diagnostics(ours_cmd, text))
                theirs.append(await first_diagnostics(bare, text))
            out[name] = {
                f"{stat}{who}{what}": fn(run[i] for run in runs)
                for stat, fn in (("", statistics.median), ("min_", min))
                for who, runs in (("", ours), ("bare_", theirs))
                for i, what in enumerate(FIRST_FIGURES)
            }
        return out
    finally:
        Path(handle.name).unlink()


def start_costs() -> dict[str, float]:
    """Where start-up goes, each step in a fresh interpreter (ms), in the server's order:
    the command line, pygls + lsprotocol (the bare server's imports), our server, the
    catalogue, the first check of a small and of a 5,000-entry file (its first publish, then
    the deferred "did you mean" of the second), and which heavy libraries the first check
    imported (they should be none)."""
    script = """
import gc, json, sys, time
t = time.perf_counter()
marks = {}
from fusion_switch.cli import serve
marks["command line (editors' `serve`: no option parser)"] = time.perf_counter()
from fusion_switch.readers.collector import collector_paused
with collector_paused():  # as `serve` does
    import lsprotocol.types, pygls.lsp.server
    marks["import pygls + lsprotocol (collector paused; bare: on)"] = time.perf_counter()
    from fusion_switch.lsp.server import create_server
    server = create_server()
    marks["import + create our server (rest)"] = time.perf_counter()
server.state.preload()
marks["preload: catalogue, checks (while the client reads `initialize`)"] = time.perf_counter()
from fusion_switch import cfg
from fusion_switch.lsp.capabilities import ClientFeatures
from fusion_switch.lsp.convert import Converter
from fusion_switch.lsp.text import LineIndex
cfg.analyse(sys.argv[1], server.state.context(), defer_suggestions=True)
marks["first parse + check, small file"] = time.perf_counter()
big = cfg.sample_document(5000)
marks["(build the 5,000-entry text: not the server's)"] = time.perf_counter()
quick = cfg.analyse(big, server.state.context(), defer_suggestions=True)
marks["parse + check, 5,000 unknown names (1st publish)"] = time.perf_counter()
conv = Converter(LineIndex(big), "utf-16", ClientFeatures())
conv.diagnostics_text(quick.findings[:2000], "file:///x/fusion_switch.cfg")
marks["its 2,000 diagnostics as JSON text"] = time.perf_counter()
cfg.fill_suggestions(quick)
marks[f"did you mean, {len(quick.findings)} findings (2nd publish)"] = time.perf_counter()
last, out = t, {}
for name, at in marks.items():
    out[name] = (at - last) * 1000
    last = at
heavy = [m for m in ("jsonschema", "numpy") if m in sys.modules]
out["heavy imports: " + (", ".join(heavy) or "none")] = 0.0
print(json.dumps(out))
"""
    small = '{"Switch": {"GraphFusion": {"ALL": "on"}}}'
    done = subprocess.run(
        [sys.executable, "-c", script, small], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"(failed)": 0.0}
    return json.loads(done.stdout)


# report --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--starts", type=int, default=5, help="server starts to time")
    parser.add_argument("--first-only", action="store_true", help="only start -> first diagnostics")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="only the instructions each server runs until its first publish (valgrind; slow)",
    )
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="do not byte-compile fusion_switch before timing server starts",
    )
    args = parser.parse_args(argv)
    if args.instructions:
        return report_instructions(args.entries)
    if args.first_only:
        return report_first(args.entries, args.starts, args.from_source)

    text = cfg.sample_document(args.entries)
    print(
        f"document: {args.entries} entries, {len(text):,} characters, "
        f"{text.count(chr(10)) + 1:,} lines; medians of {args.runs} runs\n"
    )
    ctx = Context(catalogue=sample_catalogue(args.entries))
    ours = bench_in_process(text, args.runs, ctx)
    with tempfile.TemporaryDirectory() as folder:
        extra = catalogue_file(ctx, Path(folder))
        stdio = asyncio.run(bench_stdio(text, args.runs, args.starts, extra))
    ref_schema = bench_jsonschema(text, args.runs)
    node = bench_node(text, args.runs)

    def row(
        name: str,
        ms: float,
        budget: float | None = None,
        ref: float | None = None,
        ref_name: str = "",
    ) -> None:
        budget_s = f"{'ok' if ms <= budget else 'OVER'} (< {budget:g} ms)" if budget else ""
        ratio = f"{ms / ref:5.2f}x {ref_name} ({ref:.2f} ms)" if ref else ""
        print(f"  {name:<58} {ms:9.2f} ms  {budget_s:<18} {ratio}")

    node_ok = isinstance(node, dict)
    print("fusion-switch, in process")
    row("parse", ours["parse"])
    row(
        f"parse + check ({ours['findings']} findings)",
        ours["check"],
        ref=node["validate_ms"] if node_ok else None,
        ref_name="json-ls",
    )
    row(
        "parse + check + publish (LSP diagnostics, JSON)",
        ours["check+publish"],
        BUDGETS_MS["check+publish"],
        node["validate_ms"] if node_ok else None,
        "json-ls",
    )
    row(
        f"completion in a key ({ours['completion_items']} items)",
        ours["completion"],
        BUDGETS_MS["completion"],
        node["complete_ms"] if node_ok else None,
        "json-ls",
    )
    row(
        f"completion, empty section ({ours['completion_all_items']} items), as the server answers",
        ours["completion_all_json"],
        BUDGETS_MS["completion"],
    )
    row(
        "  the same as lsprotocol objects + cattrs (the server before)",
        ours["completion_all_attrs"],
    )
    row("  the same as a list of cfg.Completion (`cfg.complete`)", ours["completion_all"])
    row(
        f"worst case, all names unknown ({ours['unknown_findings']} findings): publish",
        ours["unknown_check+publish"],
    )
    row("  the same, first check (no name searched before)", ours["unknown_first_plain"])
    row(
        "  the same, first check, first publish (did you mean deferred)",
        ours["unknown_first_deferred"],
    )
    row("document symbols, the document on one line, non-ASCII names", ours["symbols_one_line"])
    print("fusion-switch serve, over stdio")
    # the start's budget is relative (issue 16): against a bare pygls server, below; importing
    # pygls and lsprotocol alone takes 0.3-0.5 s on this kind of machine
    row("server start -> initialize reply (budget: below)", stdio["start"])
    row(
        f"didChange after a quiet spell -> publishDiagnostics ({stdio['findings']} diagnostics)",
        stdio["round_trip"],
        BUDGETS_MS["check+publish"],
    )
    row("  server CPU per such edit (read, apply, check, publish)", stdio["round_trip_cpu"])
    row(
        f"  the same right after the last publish (debounced: one check per {DEBOUNCE:g} s)",
        stdio["round_trip_debounced"],
    )
    row(f"completion request ({stdio['completion_items']} items)", stdio["completion"])
    row(
        f"completion request ({stdio['completion_all_items']} items), round trip to JSON parsed",
        stdio["completion_all"],
    )
    row(
        "  server CPU per such request (read, answer, write)",
        stdio["completion_all_cpu"],
        BUDGETS_MS["completion"],
    )
    print("references, same document, same machine, same run")
    if node_ok:
        row(
            f"json-ls parse + doValidation ({node['diagnostics']} diagnostics)", node["validate_ms"]
        )
        row(f"json-ls doComplete ({node['completion_items']} items)", node["complete_ms"])
    else:
        print(f"  vscode-json-languageservice: skipped ({node})")
    if ref_schema:
        row("python-jsonschema iter_errors", ref_schema["iter_errors"])
        row("python-jsonschema json.loads + iter_errors", ref_schema["loads+iter_errors"])
    else:
        print(f"  python-jsonschema: skipped ({SCHEMA} missing)")
    row("json.loads", ours["json.loads"])
    row(
        "document symbols, the same document on one line, non-ASCII names", ours["symbols_one_line"]
    )
    print()
    return report_first(args.entries, args.starts, args.from_source)


def byte_compile() -> None:
    """Write fusion_switch's bytecode (__pycache__, git-ignored), as pip does when it installs
    a package: otherwise, with PYTHONDONTWRITEBYTECODE set, every start of the server would
    compile our sources again while pygls and lsprotocol load compiled code, which is not what
    a user's editor runs."""
    import compileall

    import fusion_switch

    compileall.compile_dir(Path(fusion_switch.__file__).parent, quiet=1, force=False)


def report_first(entries: int, starts: int, from_source: bool = False) -> int:
    """Issue 16: server start -> first diagnostics within 1.25x of a bare pygls server."""
    if from_source:
        print("fusion_switch runs from source (compiled again at every start)")
    else:
        byte_compile()
        print("fusion_switch byte-compiled first, as an installed package is")
    big = cfg.sample_document(entries)  # names unknown to the built-in catalogue
    texts = {"small cfg": '{"Switch": {"GraphFusion": {"ALL": "on"}}}\n', f"{entries} entries": big}
    firsts = asyncio.run(bench_first(texts, starts))
    print(
        f"start -> first diagnostics over stdio (medians of {starts}, interleaved; "
        "budget: arrived <= 1.25x)"
    )
    labels = {
        "arrived": "arrived (JSON parsed)",
        "handled": "handled by the pygls client",
        "first_cpu": "server CPU, start to publish",
        "cpu": "server CPU, start to exit",
        "complete": "complete (last publish)",
    }
    for name, m in firsts.items():
        print(f"  {name}")
        for what, label in labels.items():
            ours, bare = m[what], m[f"bare_{what}"]
            ratio = ours / bare
            verdict = ("ok" if ratio <= 1.25 else "OVER") if what == "arrived" else ""
            low = m[f"min_{what}"] / m[f"min_bare_{what}"]
            print(
                f"    {label:<28} fusion-switch {ours:7.1f} ms   bare pygls {bare:7.1f} ms   "
                f"{ratio:5.2f}x {verdict:<4} (minima: {low:4.2f}x)"
            )
    print("where start-up goes (one fresh interpreter, steps in order)")
    for step, ms in start_costs().items():
        print(f"  {step:<58} {ms:7.1f} ms" if ms else f"  {step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Issue 16: what `fusion-switch serve` imports before its first diagnostics.

The real server runs as a subprocess (the command line's `main(["serve"])`, as the
`fusion-switch` script runs it) that writes the names of every module it imported to a file
when it exits; a pygls client drives it over stdio. The first check of a valid file must not
import jsonschema, numpy or the recipe's command modules; a file with a schema error, or a
recipe command, imports them when needed, and the diagnostics are the ones the pure layer
gives in process.

A file with many unknown names is published twice: first every finding, without the "did
you mean" of those names, then (the search done) exactly what the pure layer gives.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from fusion_switch.cfg import analyse
from fusion_switch.lsp.capabilities import ClientFeatures
from fusion_switch.lsp.convert import Converter
from fusion_switch.lsp.text import LineIndex
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

VALID = '{"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPas": "on"}}}\n'
INVALID = '{"Switch": {"GraphFusion": {"X": "On"}, "Graph": {}}, "Extra": []}\n'
LAZY = (
    "jsonschema",
    "numpy",
    "fusion_switch.lsp.recipe.comparing",
    "fusion_switch.lsp.recipe.bisecting",
    "fusion_switch.lsp.recipe.editing",
)
# `fusion-switch serve`, writing sorted(sys.modules) as JSON to argv[1] at exit, and the
# collector's state (enabled, objects frozen by the start-up) to argv[1] + ".gc"
LAUNCH = (
    "import atexit, gc, json, sys; out = sys.argv[1]; "
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules)))); "
    "atexit.register(lambda: open(out + '.gc', 'w').write("
    "json.dumps([gc.isenabled(), gc.get_freeze_count()]))); "
    "from fusion_switch.cli import main; sys.exit(main(['serve']))"
)


class _Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("startup-test", "0")
        self.published: dict[str, asyncio.Future] = {}
        self.every: dict[str, list[types.PublishDiagnosticsParams]] = {}  # all, in order
        self.second: dict[str, asyncio.Future] = {}

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self.every.setdefault(params.uri, []).append(params)
            future = self.published.get(params.uri)
            if future is not None and not future.done():
                future.set_result(params)
            elif (later := self.second.get(params.uri)) is not None and not later.done():
                later.set_result(params)

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(params: types.ShowMessageParams) -> None:
            pass


async def _open(client: _Client, name: str, text: str) -> list[types.Diagnostic]:
    uri = f"file:///startup/{name}/fusion_switch.cfg"
    client.published[uri] = asyncio.get_running_loop().create_future()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="json", version=1, text=text)
        )
    )
    return (await asyncio.wait_for(client.published[uri], 30)).diagnostics


async def _session(log_path, steps) -> set[str]:
    """Start the server, run `steps(client)`, stop it; the modules it imported."""
    client = _Client()
    await client.start_io(sys.executable, "-c", LAUNCH, str(log_path))
    try:
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None)
        )
        client.initialized(types.InitializedParams())
        await steps(client)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
    return set(json.loads(log_path.read_text(encoding="utf-8")))


def _expected(text: str) -> list:
    """The diagnostics the pure layer gives in process, as the protocol's JSON."""
    conv = Converter(LineIndex(text), "utf-16", ClientFeatures())
    serialiser = default_converter()
    found = [conv.diagnostic(f, "file:///x") for f in analyse(text).findings]
    return json.loads(json.dumps(serialiser.unstructure(found)))


def _as_json(diagnostics: list[types.Diagnostic]) -> list:
    return json.loads(json.dumps(default_converter().unstructure(diagnostics)))


def test_the_first_check_of_a_valid_file_imports_nothing_heavy(tmp_path):
    received = {}

    async def steps(client):
        received["valid"] = await _open(client, "valid", VALID)

    modules = asyncio.run(_session(tmp_path / "modules.json", steps))
    assert "fusion_switch.cfg.analysis" in modules  # the check ran in this process
    assert [m for m in LAZY if m in modules] == []
    # the command line registered `serve` only: no other sub-command's module or imports
    cli = sorted(m for m in modules if m.startswith("fusion_switch.cli."))
    assert cli == ["fusion_switch.cli.serve"]
    assert "argparse" not in modules  # what editors run needs no option parsing
    assert "fusion_switch.synth.faults" not in modules  # cli/demo.py's
    assert "fusion_switch.workflow.wiring" not in modules  # cli/wire.py's
    assert _as_json(received["valid"]) == _expected(VALID)
    assert {d.code for d in received["valid"]} == {"unknown-rule", "all-overridden"}
    unknown = [d for d in received["valid"] if d.code == "unknown-rule"]
    assert "Did you mean ConvBatchnormFusionPass or" in unknown[0].message


def test_lazy_parts_load_when_needed_with_the_same_results(tmp_path):
    received = {}

    async def steps(client):
        received["invalid"] = await _open(client, "invalid", INVALID)
        received["command"] = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fusionSwitch.allOff", arguments=[{}])
        )

    modules = asyncio.run(_session(tmp_path / "modules.json", steps))
    assert "jsonschema" in modules  # asked for the schema errors
    assert "fusion_switch.lsp.recipe.editing" in modules  # the command's module, on first use
    assert "numpy" not in modules
    assert _as_json(received["invalid"]) == _expected(INVALID)
    codes = {d.code for d in received["invalid"]}
    assert {"unknown-section", "unknown-top-level-key", "invalid-switch-value"} <= codes
    # the real allOff ran: this client cannot apply edits, which it says
    assert "does not let the server edit files" in received["command"]["error"]


@pytest.mark.parametrize("module", ["bisecting", "comparing", "editing"])
def test_the_command_table_names_each_modules_commands(module):
    """commands.RECIPE says which module defines each recipe command; importing a module
    replaces exactly its commands' placeholders (checked in a fresh interpreter)."""
    import subprocess

    script = f"""
import json
from fusion_switch.lsp import command_registry, commands
before = {{n: command_registry.handler(n) for n in commands.names()}}
import fusion_switch.lsp.recipe.{module}
changed = [n for n in commands.names() if command_registry.handler(n) is not before[n]]
print(json.dumps([changed, commands.names()]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    changed, names = json.loads(done.stdout)
    from fusion_switch.lsp import commands

    assert changed == [n for n, m in commands.RECIPE.items() if m == module]
    assert names == ["fusionSwitch.reloadCatalogue", *commands.RECIPE]


async def _hover(client: _Client, uri: str) -> None:
    await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 30))
        ),
        30,
    )


def _typo_document(count: int) -> str:
    """`count` GraphFusion names with one letter dropped (each has a close real name), plus
    names with no close one."""
    from fusion_switch.catalogue import builtin_catalogue

    names = builtin_catalogue().names("GraphFusion")[:count]
    entries = [f'"{n[:-3] + n[-2:]}": "on"' for n in names]
    entries += [f'"NoSuchName{i:03d}Anywhere": "off"' for i in range(count)]
    return '{"Switch": {"GraphFusion": {' + ", ".join(entries) + "}}}\n"


def test_many_unknown_names_publish_findings_first_then_suggestions(tmp_path):
    from fusion_switch.cfg.analysis import DEFER_ABOVE

    text = _typo_document(3 * DEFER_ABOVE)
    uri = "file:///startup/typos/fusion_switch.cfg"
    received = {}

    async def steps(client):
        client.second[uri] = asyncio.get_running_loop().create_future()
        received["first"] = await _open(client, "typos", text)
        try:
            received["final"] = (await asyncio.wait_for(client.second[uri], 30)).diagnostics
        except TimeoutError:  # shut the server down normally; the asserts say what is missing
            received["final"] = []
        # a request answered after both: no third publish was pending
        await _hover(client, uri)
        received["count"] = len(client.every[uri])
        received["versions"] = {p.version for p in client.every[uri]}

    asyncio.run(_session(tmp_path / "modules.json", steps))
    expected = _expected(text)
    first, final = _as_json(received["first"]), _as_json(received["final"])
    assert received["count"] == 2 and received["versions"] == {1}
    assert final == expected
    # the first publish: the same findings at the same places, hints missing
    assert [(d["code"], d["range"]) for d in first] == [(d["code"], d["range"]) for d in final]
    hinted = [i for i, d in enumerate(final) if "Did you mean" in d["message"]]
    assert len(hinted) >= 3 * DEFER_ABOVE
    assert not any("Did you mean" in first[i]["message"] for i in hinted)
    assert all(first[i]["data"]["suggestions"] == [] for i in hinted)
    same = [i for i in range(len(final)) if i not in set(hinted)]
    assert same and all(first[i] == final[i] for i in same)


def test_a_few_unknown_names_are_published_once_with_their_suggestions(tmp_path):
    from fusion_switch.cfg.analysis import DEFER_ABOVE

    text = _typo_document(DEFER_ABOVE // 2)
    uri = "file:///startup/few/fusion_switch.cfg"
    received = {}

    async def steps(client):
        received["first"] = await _open(client, "few", text)
        await _hover(client, uri)
        received["count"] = len(client.every[uri])

    asyncio.run(_session(tmp_path / "modules.json", steps))
    assert received["count"] == 1
    assert _as_json(received["first"]) == _expected(text)
    assert sum("Did you mean" in d.message for d in received["first"]) >= DEFER_ABOVE // 2


def test_the_collector_is_back_on_after_start_up_with_start_up_objects_frozen(tmp_path):
    """Start-up runs without the cyclic garbage collector (its full collections rescanned
    lsprotocol's thousands of classes, tens of ms, for nothing to free); afterwards it is on
    again, and what start-up built is frozen so later full collections skip it too."""
    received = {}

    async def steps(client):
        received["valid"] = await _open(client, "valid", VALID)

    modules = asyncio.run(_session(tmp_path / "modules.json", steps))
    enabled, frozen = json.loads((tmp_path / "modules.json.gc").read_text(encoding="utf-8"))
    assert enabled is True
    assert frozen > 10_000  # lsprotocol's classes and our modules, at least
    assert "lsprotocol.types" in modules
    assert _as_json(received["valid"]) == _expected(VALID)


def test_the_checks_and_the_catalogue_load_right_after_initialize(tmp_path):
    """While the client reads the `initialize` answer and sends `initialized` and `didOpen`,
    the server loads what the first check needs: with no document opened at all they are in
    (the session ends long before the warm-up, `WARM_UP_DELAY` after `initialized`, would
    load them)."""

    async def steps(client):
        pass

    modules = asyncio.run(_session(tmp_path / "modules.json", steps))
    assert {"fusion_switch.cfg.analysis", "fusion_switch.cfg.suggest"} <= set(modules)
    assert "fusion_switch.workflow.results" in modules  # where a comparison's results are read
    assert [m for m in LAZY if m in modules] == []


def test_a_name_beyond_ascii_arrives_intact(tmp_path):
    """The publish message is written as text the server builds: its Content-Length counts
    bytes, and every character of a name from the file comes back unchanged."""
    text = '{"Switch": {"GraphFusion": {"Conv注😀\\"Pass": "on", "é": "off"}}}\n'
    received = {}

    async def steps(client):
        received["odd"] = await _open(client, "odd", text)

    asyncio.run(_session(tmp_path / "modules.json", steps))
    assert _as_json(received["odd"]) == _expected(text)
    assert {d.data["name"] for d in received["odd"]} == {'Conv注😀"Pass', "é"}

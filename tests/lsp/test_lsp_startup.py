"""Issue 16: what `fusion-switch serve` imports before its first diagnostics.

The real server runs as a subprocess (the command line's `main(["serve"])`, as the
`fusion-switch` script runs it) that writes the names of every module it imported to a file
when it exits; a pygls client drives it over stdio. The first check of a valid file must not
import jsonschema, numpy or the recipe's command modules; a file with a schema error, or a
recipe command, imports them when needed, and the diagnostics are the ones the pure layer
gives in process.
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
# `fusion-switch serve`, writing sorted(sys.modules) as JSON to argv[1] at exit
LAUNCH = (
    "import atexit, json, sys; out = sys.argv[1]; "
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules)))); "
    "from fusion_switch.cli import main; sys.exit(main(['serve']))"
)


class _Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("startup-test", "0")
        self.published: dict[str, asyncio.Future] = {}

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            future = self.published.get(params.uri)
            if future is not None and not future.done():
                future.set_result(params)

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

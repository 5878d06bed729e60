"""An answer computed while the document moved on must fit the text it was asked for, or be
none (a review of the language server). A request on a large document waits for its analysis
on a thread; an edit arriving meanwhile was mixed into the answer:
- formatting diffed the *newer* text against the formatting of the older one, with the older
  text's positions: applied to either version the edit broke the JSON and could delete the
  line just typed;
- a code action labelled its edit with the *newer* version while its ranges came from the
  older text: a client that checks versions (VS Code, Neovim) deleted the wrong entry.
Driven in process through pygls's dispatch; the analysis is made to finish only after the
edit has been applied, which is the interleaving the review hit over stdio."""

from __future__ import annotations

import asyncio
import json

from in_process import connected, reply

N = 20_000  # ~370 KB: a large document, analysed on a thread
LINES = [f'"Rule{i}": "on"' for i in range(N)]
LINES[3] = '"Rule1": "off"'  # a duplicate key on line 4
TEXT = '{"Switch": {"GraphFusion": {\n' + ",\n".join(LINES) + "\n}}}\n"
URI = "file:///tmp/moved/fusion_switch.cfg"
INSERT = {
    "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}},
    "text": '"Inserted": "off",\n',
}


async def _answer(writer, msg_id: int) -> dict:
    for _ in range(6000):
        for message in writer.messages:
            if message.get("id") == msg_id and "method" not in message:
                return message
        await asyncio.sleep(0.01)
    raise AssertionError("no answer")


async def _opened(text: str, uri: str = URI):
    """A server in process, initialised, with ``text`` open at ``uri``: (server, writer, send)."""
    server, writer, send = connected()
    send("initialize", {"capabilities": _capabilities(), "processId": None, "rootUri": None}, 1)
    await asyncio.sleep(0.05)
    item = {"uri": uri, "languageId": "json", "version": 1, "text": text}
    send("textDocument/didOpen", {"textDocument": item})
    return server, writer, send


def _edit_while_analysed(server, send, uri: str, waited_for: str = "analysis_async"):
    """Make the next waits for the document's analysis (``waited_for``: or for its syntax
    tree, "document_async") apply an edit (version 2) before they return what was asked for
    the older text; a function that puts the original back."""
    state = server.state
    original = getattr(state, waited_for)

    async def then_edit(doc):
        found = await original(doc)  # for the text the request was asked for
        send("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                         "contentChanges": [INSERT]})  # fmt: skip
        return found

    setattr(state, waited_for, then_edit)
    return lambda: setattr(state, waited_for, original)


def _cfg_with_suspect(tmp_path, text: str) -> str:
    """A cfg holding ``text`` and a saved comparison proving Rule7 guilty: its URI."""
    from fusion_switch.workflow.results import save_results

    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(text)
    suspect = {"rule": "Rule7", "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
    save_results(cfg, {"verdict": "proven by replay: Rule7", "suspects": [suspect]})
    return cfg.as_uri()


async def _edited_while_analysed(
    method: str, params: dict, waited_for: str = "analysis_async"
) -> dict:
    """Open TEXT, ask ``method``, and apply an edit (version 2) while what it waits for
    (``waited_for``, see `_edit_while_analysed`) is computed."""
    server, writer, send = await _opened(TEXT)
    put_back = _edit_while_analysed(server, send, URI, waited_for)
    send(method, {"textDocument": {"uri": URI}, **params}, 7)
    answer = await _answer(writer, 7)
    put_back()
    assert "error" not in answer, answer
    return answer["result"]


async def _applying_edits(server, writer, msg_id: int) -> None:
    """The client's side until request ``msg_id`` is answered: every edit the server asks
    for is applied."""
    answered: set = set()
    for _ in range(3000):
        for message in list(writer.messages):
            if message.get("method") == "workspace/applyEdit" and message["id"] not in answered:
                answered.add(message["id"])
                reply(server, message["id"], {"applied": True})
        if any(m.get("id") == msg_id and "method" not in m for m in writer.messages):
            return
        await asyncio.sleep(0.01)


def _capabilities() -> dict:
    edit = {"documentChanges": True}
    workspace = {"workspaceEdit": edit, "applyEdit": True}
    return {"workspace": workspace, "textDocument": {"codeAction": {}}}


async def test_formatting_answers_for_the_text_it_was_asked_for_or_not_at_all():
    edits = await _edited_while_analysed(
        "textDocument/formatting",
        {"options": {"tabSize": 2, "insertSpaces": True}},
        "document_async",  # formatting reads the syntax tree only
    )
    assert edits == [], edits  # the document moved on: the editor asks again


async def test_a_code_action_never_labels_the_old_text_s_ranges_with_a_new_version():
    duplicate = {
        "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 7}},
        "message": "Duplicate key 'Rule1'",
        "code": "duplicate-key",
        "source": "fusion-switch",
        "severity": 2,
    }
    actions = await _edited_while_analysed(
        "textDocument/codeAction",
        {
            "range": duplicate["range"],
            "context": {"diagnostics": [duplicate]},
        },
    )
    for action in actions or []:
        for change in action["edit"]["documentChanges"]:
            assert change["textDocument"]["version"] == 1, json.dumps(action)[:400]


async def test_apply_suspects_never_writes_an_older_text_over_a_newer_one(tmp_path):
    """applySuspects computed its edits on the analysed text and applied them to the buffer's
    current one (a review, by reading): an edit typed meanwhile met edits with other
    offsets. It now says the file changed and applies nothing."""
    uri = _cfg_with_suspect(tmp_path, TEXT)
    server, writer, send = await _opened(TEXT, uri)
    put_back = _edit_while_analysed(server, send, uri)
    command = {"command": "fusionSwitch.applySuspects", "arguments": [{"cfgUri": uri}]}
    send("workspace/executeCommand", command, 9)
    await _applying_edits(server, writer, 9)
    answer = await _answer(writer, 9)
    put_back()
    edits = [m for m in writer.messages if m.get("method") == "workspace/applyEdit"]
    typed = _typed(TEXT)
    for request in edits:  # applied to the buffer's text (version 2), the result is right
        for change in request["params"]["edit"].get("documentChanges", []):
            assert change["textDocument"]["version"] == 2
            after = json.loads(_applied(typed, change["edits"]))["Switch"]["GraphFusion"]
            assert after["Rule7"] == "off" and after["Inserted"] == "off", after
    assert edits or "changed" in json.dumps(answer), answer


def _typed(text: str) -> str:
    first = text.index("\n") + 1
    return text[:first] + INSERT["text"] + text[first:]


def _applied(text: str, edits: list[dict]) -> str:
    """``edits`` (line/character positions; ASCII text) applied to ``text``."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def offset(position: dict) -> int:
        return starts[position["line"]] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
    return text


async def test_apply_suspects_says_when_a_section_stays_all_off(tmp_path):
    """As `apply` on the command line: an all-off file edited since 'all off' wrote it is not
    taken for the recipe's first step (matched byte for byte), and the rules went in beside
    "ALL": "off" without a word, all fusion staying off (a review)."""
    text = '{\n\t"Switch": {\n\t\t"GraphFusion": {\n\t\t\t"ALL": "off"\n\t\t}\n\t}\n}\n'
    uri = _cfg_with_suspect(tmp_path, text)
    server, writer, send = await _opened(text, uri)
    command = {"command": "fusionSwitch.applySuspects", "arguments": [{"cfgUri": uri}]}
    send("workspace/executeCommand", command, 9)
    await _applying_edits(server, writer, 9)
    shown = [
        m["params"]["message"] for m in writer.messages if m.get("method") == "window/showMessage"
    ]
    assert any('"ALL": "off"' in m and "GraphFusion" in m for m in shown), shown

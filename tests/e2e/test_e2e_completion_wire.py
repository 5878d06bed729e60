"""Completion over stdio: each emulated client receives, byte for byte in meaning and key
order, the JSON the in-process completion writes for its capabilities (issue 16: the server
now writes completion lists as text; `tests/lsp/test_completion_identity.py` pins that text
to what the lsprotocol objects gave before)."""

from __future__ import annotations

import json

import pytest
from e2e_support import Session
from fusion_switch import cfg
from fusion_switch.cfg.model import Context
from fusion_switch.lsp.capabilities import ClientFeatures
from fusion_switch.lsp.convert import Converter
from fusion_switch.lsp.features.completion import completion_json
from fusion_switch.lsp.text import LineIndex
from lsprotocol import types
from pytest_lsp import client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="module")

CASES = {
    "section": '{"Switch": {"GraphFusion": {|}}}',
    "in-quotes": '{\n  "Switch": {\n    "UBFusion": {"ALL": "on", "Tbe|"}\n  }\n}',
    "value": '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "o|"}}}',
    "non-ascii": '{"Switch": {"GraphFusion": {"é😀注": "on", |\n "X": "off"}}}',
    "lines": "ConvBatchnormFusionPass:on\n|",
}


def _position(text: str, offset: int, encoding: str) -> types.Position:
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    part = text[start:offset]
    if encoding == "utf-8":
        return types.Position(line, len(part.encode("utf-8")))
    if encoding == "utf-32":
        return types.Position(line, len(part))
    return types.Position(line, len(part.encode("utf-16-le")) // 2)


@pytest.mark.parametrize("case", list(CASES))
async def test_the_client_receives_the_in_process_completion_json(
    session: Session, case: str
) -> None:
    marked = CASES[case]
    offset = marked.index("|")
    text = marked.replace("|", "", 1)
    uri = session.open(f"wire/{case}/fusion_switch.cfg", text)
    received: list[dict] = []
    protocol = session.client.protocol
    structure = protocol.structure_message

    def keep(data: dict):
        if "result" in data and isinstance(data["result"], dict) and "items" in data["result"]:
            received.append(data["result"])
        return structure(data)

    protocol.structure_message = keep
    try:
        result = await session.client.text_document_completion_async(
            types.CompletionParams(
                types.TextDocumentIdentifier(uri), _position(text, offset, session.encoding)
            )
        )
    finally:
        protocol.structure_message = structure
    client = ClientFeatures.from_capabilities(client_capabilities(session.name))
    conv = Converter(LineIndex(text), session.encoding, client)
    expected = json.loads(str(completion_json(cfg.parse(text), offset, Context(), conv)))
    assert len(received) == 1 and expected["items"]
    assert json.dumps(received[0]) == json.dumps(expected)
    assert len(result.items) == len(expected["items"])  # and the client could read it

"""applySuspects on a configuration in the old line format, for a rule GE registers itself:
GE's pass executor reads switches from JSON only, so the file is rewritten as JSON (a review,
forty-first round: a `Name:off` line left such a pass on while the editor said it was off)."""

from __future__ import annotations

import json

from fusion_switch.workflow.results import save_results
from test_lsp_moved_document import _answer, _applying_edits, _opened

GE_PASS = "AddRmsNormDynamicQuantV2FusionPass"  # REG_FUSION_PASS: run by GE's executor


async def test_a_ge_pass_applied_to_a_line_format_file_makes_it_json(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    text = "AAMatMulNzToNdFusionPass:off\nALL:on\n"
    cfg.write_text(text)
    suspect = {"rule": GE_PASS, "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
    save_results(cfg, {"verdict": f"proven by replay: {GE_PASS}", "suspects": [suspect]})
    server, writer, send = await _opened(text, cfg.as_uri())
    command = {"command": "fusionSwitch.applySuspects", "arguments": [{"cfgUri": cfg.as_uri()}]}
    send("workspace/executeCommand", command, 9)
    await _applying_edits(server, writer, 9)
    answer = await _answer(writer, 9)
    assert answer.get("result", {}).get("applied") is True, answer
    [request] = [m for m in writer.messages if m.get("method") == "workspace/applyEdit"]
    (change,) = request["params"]["edit"]["documentChanges"]
    (edit,) = change["edits"]  # the whole text, as JSON
    assert edit["range"]["start"] == {"line": 0, "character": 0}
    switch = json.loads(edit["newText"])["Switch"]
    assert switch["GraphFusion"][GE_PASS] == "off"
    assert switch["GraphFusion"]["AAMatMulNzToNdFusionPass"] == "off"
    said = [m for m in writer.messages if m.get("method") == "window/showMessage"]
    assert any("JSON" in m["params"]["message"] for m in said), said

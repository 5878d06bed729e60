"""The built .vsix in a real VS Code (code-server) driven like a user: issue 15.

Each step leaves a screenshot in the artefacts folder (see conftest.py), named by test and step.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from code_server import CodeServer, make_workspace

RULE = "ConvBatchnormFusionPass"
CFG = (
    "{\n"
    '  "Switch": {\n'
    '    "GraphFusion": {\n'
    '      "ConvBatchnormFusionPas": "off",\n'
    '      "ALL": "on"\n'
    "    },\n"
    '    "UBFusion": {\n'
    '      "TbeEltwiseFusionPass": "on"\n'
    "    }\n"
    "  }\n"
    "}\n"
)
TIMEOUT = 60_000


@pytest.fixture(scope="module")
def vscode(tmp_path_factory, browser, artifacts):
    tmp = tmp_path_factory.mktemp("code-server")
    folder = make_workspace(tmp, {"fusion_switch.cfg": CFG})
    server = CodeServer(tmp, {"fusionSwitch.target": "Ascend910B1"})
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(TIMEOUT)
    page.goto(server.url(folder))
    page.wait_for_selector(".monaco-workbench", timeout=120_000)
    ui = Ui(page, folder, artifacts)
    ui.open_file("fusion_switch.cfg")
    yield ui
    page.close()
    server.stop()


class Ui:
    def __init__(self, page, folder: Path, artifacts: Path) -> None:
        self.page = page
        self.folder = folder
        self.artifacts = artifacts

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.artifacts / f"{name}.png"))

    def palette(self, command: str) -> None:
        self.page.bring_to_front()  # a command may have opened another tab (the report)
        self.page.keyboard.press("Escape")
        self.page.locator(".part.statusbar").click(position={"x": 2, "y": 2})  # focus the window
        self.page.keyboard.press("Control+Shift+P")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(">" + command)
        self.page.locator(".quick-input-list .monaco-list-row").first.wait_for()
        self.page.keyboard.press("Enter")

    def open_file(self, name: str) -> None:
        self.page.keyboard.press("Control+P")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(name)
        self.page.locator(".quick-input-list .monaco-list-row").first.wait_for()
        self.page.keyboard.press("Enter")
        self.page.locator(".monaco-editor .view-lines").first.wait_for()

    def editor_text(self) -> str:
        return (self.folder / "fusion_switch.cfg").read_text(encoding="utf-8")

    def go_to(self, line: int, column: int) -> None:
        self.page.keyboard.press("Control+G")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(f":{line}:{column}")
        self.page.keyboard.press("Enter")

    def save(self) -> None:
        self.page.keyboard.press("Control+S")
        self.page.wait_for_timeout(500)

    def output_text(self) -> str:
        self.palette("Fusion Switch: Show Language Server Output")
        view = self.page.locator(".output-view, .panel .monaco-editor .view-lines").first
        view.wait_for()
        self.page.wait_for_timeout(500)
        return self.page.locator(".panel .monaco-editor .view-lines").first.inner_text()


def test_diagnostics_squiggle_and_problems_panel(vscode):
    page = vscode.page
    page.locator(".squiggly-warning, .squiggly-error").first.wait_for()
    vscode.shot("01-squiggle")
    page.keyboard.press("Control+Shift+M")
    rows = page.locator(".markers-panel .monaco-list-row")
    rows.first.wait_for()
    text = page.locator(".markers-panel").inner_text()
    vscode.shot("02-problems-panel")
    assert "unknown-rule" in text
    assert "Did you mean ConvBatchnormFusionPass" in text
    assert re.search(r"\[Ln 4, Col 7\]", text), text


def test_quick_fix_replaces_the_misspelt_name(vscode):
    page = vscode.page
    vscode.go_to(4, 10)
    page.keyboard.press("Control+.")
    page.locator(".action-widget .monaco-list-row", has_text=RULE).first.wait_for()
    vscode.shot("03-quick-fix-menu")
    for _ in range(6):  # move the selection to our fix, as a keyboard user does
        if RULE in page.locator(".action-widget .monaco-list-row.focused").inner_text():
            break
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.locator(".view-line", has_text=f'"{RULE}": "off"').first.wait_for()
    vscode.save()
    assert f'"{RULE}": "off"' in vscode.editor_text()
    vscode.shot("04-quick-fix-applied")


def test_hover_shows_the_rule_and_its_cann_component(vscode):
    page = vscode.page
    token = page.locator(".view-line span", has_text="TbeEltwiseFusionPass").first
    token.hover()
    hover = page.locator(".monaco-hover:not(.hidden)").first
    hover.wait_for()
    text = hover.inner_text()
    vscode.shot("05-hover")
    assert "TbeEltwiseFusionPass" in text and "TBE UB fusion" in text


def test_completion_inside_graph_fusion_filters_and_leaves_valid_json(vscode):
    page = vscode.page
    vscode.go_to(5, len('      "ALL": "on"') + 1)
    page.keyboard.press("End")
    page.keyboard.type(',\n"LayerNormGrad')
    suggest = page.locator(".suggest-widget.visible .monaco-list-row")
    suggest.first.wait_for()
    labels = [text.splitlines()[0] for text in suggest.all_inner_texts()]
    vscode.shot("06-completion")
    # VS Code's fuzzy filter: every item holds the typed letters in order; prefix matches first
    assert labels and all(_subsequence("layernormgrad", label.lower()) for label in labels)
    assert labels[0].startswith("LayerNormGrad"), labels
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # leave the value placeholder with its default
    vscode.save()
    data = json.loads(vscode.editor_text())
    vscode.shot("07-completion-accepted")
    added = [k for k in data["Switch"]["GraphFusion"] if k.startswith("LayerNormGrad")]
    assert added and data["Switch"]["GraphFusion"][added[0]] in ("on", "off")


def _subsequence(needle: str, text: str) -> bool:
    it = iter(text)
    return all(char in it for char in needle)


def test_status_bar_shows_the_target(vscode):
    item = vscode.page.locator(".statusbar-item", has_text="Ascend910B1").first
    item.wait_for()
    vscode.shot("08-status-bar")


def test_all_off_asks_and_restore_brings_back_the_bytes(vscode):
    page = vscode.page
    vscode.save()
    before = vscode.editor_text()
    vscode.palette("Fusion Switch: Switch All Fusion Off")
    dialog = page.locator(".monaco-dialog-box")
    dialog.wait_for()
    vscode.shot("09-all-off-asks")
    dialog.get_by_role("button", name="Cancel").click()
    page.wait_for_timeout(1000)
    assert vscode.editor_text() == before  # cancelled: untouched
    vscode.palette("Fusion Switch: Switch All Fusion Off")
    dialog.wait_for()
    dialog.get_by_role("button", name="Switch All Off").click()
    page.locator(".view-line", has_text='"ALL": "off"').first.wait_for()
    vscode.save()
    assert json.loads(vscode.editor_text())["Switch"]["GraphFusion"] == {"ALL": "off"}
    vscode.shot("10-all-off-applied")
    vscode.palette("Fusion Switch: Restore Configuration")
    page.locator(".view-line", has_text="LayerNormGrad").first.wait_for()
    vscode.save()
    assert vscode.editor_text() == before
    vscode.shot("11-restored")


def test_output_channel_has_no_error_line(vscode):
    text = vscode.output_text()
    vscode.shot("12-output-channel")
    assert "Starting" in text or "fusion-switch" in text, text[:500]
    errors = [line for line in text.splitlines() if "[error]" in line]
    assert errors == [], errors

"""Editor configs that cannot run here (Helix is not in Debian bookworm, Sublime is not free):
they parse, start the same server, send exactly the settings the server reads, and cover the
same file names as the VS Code extension."""

from __future__ import annotations

import json
import re
import tomllib
from fnmatch import fnmatchcase

from client_case import (
    CLIENT_CONFIG,
    MATCHING_NAMES,
    OTHER_NAMES,
    dotted_keys,
    server_read_settings,
    vscode_patterns,
)


def _helix() -> dict:
    return tomllib.loads((CLIENT_CONFIG / "helix" / "languages.toml").read_text())


def _sublime_settings() -> dict:
    text = (CLIENT_CONFIG / "sublime" / "LSP-fusion-switch.sublime-settings").read_text()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE))


def test_vscode_patterns_match_the_shared_names() -> None:
    patterns = vscode_patterns()
    for name in MATCHING_NAMES:
        assert any(fnmatchcase(name, p) for p in patterns), name
    for name in OTHER_NAMES:
        assert not any(fnmatchcase(name, p) for p in patterns), name


def test_helix_language_and_server() -> None:
    config = _helix()
    server = config["language-server"]["fusion-switch"]
    assert [server["command"], *server["args"]] == ["fusion-switch", "serve"]
    assert dotted_keys(server["config"]) == server_read_settings()
    (language,) = config["language"]
    assert language["language-servers"] == ["fusion-switch"]
    assert language["language-id"] == "fusion-switch"
    assert language["grammar"] == "json"
    globs = [entry["glob"] for entry in language["file-types"]]
    assert sorted(globs) == sorted(vscode_patterns())


def test_sublime_client_and_syntax() -> None:
    client = _sublime_settings()["clients"]["fusion-switch"]
    assert client["command"] == ["fusion-switch", "serve"]
    assert set(client["settings"]) == server_read_settings()
    assert (
        client["initializationOptions"]["fusionSwitch"]["target"]
        == (client["settings"]["fusionSwitch.target"])
    )
    syntax = (CLIENT_CONFIG / "sublime" / "FusionSwitch.sublime-syntax").read_text()
    assert f"scope: {client['selector']}\n" in syntax
    assert "  - fusion_switch.cfg\n" in syntax


def _server_commands_in_vscode() -> set[str]:
    """Contributed commands minus the extension's own (src/contract.js CLIENT_COMMANDS)."""
    vscode = CLIENT_CONFIG / "vscode"
    contributed = {
        c["command"]
        for c in json.loads((vscode / "package.json").read_text())["contributes"]["commands"]
    }
    contract = (vscode / "src" / "contract.js").read_text()
    client_block = contract[contract.index("CLIENT_COMMANDS") : contract.index("]);")]
    client_only = set(re.findall(r"'(fusionSwitch\.\w+)'", client_block))
    assert client_only and client_only <= contributed
    return contributed - client_only


def test_neovim_and_emacs_expose_every_server_command() -> None:
    expected = _server_commands_in_vscode()
    for path in (
        CLIENT_CONFIG / "neovim" / "fusion_switch.lua",
        CLIENT_CONFIG / "emacs" / "fusion-switch.el",
    ):
        named = set(re.findall(r"['\"](fusionSwitch\.\w+)['\"]", path.read_text()))
        assert named == expected, path.name


def test_no_client_takes_the_state_folder_for_a_project_root() -> None:
    """A review: Neovim's root markers held `.fusion-switch`, the folder the server makes
    beside the cfg on the first compare or all-off. The nearest marker wins there, so from
    the next session on the root moved to the cfg's folder and the compare paths, relative
    to the project root (.git), no longer resolved."""
    from fusion_switch.workflow.state_dir import STATE_DIR_NAME

    files = {
        "neovim/fusion_switch.lua": r"root_markers\s*=\s*\{([^}]*)\}",
        "neovim/lsp/fusion_switch.lua": r"root_markers\s*=\s*\{([^}]*)\}",
        "neovim/lspconfig.lua": r"root_pattern\(([^)]*)\)",
        "helix/languages.toml": r"roots\s*=\s*\[([^\]]*)\]",
    }
    for name, pattern in files.items():
        found = re.findall(pattern, (CLIENT_CONFIG / name).read_text())
        assert found, f"{name}: no root markers found"
        markers = [m for group in found for m in re.findall(r"['\"]([^'\"]+)['\"]", group)]
        assert ".git" in markers, (name, markers)
        assert STATE_DIR_NAME not in markers, (name, markers)

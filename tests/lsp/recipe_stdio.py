"""The real server over stdio (pytest-lsp) for the recipe commands' tests here: a VS Code-like
client that applies the server's edits (tests/e2e/workflow_support's `Editor`), records the
`fusionSwitch/status` notifications it asks for, and, when told to, saves the document after
an edit it applied, as our VS Code extension does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

E2E = Path(__file__).resolve().parents[1] / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from e2e_support import Session, start  # noqa: E402
from fusion_switch.workflow.results import save_results  # noqa: E402
from workflow_support import Editor, case_paths, execute, fs, open_path, write_cfg  # noqa: E402

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "fusion_switch", "serve"])
STATUS = "fusionSwitch/status"

__all__ = [
    "STATUS",
    "Editor",
    "case_paths",
    "execute",
    "fs",
    "open_path",
    "proven_cfg",
    "recipe_fixtures",
    "write_cfg",
]


def proven_cfg(folder: Path, text: str, rule: str) -> Path:
    """A cfg of ``text`` in ``folder`` with saved comparison results proving ``rule`` (a
    GraphFusion rule the replay says introduces the error)."""
    path = write_cfg(folder, text)
    suspect = {"rule": rule, "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
    save_results(path, {"verdict": f"proven by replay: {rule}", "suspects": [suspect]})
    return path


def _capabilities() -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    caps.experimental = {
        **(caps.experimental or {}),
        "fusionSwitch": {"statusNotification": STATUS},
    }
    return caps


def _plain(params) -> dict:
    """A notification's params as a dict, nested objects included."""
    if isinstance(params, dict):
        return {k: _plain(v) if hasattr(v, "_asdict") else v for k, v in params.items()}
    if hasattr(params, "_asdict"):
        return _plain(dict(params._asdict()))
    return dict(vars(params))


def recipe_fixtures():
    """A module's ``recipe_client, session`` (``recipe_client, session = recipe_fixtures()``):
    one server, a VS Code-like client announcing the status notification
    (``session.statuses``), an `Editor` applying edits (``session.editor``), and
    ``session.save_edits`` (default False): save a document to disk after applying an edit."""

    @pytest_lsp.fixture(config=SERVER, scope="module")
    async def recipe_client(lsp_client: LanguageClient):
        statuses: list[dict] = []

        @lsp_client.feature(STATUS)
        def record(params) -> None:
            statuses.append(_plain(params))

        session = await start(lsp_client, "visual-studio-code", capabilities=_capabilities())
        session.statuses = statuses
        session.editor = Editor(session)
        session.save_edits = False
        features = lsp_client.protocol.fm.features
        apply = features[types.WORKSPACE_APPLY_EDIT]

        def apply_then_save(params: types.ApplyWorkspaceEditParams):
            result = apply(params)
            if session.save_edits and result.applied:
                for change in params.edit.document_changes or []:
                    uri = change.text_document.uri
                    Path(to_fs_path(uri)).write_bytes(session.texts[uri].encode("utf-8"))
            return result

        features[types.WORKSPACE_APPLY_EDIT] = apply_then_save
        lsp_client.session = session
        yield
        await lsp_client.shutdown_session()

    @pytest.fixture(scope="module")
    def session(recipe_client) -> Session:
        return recipe_client.session

    return recipe_client, session

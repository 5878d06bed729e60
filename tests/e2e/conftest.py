"""The shared e2e fixture: one server per emulated client per test module.

pytest-lsp's fixture yields the client itself, so the `Session` built at start-up (which
keeps the initialize result and the recorded diagnostics) rides on it as an attribute.
"""

from __future__ import annotations

import pytest
import pytest_lsp
from e2e_support import CLIENTS, SERVER, Session, start
from pytest_lsp import LanguageClient


@pytest_lsp.fixture(config=SERVER, params=CLIENTS, scope="module")
async def lsp(request, lsp_client: LanguageClient):
    lsp_client.session = await start(lsp_client, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def session(lsp: LanguageClient) -> Session:
    return lsp.session

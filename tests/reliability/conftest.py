"""The reliability suite reuses the e2e helpers (pytest-lsp sessions, the workflow recipe)."""

from __future__ import annotations

import sys
from pathlib import Path

E2E = Path(__file__).resolve().parents[1] / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

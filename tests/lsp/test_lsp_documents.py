"""Which documents the server treats as fusion switch configurations."""

from __future__ import annotations

import pytest
from fusion_switch.lsp.documents import is_fusion_switch_config


@pytest.mark.parametrize(
    ("uri", "language_id", "expected"),
    [
        ("file:///w/anything.txt", "fusion-switch", True),
        ("file:///w/fusion_switch.cfg", "json", True),
        ("file:///w/fusion_switch.cfg", "js", True),
        ("file:///w/fusion_switch_off.cfg", "plaintext", True),
        ("file:///w/model.fusion_switch.cfg", "cfg", True),
        ("file:///w/%E8%9E%8D%E5%90%88/fusion_switch.cfg", "json", True),  # 融合/ folder
        ("file:///w/fusion_off.cfg", "json", True),
        ("file:///w/fusion_off.cfg", "plaintext", True),
        ("file:///w/fusion_off.cfg", "ini", False),
        ("file:///w/package.json", "json", False),
        ("file:///w/fusion_switch.cfg.bak", "json", False),
        ("file:///w/fusion_switch.py", "python", False),
        ("untitled:Untitled-1", "json", False),
        ("untitled:Untitled-1", "fusion-switch", True),
    ],
)
def test_selection_rule(uri: str, language_id: str, expected: bool) -> None:
    assert is_fusion_switch_config(uri, language_id) is expected

"""Text escaped for the HTML report.

The report of a 5,000-op run escapes ~24,000 values (op names, verdicts, rules), almost none
of which holds a character HTML gives a meaning to; ``html.escape`` replaces five characters
one after the other in each (issue 16: a millisecond or two of the report's ~70 ms)."""

from __future__ import annotations

import html
import re
from typing import Any

_SPECIAL = re.compile("[&<>\"']")


def escape(value: Any) -> str:
    """``html.escape(str(value), quote=True)``, returning text without ``& < > " '`` as it is."""
    text = str(value)
    return html.escape(text, quote=True) if _SPECIAL.search(text) else text

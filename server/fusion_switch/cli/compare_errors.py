"""The errors `fusion-switch compare` tells the user, on stderr, and the record of them:
`--rank all` names the error that stopped a rank in ranks_summary.json (a review: it said
only "see the error above")."""

from __future__ import annotations

import sys

BAD_INPUT = 2  # compare's exit status for input it cannot compare
ERROR_PREFIX = "fusion-switch compare: error: "
ERRORS_TOLD: list[str] = []  # every error this process told, in order


def tell_error(message: str) -> int:
    """Say ``message`` as an error; the exit status of unusable input."""
    ERRORS_TOLD.append(message)
    print(f"{ERROR_PREFIX}{message}", file=sys.stderr)
    return BAD_INPUT

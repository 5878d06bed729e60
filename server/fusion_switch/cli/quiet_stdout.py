"""After `| head` left: what is still written goes nowhere, quietly."""

from __future__ import annotations

import os
import sys


def quiet_stdout() -> None:
    """After a broken pipe, send what is left to /dev/null so exit does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())

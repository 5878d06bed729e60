"""placeholder"""

from __future__ import annotations


def register(subparsers) -> None:
    pass

"""`fusion-switch serve`: run the language server on stdio (default) or TCP."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the fusion_switch.cfg language server",
        description="Run the language server for fusion_switch.cfg. Editors start it on stdio.",
    )
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
    parser.add_argument("--tcp", type=int, metavar="PORT", help="listen on a TCP port instead")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address for --tcp (default: %(default)s)"
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="for --tcp: read the token clients must send from FILE (mode 0600); without it a "
        "random token is written under the runtime directory and its path printed on stderr. "
        "Required for a --host other than loopback",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..lsp import serve_tcp  # imported here: other sub-commands stay light

    if args.tcp is not None:
        return serve_tcp(args.host, args.tcp, args.token_file)
    if args.token_file is not None:
        print("fusion-switch serve: error: --token-file is for --tcp", file=sys.stderr)
        return 2
    return serve_stdio()


def serve_stdio() -> int:
    """`serve` or `serve --stdio`, as editors start it (`cli.main` comes here directly)."""
    from ..lsp import serve_stdio

    serve_stdio()
    return 0

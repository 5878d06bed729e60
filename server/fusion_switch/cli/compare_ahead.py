"""The fusion-off graph's helper, forked at the very start of ``compare`` (issue 16).

It reads the fusion-off graph beside everything the comparing process does first (numpy, the
dump trees, the job's modules), and answers the graph's digest to ``discover``; with the
replay on, it stays with the graph and runs the replay there (``replay_background``).
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from typing import Any


def read_fusion_off_graph_ahead(args: argparse.Namespace) -> None:
    """Fork the fusion-off graph's digest helper now, before numpy, the dump trees and the job
    load here: it reads the graph beside all of that (issue 16: the job waited ~0.26 s for
    it). Only for one graph file big enough to be read in a helper anyway; the job takes it
    over (``discover._DigestReader``), or ``compare.run`` closes it. With the replay on, the
    helper stays after the digest, with the graph, to run the replay (it is the smallest
    process holding that graph: ``replay_background.serve_kept``), with a share channel made
    now for it (``replay_share``)."""
    from ..compare.forked import GRAPH_FORK_BYTES, path_key, start_ahead

    path = args.off_graph
    if not path or args.rank is not None or args.on_graph is None:
        return
    try:
        if not os.path.isfile(path) or os.path.getsize(path) < GRAPH_FORK_BYTES:
            return
    except (OSError, ValueError):
        return  # the job reports it
    channel = None
    if not getattr(args, "no_replay", False):
        from ..diagnose.replay_share import ShareChannel

        channel = ShareChannel()
    key = path_key("digest", path)
    folders = (args.on_dump, args.off_dump)
    call = start_ahead(
        key, fusion_off_digest, (path, channel, folders), early=True, keep=bool(channel)
    )
    if channel is not None:
        if call is None:
            channel.close()
        else:
            channel.forked()
            call.companion = channel


def fusion_off_digest(
    path: str, channel: Any = None, folders: tuple = (), *, tell: Callable[[str], None]
) -> Any:
    """The helper's body: the graph reader and the pairing rule are imported in the child,
    beside this process (not the job's modules: no numpy, issue 16). ``channel``: stay for
    the replay afterwards (see :func:`read_fusion_off_graph_ahead`); ``folders``: the dump
    folders as given, for it to index while it waits."""
    from ..compare.pairing import digest_in_child

    if channel is None:
        return digest_in_child(path, tell)
    then = functools.partial(serve_replay, channel=channel, parent=os.getppid(), folders=folders)
    return digest_in_child(path, tell, then)


def serve_replay(
    graph: Any, receive: Callable[[], Any], channel: Any, parent: int, folders: tuple = ()
) -> Any:
    """The kept helper's second part: the replay's modules are imported only here."""
    from ..diagnose.replay_background import serve_kept

    return serve_kept(graph, receive, channel, parent, folders)

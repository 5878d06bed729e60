"""The fusion-off graph's helper, forked at the very start of ``compare`` (issue 16).

It reads the fusion-off graph beside everything the comparing process does first (numpy, the
dump trees, the job's modules), and answers the graph's digest to ``discover``; with the
replay on, it stays with the graph and runs the replay there (``replay_background``). When
``-cf`` names a folder of graphs, the helper that picks the graph from it goes on as this
helper (:func:`pick_fusion_off_graph_ahead`).
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
    channel = _share_channel(args)
    key = path_key("digest", path)
    folders = (args.on_dump, args.off_dump)
    call = start_ahead(
        key, fusion_off_digest, (path, channel, folders), early=True, keep=bool(channel)
    )
    _hand_channel(call, channel)


def _share_channel(args: argparse.Namespace) -> Any:
    """The replay's share channel for a helper that will stay with the graph (replay on)."""
    if getattr(args, "no_replay", False):
        return None
    from ..diagnose.replay_share import ShareChannel

    return ShareChannel()


def _hand_channel(call: Any, channel: Any) -> None:
    if channel is not None:
        if call is None or not call.busy:
            channel.close()
        else:
            channel.forked()
            call.companion = channel


def pick_fusion_off_graph_ahead(folder: str, leaf: str, args: argparse.Namespace) -> Any:
    """Fork the helper that picks the fusion-off graph from ``folder`` for the dumps in
    ``leaf`` and then goes on as the graph's digest helper (see
    :func:`read_fusion_off_graph_ahead`) for the run ``args`` describes: it holds the picked
    graph already (issue 16: the job's helper read the picked file again, and the replay a
    third time). It tells ("ok", file, note) first, or answers ("error", message); the caller
    registers it for the picked file (:func:`keep_picked_ahead`) or closes it. None when no
    child could be started."""
    from ..compare.forked import ForkedCall

    channel = _share_channel(args)
    folders = (args.on_dump, args.off_dump)
    keep = channel is not None
    call = ForkedCall(
        picked_digest, (folder, leaf, channel, folders), daemon=not keep, early=True, keep=keep
    ).start()
    _hand_channel(call, channel)
    return call if call.busy else None


def keep_picked_ahead(call: Any, picked: str) -> None:
    """Hand the picking helper on to the job, as the digest helper of the ``picked`` file."""
    from ..compare.forked import keep_ahead, path_key

    keep_ahead(path_key("digest", picked), call)


def picked_digest(
    folder: str, leaf: str, channel: Any, folders: tuple, *, tell: Callable[[Any], None]
) -> Any:
    """The picking helper's body: the pick (told), then :func:`fusion_off_digest` on the
    picked file, which takes the graph the pick kept here instead of reading it again."""
    from ..readers.dumpdir import DumpDirError, scan_dump_dir
    from ..readers.graph import GraphError
    from ..readers.graph_folder import pick_graph

    try:
        picked, why = pick_graph(folder, scan_dump_dir(leaf).op_names, "-cf", keep=True)
    except (GraphError, DumpDirError) as exc:
        return ("error", str(exc))
    tell(("ok", str(picked), why))
    return fusion_off_digest(str(picked), channel, folders, tell=tell)


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

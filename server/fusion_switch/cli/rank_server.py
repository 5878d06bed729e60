"""Imported by the fork server ``--rank all`` forks its ranks from (:mod:`.rank_process`),
and by nothing else: the server removes its listening socket's folder when it ends.

multiprocessing puts the server's socket in a ``pymp-*`` folder of the temporary directory,
which the ``--rank all`` process removes when it exits. Killed with SIGKILL it cannot, and
every such run left the folder and its socket behind. The server ends after it, once its
last rank has ended: it removes them then.
"""

from __future__ import annotations

import atexit
import os

_SERVER = os.getpid()  # the ranks forked from the server run its exit handlers too


def _remove_the_socket_folder() -> None:
    if os.getpid() != _SERVER:
        return
    from .rank_server_folder import server_folder

    folder = server_folder()
    if folder is not None and os.path.basename(folder).startswith("pymp-"):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_remove_the_socket_folder)

"""How the cores are shared between the comparison and the replay that runs beside it.

A module of its own, with nothing to import: the command line asks it before the comparison
starts, where importing the replay's modules (numpy with them) cost ~0.1 s before the job
began (issue 16), time that overlaps with the fusion-off graph's helper once inside the job.
"""

from __future__ import annotations

import os


def overlapping_processes(workers: int | None) -> int:
    """Processes for a replay that runs beside the comparison: half of the cores it may use."""
    return max(1, (workers or os.cpu_count() or 1) // 2)


def comparison_processes(workers: int | None) -> int | None:
    """Processes for the comparison while the replay runs beside it: the cores the replay's
    child does not take (issue 16). On two cores the comparison's pool worker made three busy
    processes for two cores (more CPU for both, no faster) and one more forked copy of this
    process in the tree (~90 MB of RSS). One core: no child, the replay runs afterwards."""
    cores = workers or os.cpu_count() or 1
    if cores < 2:
        return workers
    return max(1, cores - overlapping_processes(workers))

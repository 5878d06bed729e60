"""The files a comparison wrote, masked so that two runs can be compared byte for byte."""

from __future__ import annotations

import os
import re
from pathlib import Path

STAMP = re.compile(rb"result_\d{14}\.csv")  # the CSV's name: the second it was written
ELAPSED = re.compile(rb'"seconds":\s*[0-9.e+-]+')  # summary.json's replay time: wall clock
SPENT = re.compile(r"replayed \(([0-9.]+%)\) in [0-9.]+ s")  # the same time on stdout


def outputs(out: Path) -> dict[str, bytes]:
    """The files a run wrote, by kind ("csv" for result_*.csv), with the output folder's own
    path, the CSV's time stamp and the replay's wall time masked (they differ between runs)."""
    return {
        ("csv" if path.name.startswith("result_") else path.name): ELAPSED.sub(
            b'"seconds": <T>',
            STAMP.sub(b"result_<STAMP>.csv", path.read_bytes().replace(os.fsencode(out), b"<OUT>")),
        )
        for path in out.iterdir()
    }

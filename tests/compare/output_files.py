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


def assert_same_run(single, other, root: Path) -> None:
    """A run in one process (``single``, outputs under ``root/one/out``) and the same run
    elsewhere (``other``, under ``root/dask/out``): the same status, the same files byte for
    byte, and the same stdout but for the paths, the CSV's stamp and the replay's time."""
    assert single.returncode == 1, single.stderr
    assert other.returncode == single.returncode, other.stderr
    one, two = outputs(root / "one" / "out"), outputs(root / "dask" / "out")
    assert sorted(one) == ["csv", "report.html", "summary.json"]
    assert one == two
    one_out = SPENT.sub(r"replayed (\1) in T s", single.stdout.replace("/one/", "/dask/"))
    two_out = SPENT.sub(r"replayed (\1) in T s", other.stdout)
    assert STAMP.sub(b"", one_out.encode()) == STAMP.sub(b"", two_out.encode())

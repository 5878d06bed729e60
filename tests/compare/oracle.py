"""Run the real msaccucmp (mindstudio-probe 26.2.0) as a test oracle.

msaccucmp decodes dump headers through a CANN C library (``libascend_dump_parser.so``) that is
not installed here. The runner below replaces only ``BigDumpDataParser._parse_dump_to_json``
with our protobuf-JSON decoder (:func:`fusion_switch.readers.dump_json.dump_header_to_json`)
and runs the rest of msaccucmp unmodified, in a subprocess:

    python tests/compare/oracle.py compare -m ON_DUMP -g OFF_DUMP -f ON_JSON -cf OFF_JSON -out DIR

mindstudio-probe is installed with ``--no-deps``; the one import it needs but does not use on
this path, ``google.protobuf.message.DecodeError``, is stubbed when protobuf is absent.

:func:`msaccucmp_available` / :func:`run_msaccucmp` are for tests; they raise
:class:`OracleUnavailable` (with the reason) instead of skipping, so a missing oracle fails CI.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class OracleUnavailable(RuntimeError):
    """msaccucmp cannot run here; the message says why and how to fix it."""


def msaccucmp_dir() -> Path:
    """The folder of msaccucmp's sources inside the installed mindstudio-probe."""
    spec = importlib.util.find_spec("msprobe")
    if spec is None or not spec.submodule_search_locations:
        raise OracleUnavailable(
            "mindstudio-probe is not installed: pip install --no-deps mindstudio-probe==26.2.0 "
            "psutil"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "msaccucmp"
    if not (folder / "msaccucmp.py").is_file():
        raise OracleUnavailable(f"{folder} has no msaccucmp.py (mindstudio-probe too old/new?)")
    return folder


def make_importable() -> Path:
    """Put msaccucmp's modules on ``sys.path`` (they import each other top-level, e.g.
    ``cmp_utils``) and stub ``google.protobuf.message`` if protobuf is missing."""
    folder = msaccucmp_dir()
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    try:
        import google.protobuf.message
    except ImportError:
        google = sys.modules.get("google") or types.ModuleType("google")
        protobuf = types.ModuleType("google.protobuf")
        message = types.ModuleType("google.protobuf.message")

        class DecodeError(Exception):
            """Stand-in: msaccucmp only names it in an ``except`` clause."""

        message.DecodeError = DecodeError
        protobuf.message = message
        google.protobuf = protobuf
        sys.modules.setdefault("google", google)
        sys.modules["google.protobuf"] = protobuf
        sys.modules["google.protobuf.message"] = message
    return folder


def patch_dump_parser() -> None:
    """Decode dump headers with our decoder instead of CANN's C library."""
    from dump_parse import big_dump_data
    from fusion_switch.readers.dump_json import dump_header_to_json

    def parse_dump_to_json(self) -> None:
        with open(self.dump_file_path, "rb") as handle:
            self.dump_json_data = dump_header_to_json(handle.read())

    big_dump_data.BigDumpDataParser._parse_dump_to_json = parse_dump_to_json


def run_msaccucmp(
    on_dump: os.PathLike | str,
    off_dump: os.PathLike | str,
    on_graph: os.PathLike | str,
    off_graph: os.PathLike | str,
    out_dir: os.PathLike | str,
    extra_args: tuple[str, ...] = (),
    timeout: float = 300,
    keep_log: bool = False,
) -> Path:
    """Run ``msaccucmp compare -m ON -g OFF -f ON_JSON -cf OFF_JSON -out DIR`` in a subprocess
    and return the ``result_*.csv`` it wrote. Raises :class:`OracleUnavailable` with
    msaccucmp's output when no CSV appears. msaccucmp's per-tensor INFO log is switched off
    unless ``keep_log`` (benchmarks keep it: that is how users run it)."""
    msaccucmp_dir()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("result_*.csv"))
    command = [
        sys.executable, str(Path(__file__).resolve()), *(["--keep-log"] if keep_log else []),
        "compare",
        "-m", os.path.realpath(on_dump), "-g", os.path.realpath(off_dump),
        "-f", os.path.realpath(on_graph), "-cf", os.path.realpath(off_graph),
        "-out", os.path.realpath(out), *extra_args,
    ]  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "server"), *filter(None, [env.get("PYTHONPATH")])]
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    created = sorted(set(out.glob("result_*.csv")) - before)
    if not created:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise OracleUnavailable(
            f"msaccucmp wrote no result CSV (exit status {done.returncode}). Output:\n{tail}"
        )
    return created[-1]


def _main(argv: list[str]) -> int:
    make_importable()
    patch_dump_parser()
    import logging

    import msaccucmp

    if argv[:1] == ["--keep-log"]:
        argv = argv[1:]
    else:
        logging.disable(logging.INFO)  # msaccucmp logs every tensor; keep warnings and errors
    sys.argv = ["msaccucmp.py", *argv]
    try:
        msaccucmp.main()
    except SystemExit as stop:
        return int(stop.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

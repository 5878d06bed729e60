"""Emacs + eglot (Debian's emacs-nox, elpa-eglot 1.9) runs the comparison through
client-config/emacs/fusion-switch.el without blocking: $/progress is shown, cancel works, and
all-off asks with `y-or-n-p` first (issue 15)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case

pytestmark = pytest.mark.editor
HERE = Path(__file__).parent
CONFIG_DIR = HERE.parents[1] / "client-config" / "emacs"
CONFIG = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ConvBatchnormFusionPass": "on"\n    }\n  }\n}\n'
)
INIT = """\
(add-to-list 'load-path {config_dir})
(require 'fusion-switch)
(setq fusion-switch-server-command (list {python} "-m" "fusion_switch" "serve"))
(add-hook 'fusion-switch-mode-hook #'eglot-ensure)
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> dict:
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip("emacs not installed (CI: apt-get install emacs-nox elpa-eglot)")
    tmp = tmp_path_factory.mktemp("emacs-compare")
    case = generate_case(tmp / "case", n_ops=400)
    cfg = tmp / "with space" / "fusion_switch.cfg"  # {cfg} quoted for the job's shell
    cfg.parent.mkdir()
    cfg.write_text(CONFIG, encoding="utf-8")
    init = tmp / "init.el"
    init.write_text(
        INIT.format(config_dir=json.dumps(str(CONFIG_DIR)), python=json.dumps(sys.executable))
    )
    out = tmp / "out.json"
    shutil.copyfile(case.on_graph.parent / "fusion_result.json", cfg.parent / "fusion_result.json")
    fake_job = HERE.parent / "cli" / "fake_job.py"
    env = {
        "FS_BISECT_JOB": f"FAKE_GUILTY=ConvBatchnormFusionPass {sys.executable} {fake_job} {{cfg}}",
        **os.environ,
        "HOME": str(tmp),
        "FS_FILE": str(cfg),
        "FS_OUT": str(out),
        "FS_ON_DUMP": str(case.on_dump),
        "FS_OFF_DUMP": str(case.off_dump),
        "FS_ON_GRAPH": str(case.on_graph),
        "FS_OFF_GRAPH": str(case.off_graph),
        "FS_OUTPUT": str(tmp / "compare"),
    }
    proc = subprocess.run(
        [emacs, "--batch", "-l", str(init), "-l", str(HERE / "emacs_compare.el")],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.is_file(), proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_compare_runs_asynchronously_with_progress(session):
    assert session["connected"] is True
    assert session["returned_before_done"] is True  # the editor did not freeze
    assert session["finished"] is True, session
    kinds = [kind for kind, _ in session["events"]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds, kinds
    result = json.loads(session["compare_result"])
    assert "ConvBatchnormFusionPass" in [s["rule"] for s in result["suspects"]]


def test_cancel_stops_the_comparison(session):
    assert session["cancellable_seen"] is True
    assert json.loads(session["cancel_result"]) == {"cancelled": True}


def test_all_off_asks_first(session):
    assert len(session["questions"]) == 2 and "all fusion off" in session["questions"][0]
    assert session["unchanged_after_no"] is True
    assert session["all_off_after_yes"] is True


def test_bisect_asks_for_the_job_and_runs_in_the_background(session):
    """A review: M-x fusion-switch-bisect sent no job, so the server always answered "bisect
    needs `job`"; and it would have waited for the whole bisection in the foreground."""
    assert session["bisect_returned_before_done"] is True
    assert session["bisect_error"] is None, session["server_log"]
    result = json.loads(session["bisect_result"])
    assert "error" not in result, session["server_log"]
    assert [g["rule"] for g in result.get("guilty", [])] == ["ConvBatchnormFusionPass"], result
    assert '"ConvBatchnormFusionPass": "off"' in session["bisect_buffer"]

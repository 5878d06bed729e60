"""Recipe commands around a comparison run: compare, cancelCompare, showReport.

The engine runs in a child process (`workflow.job`), so this handler only awaits: other
requests (completion, hover) keep being answered while it runs. One run at a time; a second
one is refused. Work-done progress (percentage, cancellable) is shown only to clients that
declare `window.workDoneProgress`; cancelling it or `fusionSwitch.cancelCompare` kills the
child, and nothing of a cancelled run is published.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..documents import file_name
from ..features import configuration
from ..safety import log, show
from . import annotations, republish, target
from .command import CommandError, Refused, recipe_command

if TYPE_CHECKING:
    from ...workflow.job import CompareJob, ComparePaths
    from ..server import FusionSwitchServer
    from ..settings import CompareSettings

COMPARE = "fusionSwitch.compare"
CANCEL_COMPARE = "fusionSwitch.cancelCompare"
SHOW_REPORT = "fusionSwitch.showReport"
RUNNING = (
    "fusion-switch: a comparison is already running; wait for it to finish or cancel it "
    "(fusionSwitch.cancelCompare)."
)
INPUTS = (
    ("onDump", "on_dump"),
    ("offDump", "off_dump"),
    ("onGraph", "on_graph"),
    ("offGraph", "off_graph"),
)


def compare_paths(
    ls: FusionSwitchServer, params: dict, cfg_path: Path, settings: CompareSettings
) -> ComparePaths:
    """Arguments first, then the configuration's folder's settings `fusionSwitch.compare.*`;
    relative to that workspace folder."""
    from ...workflow.job import ComparePaths
    from ...workflow.state_dir import state_dir

    folder = target.workspace_folder(ls, cfg_path)

    def resolve(value: str) -> Path:
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else folder / path

    found: dict[str, Path] = {}
    missing = []
    for arg, attr in INPUTS:
        value = params.get(arg)
        if value is not None and not isinstance(value, str):
            raise CommandError(f"fusion-switch: compare: {arg} must be a path string")
        value = (value or "").strip() or getattr(settings, attr)
        if value:
            found[attr] = resolve(value)
        else:
            missing.append(arg)
    if missing:
        raise CommandError(
            f"fusion-switch: compare needs {', '.join(missing)}: pass them as arguments or set "
            + ", ".join(f"fusionSwitch.compare.{m}" for m in missing)
            + f" (paths relative to {folder})."
        )
    output = params.get("output") if isinstance(params.get("output"), str) else ""
    output = output.strip() or settings.output
    out_dir = resolve(output) if output else state_dir(cfg_path) / f"{cfg_path.name}.compare"
    paths = ComparePaths(output=out_dir, **found)
    problems = paths.problems()
    if problems:
        raise CommandError("fusion-switch: cannot compare: " + "; ".join(problems) + ".")
    return paths


class ProgressBar:
    """Work-done progress for one run, when the client supports it (else it does nothing)."""

    def __init__(self, ls: FusionSwitchServer) -> None:
        self.ls = ls
        self.token: str | None = None
        self.percentage = 0

    async def begin(self, job: CompareJob, title: str) -> None:
        if not self.ls.state.client.work_done_progress:
            return
        token = f"fusionSwitch/compare/{uuid.uuid4().hex[:12]}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception as exc:  # the client refused: run without a progress bar
            log(self.ls, f"fusion-switch: no progress bar for the comparison: {exc!r}")
            return
        self.token = token
        self.ls.work_done_progress.tokens[token].add_done_callback(
            lambda f: job.cancel() if f.cancelled() else None
        )
        self.ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, cancellable=True, message="reading the graphs", percentage=0
            ),
        )

    def report(self, done: int, total: int, message: str) -> None:
        if self.token is None or total <= 0:
            return
        percentage = min(99, int(100 * done / total))
        if percentage <= self.percentage:
            return
        self.percentage = percentage
        self.ls.work_done_progress.report(
            self.token,
            types.WorkDoneProgressReport(
                message=f"{done}/{total} ops" + (f" · {message}" if message else ""),
                percentage=percentage,
            ),
        )

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)
        self.token = None


@recipe_command(COMPARE)
async def compare(ls: FusionSwitchServer, params: dict):
    from ...workflow import annotate
    from ...workflow.job import CompareJob
    from ...workflow.results import save_results

    doc = target.config(ls, params, command=COMPARE)
    cfg_path = target.file_path(doc, command=COMPARE)
    if ls.state.compare_job is not None:
        raise Refused(RUNNING)
    # the folder's settings as they are now (VS Code tells no change of a folder's value)
    settings = (await configuration.folder_settings(ls, doc.uri, refresh=True)).compare
    if ls.state.compare_job is not None:  # started while the settings were asked for
        raise Refused(RUNNING)
    paths = compare_paths(ls, params, cfg_path, settings)
    selection = dump_selection(params, settings)
    bar = ProgressBar(ls)
    job = CompareJob(
        paths,
        bar.report,
        memory_budget=settings.memory_budget,
        workers=settings.workers,
        **selection,
    )
    ls.state.compare_job = job
    try:
        await bar.begin(job, f"Comparing fusion on vs off for {file_name(doc.uri)}")
        log(ls, "fusion-switch: running " + " ".join(job.argv), types.MessageType.Info)
        outcome = await job.run()
    finally:
        ls.state.compare_job = None
        if bar.token is not None and job.cancelled:
            bar.end("cancelled")
    if outcome.status == "cancelled":
        bar.end("cancelled")
        show(
            ls,
            "fusion-switch: comparison cancelled; no results were published.",
            types.MessageType.Info,
        )
        return {"cancelled": True}
    if outcome.status != "done":
        bar.end("failed")
        for line in outcome.stderr_tail:
            log(ls, f"fusion-switch compare: {line}")
        message = f"fusion-switch: the comparison failed: {outcome.message}"
        offered = await _offer_choice(ls, paths, selection, message)
        if offered is not None:
            return offered
        raise CommandError(message)
    if outcome.kind != "tensors":
        return _names_no_rule(ls, doc, cfg_path, outcome, bar, paths.output)
    summary = annotate.compact_summary(outcome.summary or {})
    # the compared configuration's results, and no other open one's (a review: every cfg of
    # the folder got them, and applySuspects switched model A's rule off in model B)
    try:
        save_results(cfg_path, summary, doc.uri)
    except OSError as exc:
        log(ls, f"fusion-switch: could not keep the results next to {cfg_path}: {exc}")
    ls.state.attach_results(cfg_path, summary)
    _remember_report(ls, summary.get("report"))
    detected = ls.state.use_detected_target(summary.get("soc_version"), doc.uri)
    bar.end(summary.get("verdict") or "done")
    if detected:
        annotations.tell_detected_target(ls, detected)
    republish.refresh(ls)
    show(
        ls,
        annotate.verdict_message(summary),
        types.MessageType.Warning if annotate.alarming(summary) else types.MessageType.Info,
    )
    return annotate.brief(summary)


def _selected(params: dict, key: str, setting: str) -> str:
    """`rank`, `iteration` or `step`: the argument (text or a whole number), else the
    setting."""
    value = params.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if value is not None and not isinstance(value, str):
        raise CommandError(f"fusion-switch: compare: {key} must be text or a whole number")
    return (value or "").strip() or setting


def dump_selection(params: dict, settings: CompareSettings) -> dict[str, str]:
    """{rank, iteration, step} for `compare --rank/--iteration/--step`: arguments first, then
    settings ("" for none). The editor compares one rank: `--rank all` makes one comparison
    per rank, each with its own suspects, and a configuration shows the suspects of one
    comparison."""
    rank = _selected(params, "rank", settings.rank)
    iteration = _selected(params, "iteration", settings.iteration)
    step = _selected(params, "step", settings.step)
    if rank.lower() == "all":
        raise Refused(
            'fusion-switch: compare: rank "all" is for the command line: --rank all compares '
            "each rank on its own (OUT/rank_R/, ranks_summary.json), and a configuration shows "
            "the suspects of one comparison. Run `fusion-switch compare ... --rank all` in a "
            "terminal, then set fusionSwitch.compare.rank (or the argument rank) to the rank "
            "whose suspects the editor should show."
        )
    if rank and not _rank_shaped(rank):
        raise CommandError(
            "fusion-switch: compare: a rank is a device id such as 0, or the folders above the "
            "time folder and the device id such as node0/0, as `fusion-switch dumps` lists "
            f"them; got {rank!r}"
        )
    return {"rank": rank, "iteration": iteration, "step": step}


def _rank_shaped(rank: str) -> bool:
    """A rank as `compare --rank` takes it (`readers.dumptree` rank_key): a device id, under
    folder names when the tree tells two servers' devices apart (`node0/0`)."""
    *folders, device = rank.split("/")
    return device.isdecimal() and all(f and f not in (".", "..") for f in folders)


async def _offer_choice(
    ls: FusionSwitchServer, paths: ComparePaths, selection: dict[str, str], message: str
) -> dict | None:
    """When the comparison needs a step, a rank or an iteration named and the dumps hold
    values that would work: the answer `{error, choose: {key: values}}`, the message naming
    the editor's setting and argument (shown, unless the client offers the values itself);
    else None."""
    from ...workflow.dump_choices import choice_needed, editor_hint

    choice = await asyncio.to_thread(
        choice_needed,
        paths.on_dump,
        paths.off_dump,
        selection["rank"],
        selection["iteration"],
        message,
        step=selection["step"],
    )
    if choice is None:
        return None
    message = f"{message}. {editor_hint(choice)}"
    if not ls.state.client.compare_choices:
        show(ls, message, types.MessageType.Warning)
    return {"error": message, "choose": {choice.key: choice.values}}


def _names_no_rule(
    ls: FusionSwitchServer, doc, cfg_path: Path, outcome, bar: ProgressBar, output: Path
) -> dict:
    """A run whose result blames no rule of this configuration (statistics dumps; one result
    per rank): shown as what it is, and the configuration's earlier marks taken off, so that
    no older verdict stands as this run's (a review: a statistics run showed the previous
    tensor run's suspects as new)."""
    from ...workflow import stats_result
    from ...workflow.results import clear_results

    dropped = ls.state.detach_results(cfg_path)
    try:
        clear_results(cfg_path)
    except OSError as exc:
        log(ls, f"fusion-switch: could not remove the old results next to {cfg_path}: {exc}")
    summary = outcome.summary or {}
    name = file_name(doc.uri)
    if outcome.kind == "statistics":
        bar.end("statistics compared")
        republish.refresh(ls)
        show(
            ls,
            stats_result.message(summary, name, dropped=dropped),
            types.MessageType.Warning if outcome.exit_code else types.MessageType.Info,
        )
        return stats_result.brief(summary)
    bar.end("done")
    republish.refresh(ls)
    show(
        ls,
        f"fusion-switch: the comparison wrote one result per rank (ranks_summary.json in "
        f"{output}); the editor marks the rules "
        f"of one rank's comparison only, so no rule is marked in {name}.",
        types.MessageType.Warning if outcome.exit_code else types.MessageType.Info,
    )
    return {"kind": outcome.kind, "suspects": [], **summary}


def _remember_report(ls: FusionSwitchServer, report: object) -> None:
    """Record the report this run wrote: `showReport` opens only recorded reports."""
    from ...workflow.report_record import remember

    if isinstance(report, str) and report and not remember(Path(report)):
        log(ls, f"fusion-switch: could not record the report {report}; showReport will refuse it")


@recipe_command(CANCEL_COMPARE)
async def cancel_compare(ls: FusionSwitchServer, params: dict):
    job = ls.state.compare_job
    if job is None:
        show(ls, "fusion-switch: no comparison is running.", types.MessageType.Info)
        return {"cancelled": False}
    job.cancel()
    return {"cancelled": True}


@recipe_command(SHOW_REPORT)
async def show_report(ls: FusionSwitchServer, params: dict):
    """Open the HTML report in the browser (`window/showDocument`, external) and say where it
    is (our VS Code extension shows it in a webview in a remote window)."""
    doc = target.config(ls, params, command=SHOW_REPORT)
    summary = annotations.results(ls, doc)
    report = summary.get("report") if summary else None
    if not isinstance(report, str) or not report:
        raise Refused(
            f"fusion-switch: no comparison report for {file_name(doc.uri)} yet; run "
            "fusionSwitch.compare first."
        )
    path = Path(report)
    if not path.is_file():
        raise CommandError(f"fusion-switch: the report {path} is gone; compare again.")
    from ...workflow.report_record import written_by_us

    if not written_by_us(path):
        raise Refused(
            f"fusion-switch: not opening {path}: no comparison of yours wrote it (or it changed "
            "since). Run fusionSwitch.compare to make a report."
        )
    shown = False
    if ls.state.client.show_document:
        result = await ls.window_show_document_async(
            types.ShowDocumentParams(uri=path.as_uri(), external=True)
        )
        shown = result is not None and result.success
    # the path always: an editor that says it opened the report may have opened nothing (VS
    # Code over Remote-SSH hands the remote path to the local browser and reports success)
    show(ls, f"fusion-switch: the comparison report is {path}", types.MessageType.Info)
    return {"shown": shown, "report": report}

"""Recipe commands `fusionSwitch.bisect` and `fusionSwitch.cancelBisect`: the terminal's
`fusion-switch bisect` run as a child process (workflow/bisect_job.py), with work-done progress
(cancellable) where the client supports it.

Arguments: `cfgUri`, `job` (the command to run: a list of strings, or one string split like a
shell does; `{cfg}` is the trial's configuration), one of `rules` (list) / `fusionResult`
(path) / `allFired`, and optionally `repeat`, `metric` + `threshold`, `lowerIsBetter`,
`jobs`, `resume`, `timeout` (seconds a run may take). The bisection rewrites the file on
disk, so the document must be saved first; at the end the editor's text is brought to what
the bisection wrote (recorded in the shared history, restorable). Text typed into the buffer
meanwhile (not saved) is recorded in that history before the result replaces it; the text the
bisection started from, or a trial's file the editor reloaded from disk, is not.
"""

from __future__ import annotations

import shlex
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from ..documents import file_name
from ..safety import log, show
from . import target
from .command import CommandError, Refused, recipe_command, replace_text

if TYPE_CHECKING:
    from ...workflow.bisect_job import BisectJob, BisectRequest
    from ..server import FusionSwitchServer

BISECT = "fusionSwitch.bisect"
CANCEL_BISECT = "fusionSwitch.cancelBisect"


def _request(params: dict, cfg_path) -> BisectRequest:
    from ...workflow.bisect_job import BisectRequest

    command = params.get("job")
    if isinstance(command, str) and params.get("shell"):  # a shell line as typed (Emacs, Neovim)
        from ...workflow.trials import shell_command

        command = shell_command(command)
    elif isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError as error:  # an unclosed quote: an internal error before (a review)
            raise CommandError(f"fusion-switch: bisect: `job` cannot be split: {error}.") from None
    # a list, not any iterable: a number raised TypeError, a mapping ran its keys (a review)
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise CommandError(
            "fusion-switch: bisect needs `job`: the command to run, as a list of strings or one "
            'string (e.g. "python train.py --fusion_switch_file={cfg}").'
        )
    rules = params.get("rules") or ()
    if not isinstance(rules, (list, tuple)) or not all(isinstance(r, str) for r in rules):
        raise CommandError("fusion-switch: bisect: rules must be a list of rule names.")
    fusion_result = params.get("fusionResult")
    if fusion_result is not None and not isinstance(fusion_result, str):
        raise CommandError("fusion-switch: bisect: fusionResult must be a path.")
    if not rules and not fusion_result and not params.get("allFired"):
        raise CommandError(
            "fusion-switch: bisect needs candidates: `rules`, `fusionResult` or `allFired`."
        )

    def number(key: str, kind, default):
        value = params.get(key, default)
        if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
            return value
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        raise CommandError(f"fusion-switch: bisect: {key} must be a number.")

    metric = params.get("metric")
    threshold = number("threshold", float, None)
    if (metric is None) != (threshold is None):
        raise CommandError("fusion-switch: bisect: metric and threshold go together.")
    return BisectRequest(
        cfg=cfg_path,
        command=list(command),
        rules=list(rules),
        fusion_result=fusion_result,
        all_fired=bool(params.get("allFired")),
        repeat=number("repeat", int, 1),
        metric=metric if isinstance(metric, str) else None,
        threshold=threshold,
        lower_is_better=bool(params.get("lowerIsBetter")),
        jobs=number("jobs", int, 1),
        resume=bool(params.get("resume")),
        timeout=number("timeout", float, None),
    )


class _Progress:
    def __init__(self, ls: FusionSwitchServer) -> None:
        self.ls = ls
        self.token: str | None = None

    async def begin(self, job: BisectJob, title: str) -> None:
        if not self.ls.state.client.work_done_progress:
            return
        token = f"fusionSwitch/bisect/{uuid.uuid4().hex[:12]}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception as exc:  # the client refused: run without a progress bar
            log(self.ls, f"fusion-switch: no progress bar for the bisection: {exc!r}")
            return
        self.token = token
        self.ls.work_done_progress.tokens[token].add_done_callback(
            lambda f: job.cancel() if f.cancelled() else None
        )
        self.ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title=title, cancellable=True, message="preflight"),
        )

    def report(self, done: int, total: int, message: str) -> None:
        if self.token is None:
            return
        percentage = min(99, int(100 * done / total)) if total > 0 else None
        self.ls.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)
        self.token = None


@recipe_command(BISECT)
async def bisect(ls: FusionSwitchServer, params: dict):
    from ...workflow.bisect_job import BisectJob

    doc = target.config(ls, params, command=BISECT)
    cfg_path = target.file_path(doc, command=BISECT)
    name = file_name(doc.uri)
    if ls.state.bisect_job is not None:  # one bisection per server
        raise Refused(
            "fusion-switch: a bisection is already running; wait for it or cancel it "
            "(fusionSwitch.cancelBisect)."
        )
    try:
        on_disk = cfg_path.read_bytes().decode("utf-8") if cfg_path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"fusion-switch: cannot read {cfg_path}: {exc}") from None
    if on_disk.removeprefix("\ufeff") != doc.text:
        raise Refused(
            f"fusion-switch: save {name} first: the bisection runs your job with the file on disk."
        )
    request = _request(params, cfg_path)
    bar = _Progress(ls)
    job = BisectJob(request, bar.report)
    ls.state.bisect_job = job
    outcome = None
    try:
        await bar.begin(job, f"Bisecting fusion rules of {name}")
        log(ls, "fusion-switch: running " + shlex.join(job.argv), types.MessageType.Info)
        outcome = await job.run()
    finally:
        ls.state.bisect_job = None
        if outcome is None:  # $/cancelRequest ends this task here, even before the child
            bar.end("cancelled")  # exists (a review: the bar was never ended)
    bar.end(outcome.status)
    if outcome.status == "cancelled":
        show(
            ls,
            f"fusion-switch: bisection cancelled; {name} is as before. Run it again with "
            '{"resume": true} to continue without repeating finished trials.',
            types.MessageType.Info,
        )
        return {"cancelled": True}
    if outcome.status == "failed":
        for line in outcome.stderr_tail:
            log(ls, f"fusion-switch bisect: {line}")
        raise CommandError(f"fusion-switch: the bisection failed: {outcome.message}")
    if outcome.status == "no-result":
        show(ls, f"fusion-switch: {outcome.message}.", types.MessageType.Warning)
        return {"guilty": [], "message": outcome.message, "exit": outcome.exit_code}
    try:
        final = cfg_path.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"fusion-switch: cannot read {cfg_path} after bisect: {exc}") from None
    current = ls.state.documents.get(doc.uri)
    if current is not None and current.text != final:
        await _bring_to_result(ls, current, cfg_path, on_disk, final, outcome.result)
    guilty = outcome.result.get("guilty", [])
    names = ", ".join(f"{g['rule']} ({g['section']})" for g in guilty)
    show(
        ls,
        f"fusion-switch: guilty: {names}; {name} now switches off exactly these rules "
        f"({outcome.result.get('trials')} trials). 'Restore Configuration' undoes it.",
        types.MessageType.Warning,
    )
    return {
        "guilty": guilty,
        "trials": outcome.result.get("trials"),
        "bound": outcome.result.get("bound"),
        "version": outcome.result.get("version"),
    }


async def _bring_to_result(ls, doc, cfg_path, started: str, final: str, result: dict) -> None:
    """The buffer brought to the bisection's result. Its text is the file the bisection
    started from, or a trial's the editor reloaded from disk (each trial writes the file),
    unless the user typed into it meanwhile: that text is recorded first (a review: it was
    replaced and lost)."""
    from ...workflow.safe_files import digest
    from .editing import _recorded_replace

    text = doc.text
    trials = result.get("trial_digests") or ()
    if (
        text == started.removeprefix("\ufeff")
        or digest(text.encode("utf-8", "surrogatepass")) in trials
    ):
        await replace_text(ls, doc, final, "Fusion Switch: bisection result")
        return
    try:
        await _recorded_replace(
            ls,
            doc,
            cfg_path,
            final,
            "Fusion Switch: bisection result",
            kind="edit",
            why="text typed while a bisection ran, replaced by its result",
        )
    except CommandError as exc:  # not recorded, or the editor refused: the text stays
        show(ls, f"{exc} The bisection's result is in the file on disk.", types.MessageType.Warning)


@recipe_command(CANCEL_BISECT)
async def cancel_bisect(ls: FusionSwitchServer, params: dict):
    job = ls.state.bisect_job
    if job is None:
        show(ls, "fusion-switch: no bisection is running.", types.MessageType.Info)
        return {"cancelled": False}
    job.cancel()
    return {"cancelled": True}

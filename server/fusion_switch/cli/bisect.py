"""`fusion-switch bisect CFG [--rules R1,R2 | --fusion-result FILE | --all-fired] -- CMD ...`:
find every guilty fusion rule by re-running the user's own job, no dumps needed.

First checks that the job is good with all fusion off and bad with the configuration as it is,
then searches (workflow/bisect.py), writing a configuration per trial (the CFG itself, or a copy
per trial substituted for `{cfg}` in CMD when -j > 1). Ends with CFG switching off exactly the
guilty rules, recorded in the edit history (restorable). A journal next to CFG lets an
interrupted run continue with --resume; the CFG is put back as it was when the run stops. A
save of CFG while the bisection runs is never overwritten: it is recorded in the history, and
the bisection stops (workflow/bisect_guard.py).

Exit status: 0 guilty rules found and switched off; 1 the job is already good (nothing to
find); 2 bad input or a trial that cannot be judged; 3 no rule the cfg switches is the cause
(bad with all fusion off), the cause is not among the candidates, the results contradict each
other, or a rule found was not confirmed (the job fails on its own: could not decide);
130 interrupted (resume with --resume). A stop for a save of CFG meanwhile is 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .bisect_confirm import confirmed, undecided, unsure_without
from .bisect_preflight import NOT_FUSION, preflight


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bisect",
        help="find the guilty fusion rules by re-running your job",
        usage=(
            "fusion-switch bisect CFG [--rules R1,R2,... | --fusion-result FILE | --all-fired] "
            "[--repeat N] [--metric REGEX --threshold X [--lower-is-better]] [-j N] [--timeout S] "
            "[--resume] "
            "-- CMD ARGS..."
        ),
        description=(
            "Re-run CMD with fusion rules switched on and off to find every rule that makes "
            "it bad (exit status, or --metric). CMD comes after '--'; '{cfg}' in it is "
            "replaced by the configuration of the trial."
        ),
    )
    add_options(parser)
    # argparse cannot put options after a REMAINDER positional: everything from CFG on is
    # collected here and parsed again in run() (options before '--', the command after it).
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="CFG [OPTIONS] -- CMD ARGS")
    parser.set_defaults(func=run)


def add_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--rules", metavar="R1,R2,...", help="candidate rules (comma-separated)")
    source.add_argument(
        "--fusion-result", metavar="FILE", help="candidates: every rule that fired in this file"
    )
    source.add_argument(
        "--all-fired",
        action="store_true",
        help="candidates: every rule that fired per the fusion_result.json next to CFG or here",
    )
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per trial")
    parser.add_argument("--metric", metavar="REGEX", help="number to judge by (first group)")
    parser.add_argument("--threshold", type=float, metavar="X", help="bad below X (see next)")
    parser.add_argument(
        "--lower-is-better", action="store_true", help="the metric is bad above the threshold"
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="parallel trials")
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="stop a run after S seconds and count it bad (a job that hangs)",
    )
    parser.add_argument("--resume", action="store_true", help="continue an interrupted bisection")
    parser.add_argument("--catalogue", action="append", default=[], metavar="EXTRA.json")
    parser.add_argument("--progress", choices=("text", "jsonl"), default="text")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")


class BadInput(Exception):
    pass


def run(args: argparse.Namespace) -> int:
    from ..workflow.changes import ChangeError

    rest = list(args.rest)
    split = rest.index("--") if "--" in rest else len(rest)
    again = argparse.ArgumentParser(prog="fusion-switch bisect", add_help=False)
    again.add_argument("cfg", metavar="CFG")
    add_options(again)
    try:
        again.parse_args(rest[:split], namespace=args)
    except SystemExit:
        return 2
    args.command = rest[split + 1 :]
    _end_with_the_server()
    try:
        return Bisect(args).main()
    except (BadInput, ChangeError) as exc:
        print(f"fusion-switch bisect: {exc}", file=sys.stderr)
        return 2


def _end_with_the_server() -> None:
    """Started by the language server (``workflow.bisect_job``, in a session of its own):
    SIGTERM, handled as Ctrl-C (the job stopped, the configuration put back), when the
    server ends, even killed."""
    from ..workflow.bisect_job import SERVER_VARIABLE

    server = os.environ.pop(SERVER_VARIABLE, None)
    if server and server.isdigit():
        from ..compare.parent_death import signal_when_parent_ends

        signal_when_parent_ends(int(server), signal.SIGTERM)


class Bisect:
    def __init__(self, args: argparse.Namespace) -> None:
        from ..workflow.trials import Judge

        self.args = args
        self.catalogue = None  # set once loaded: a line-format base goes JSON for GE's passes
        command = list(args.command)
        if not command:
            raise BadInput("give the command to run after '--', e.g. -- python train.py")
        if args.jobs > 1 and not any("{cfg}" in part for part in command):
            raise BadInput(
                "with -j > 1 each trial has its own configuration: put '{cfg}' in the command "
                "where it takes the configuration path (e.g. --fusion_switch_file={cfg})"
            )
        if args.repeat < 1 or args.jobs < 1:
            raise BadInput("--repeat and -j take a number of at least 1")
        if args.timeout is not None and not 0 < args.timeout < float("inf"):
            raise BadInput("--timeout takes a number of seconds above 0, e.g. --timeout 3600")
        if (args.metric is None) != (args.threshold is None):
            raise BadInput("--metric and --threshold go together")
        metric = None
        if args.metric is not None:
            try:
                metric = re.compile(args.metric)
            except re.error as exc:
                raise BadInput(
                    f"--metric {args.metric!r} is not a regular expression: {exc}"
                ) from None
        self.command = command
        self.judge = Judge(metric, args.threshold, args.lower_is_better)
        self.count = 0
        self.last_log = "the trial's log"
        self.times: list[float] = []
        self.search = None

    # ----------------------------------------------------------------- setup

    def candidates(self, catalogue, cfg_text: str = "") -> list[tuple[str, str]]:
        from ..workflow import switching

        args = self.args
        listed_on = switching.forced_on(cfg_text)  # FE keeps these on: no candidates
        if args.rules:
            names = [n for n in args.rules.split(",") if n.strip()]
            resolved = switching.resolve_rules(names, catalogue, "off", listed_on)
            if resolved.problems:
                raise BadInput(" ".join(resolved.problems))
            return [(s, r) for s, r, _ in resolved.changes]
        path = args.fusion_result
        if args.all_fired or path is None:
            path = self._find_fusion_result()
        fired = fired_rules(Path(path))
        keep = []
        for section, rule in fired:
            known = catalogue.get(rule, section)
            if rule in listed_on or (
                known is not None and (known.cannot_switch_off or known.o1_exceptional)
            ):
                continue  # CANN keeps it on: switching it off cannot change a trial
            keep.append((section, rule))
        if not keep:
            raise BadInput(f"{path}: no rule that can be switched off fired in this graph")
        return keep

    def _find_fusion_result(self) -> str:
        cfg_dir = Path(self.args.cfg).resolve().parent
        for folder in (cfg_dir, Path.cwd()):
            found = folder / "fusion_result.json"
            if found.is_file():
                return str(found)
        raise BadInput(
            "say which rules to test: --rules R1,R2,..., --fusion-result FILE, or --all-fired "
            f"with a fusion_result.json in {cfg_dir} or the current folder"
        )

    # ----------------------------------------------------------------- main

    def main(self) -> int:
        from ..workflow.bisect_journal import BisectionRunning, hold_bisection
        from ..workflow.changes import read_cfg
        from ..workflow.safe_files import UnsafePath

        cfg = read_cfg(self.args.cfg, must_exist=False)
        self.cfg = cfg
        _refuse_unreplaceable(cfg.path)
        try:
            lock = hold_bisection(cfg.path)
        except BisectionRunning as exc:
            raise BadInput(str(exc)) from None
        except (OSError, UnsafePath) as exc:
            raise BadInput(f"cannot lock the bisection of {cfg.path}: {exc}") from None
        try:
            return self._main(cfg)
        finally:
            os.close(lock)

    def _main(self, cfg) -> int:
        from ..workflow.bisect_journal import Journal, JournalError, journal_path
        from .off import catalogue_for

        args = self.args
        catalogue = catalogue_for(args)
        jpath = journal_path(cfg.path)
        if args.resume:
            try:
                journal = Journal.load(jpath)
            except FileNotFoundError:
                raise BadInput(f"nothing to resume: no journal {jpath}") from None
            except JournalError as exc:
                raise BadInput(str(exc)) from None
            candidates = [tuple(c.split(":", 1)) for c in journal.settings["candidates"]]
            settings = self._settings(candidates)
            if settings != journal.settings:
                changed = [k for k in settings if settings[k] != journal.settings.get(k)]
                raise BadInput(
                    f"--resume with different settings ({', '.join(changed)}) than the "
                    f"interrupted run; use the same ones, or delete {jpath} to start over"
                )
            if cfg.data != journal.base:  # edited since, or a killed run's trial file
                raise BadInput(
                    f"{cfg.path} differs from the file the interrupted bisection started "
                    "from, and --resume would overwrite it. If a killed bisection left a "
                    f"trial's file there, put yours back with: fusion-switch restore {cfg.path}"
                    "; if you edited it since, delete "
                    f"{jpath} and start a new bisection"
                )
            self._keep_in_history(cfg)
        else:
            if jpath.exists():
                raise BadInput(
                    f"an interrupted bisection of {cfg.path} is in {jpath}: add --resume to "
                    "continue it. To start over, first make sure the file is yours (after a "
                    "killed bisection a trial's file is left; the one from before it comes "
                    f"back with: fusion-switch restore {cfg.path}), then delete {jpath}"
                )
            candidates = self.candidates(catalogue, cfg.text)
            journal = Journal(jpath, self._settings(candidates), cfg.data)
            self._keep_in_history(cfg)
            journal.save()
        self.journal = journal
        self.base_text = _text(journal.base)
        self.candidates_list = candidates
        self.catalogue = catalogue
        try:
            self.trial_text(())
        except ValueError as exc:
            if not args.resume:
                journal.remove()
            self._forget_start()
            raise BadInput(f"{cfg.path}: cannot switch rules in it: {exc}") from None
        from ..workflow.bisect_guard import CfgGuard, EditedMeanwhile
        from ..workflow.bisect_journal import logs_dir
        from ..workflow.safe_files import owner_of
        from ..workflow.trials import Runner

        self.guard = CfgGuard(cfg.path, journal.base)

        # root's bisection of a user's file: the trials' files are the user's (a review)
        owner = owner_of(cfg.path)
        self.runner = Runner(self.command, self.judge, args.repeat, args.timeout, owner)
        # SIGHUP: the terminal or the SSH session closed; not under nohup, which ignores it
        # so that a bisection of hours outlives the logout
        stops = [signal.SIGTERM, signal.SIGINT]
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            stops.append(signal.SIGHUP)
        previous = {s: signal.signal(s, _interrupt_once()) for s in stops}
        try:
            return self._bisect()
        except EditedMeanwhile as edited:
            self.runner.stop()
            return self._stopped_by(edited)
        except KeyboardInterrupt:
            self.runner.stop()
            if self._put_back_or_say():
                self.say(
                    f"interrupted after {self.count} trials; the configuration is as before. "
                    f"Continue with: fusion-switch bisect {cfg.path} --resume ... (same options)"
                )
            return 130
        except OSError as exc:  # a full disk (the trials' logs fill it): said (a review)
            self.runner.stop()
            where = f" ({exc.filename})" if exc.filename else ""
            print(
                f"fusion-switch bisect: stopped after {self.count} trials: "
                f"{exc.strerror or exc}{where}",
                file=sys.stderr,
            )
            if self._put_back_or_say():  # says so itself when it cannot
                self.say(
                    "the configuration is as before; free space (the trials' logs are in "
                    f"{logs_dir(cfg.path)}) and continue with: fusion-switch bisect "
                    f"{cfg.path} --resume ... (same options)"
                )
            return 2
        except BaseException:
            self.runner.stop()
            self._put_back_or_say()
            raise
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.runner.close()
            self._remove_trial_copies()

    def _keep_in_history(self, cfg) -> None:
        """The file as the bisection found it, a version of its history: its trials write
        the file itself, and a bisection killed (SIGKILL, a crash) leaves a trial's file in
        place, which ``restore`` then undoes."""
        from ..workflow.history import History, HistoryError
        from ..workflow.safe_files import UnsafePath

        try:
            self.start_version = History(cfg.path).record(
                cfg.data,
                cfg.data,
                who="bisect",
                kind="bisect",
                why="before a bisection, whose trials write this file",
            )
        except (OSError, HistoryError, UnsafePath) as exc:
            raise BadInput(f"cannot keep {cfg.path} in its history first: {exc}") from None

    def _settings(self, candidates) -> dict:
        a = self.args
        return {
            "command": self.command,
            "candidates": [f"{s}:{r}" for s, r in candidates],
            "repeat": a.repeat,
            "metric": a.metric,
            "threshold": a.threshold,
            "lower_is_better": a.lower_is_better,
            "jobs": a.jobs,
            **({"timeout": a.timeout} if a.timeout else {}),  # older journals have none
        }

    def _bisect(self) -> int:
        from ..workflow import switching
        from ..workflow.bisect import Inconsistent, Search, bound
        from ..workflow.trials import TrialError

        candidates = self.candidates_list
        n = len(candidates)
        self.say(
            f"bisecting {n} candidate rules of {self.cfg.path}; a trial is "
            f"{self.judge.describe()}"
            + (f", {self.args.repeat} runs" if self.args.repeat > 1 else "")
        )
        all_off = switching.all_off(self.base_text)
        try:
            ended = preflight(self, all_off, self.trial_text(()))
            if ended is not None:
                return self._finish_without(*ended)
            self.search = Search(candidates, self.args.jobs)
            gen = self.search.run()
            try:
                batch = next(gen)
                while True:
                    items = [(self._label(on), self.trial_text(on)) for on in batch]
                    batch = gen.send(self.evaluate(items))
            except StopIteration as stop:
                guilty = list(stop.value)
            guilty, lost = confirmed(self, guilty)
            if lost:  # the job failed on its own: no single run of it is trusted
                return self._finish_without(NOT_FUSION, undecided(guilty, lost, self.cfg.path))
            unsure = unsure_without(self, guilty) if guilty else ""
            if unsure:
                return self._finish_without(NOT_FUSION, unsure)
        except Inconsistent as exc:
            names = ", ".join(f"{r} ({s})" for s, r in exc.group[:8])
            return self._finish_without(NOT_FUSION, f"{exc} [{names}]")
        except TrialError as exc:
            self.runner.stop()
            print(f"fusion-switch bisect: {exc}", file=sys.stderr)
            self._put_base_back()
            if self.journal.trials:  # the same command ran before: it can go on
                print(
                    "  (the journal of the trials run is kept: make the same command start "
                    "again, and continue with --resume)",
                    file=sys.stderr,
                )
            else:  # nothing ran: nothing to resume (a review: a new command cannot resume)
                self.journal.remove()
                self._forget_start()
                print("  (nothing was run: fix the command and run bisect again)", file=sys.stderr)
            return 2
        used = self.search.trials
        limit = bound(n, len(guilty), self.args.jobs)
        per_round = "" if self.args.jobs <= 1 else f" in {self.search.rounds} rounds"
        return self._finish(guilty, used, per_round, limit)

    # ----------------------------------------------------------------- trials

    def trial_text(self, on) -> str:
        from ..workflow import switching

        on = set(on)
        off = [(s, r, "off") for s, r in self.candidates_list if (s, r) not in on]
        if not off:
            return self.base_text
        changes = switching.as_run_changes(self.base_text, on, off, self.catalogue)
        return switching.switched_text(self.base_text, changes, self.catalogue)

    def _label(self, on) -> str:
        n = len(self.candidates_list)
        if len(on) <= 3:
            return "on: " + ", ".join(r for _, r in on)
        return f"{len(on)} of {n} candidates on"

    def evaluate(self, items: list[tuple], every: bool = False, own: bool = False) -> list[bool]:
        """Judge each (label, cfg text[, journal key]): from the journal when it was run
        before, else run. A key of its own makes a run that repeats a trial's text (a
        confirmation) a run of its own. With ``every``, an item is bad only when each of its
        --repeat runs is (a claim's runs: :meth:`.trials.Runner.run`); with ``own``, it runs
        from the cfg itself even under -j N (a job that reads the cfg, not ``{cfg}``)."""
        from ..workflow.bisect_journal import logs_dir
        from ..workflow.safe_files import atomic_write_bytes, ensure_private_dir

        results: list[bool | None] = []
        todo = []
        keys = []
        every = every and self.args.repeat > 1  # one run: both ways alike
        for label, text, *key in items:
            label += f", bad only if all {self.args.repeat} runs are" if every else ""
            keys.append(("every run\n" if every else "") + (key[0] if key else text))
            known = self.journal.result(keys[-1])
            if known is not None:
                self.count += 1
                self._progress(label, known, resumed=True)
                results.append(known.bad)
            else:
                results.append(None)
                todo.append((len(results) - 1, label, text))
        if not todo:
            return [bool(r) for r in results]
        owner = self.runner.owner
        logs = ensure_private_dir(logs_dir(self.cfg.path), owner)

        def one(slot: int, label: str, text: str, number: int):
            data = _encode(text, self.journal.base)
            log = logs / f"trial-{number:03d}"
            if self.args.jobs > 1 and not own:  # a copy of its own: the cfg is not written
                folder = ensure_private_dir(self._trial_copies() / f"slot-{slot}", owner)
                path = folder / self.cfg.path.name
                atomic_write_bytes(path, data, owner=owner)
                return self.runner.run(path, log, every)
            # the file itself, unless the user saved it since it was last written; a trial
            # whose file changed while it ran ran with the user's file: it does not count
            self.guard.write(data, f"before trial {number}")
            result = self.runner.run(self.cfg.path, log, every)
            self.guard.check(f"while trial {number} ran", number)
            return result

        def take(index: int, label: str, result) -> None:
            self.count += 1
            self.times.append(result.seconds)
            if result.runs:
                self.last_log = result.runs[-1]["log"]
            self.journal.add(keys[index], label, result)
            self._progress(label, result, resumed=False)
            results[index] = result.bad

        numbers = list(range(self.count + 1, self.count + 1 + len(todo)))
        if len(todo) == 1 or self.args.jobs <= 1 or own:
            for (index, label, text), number in zip(todo, numbers, strict=True):
                take(index, label, one(0, label, text, number))
        else:
            with ThreadPoolExecutor(max_workers=self.args.jobs) as pool:
                futures = [
                    pool.submit(one, slot, lbl, txt, num)
                    for slot, ((_, lbl, txt), num) in enumerate(zip(todo, numbers, strict=True))
                ]
                try:
                    outcomes = [f.result() for f in futures]
                except BaseException:
                    self.runner.stop()
                    raise
            for (index, label, _), result in zip(todo, outcomes, strict=True):
                take(index, label, result)
        return [bool(r) for r in results]

    def _trial_copies(self) -> Path:
        from ..workflow.state_dir import state_dir

        return state_dir(self.cfg.path) / f"{self.cfg.path.name}.bisect-trials"

    def _remove_trial_copies(self) -> None:
        """The copies -j's trials ran with (a resumed run writes each again): only what the
        bisection wrote there goes, and the folders once empty."""
        folder = self._trial_copies()
        if folder.is_symlink() or not folder.is_dir():
            return
        for slot in folder.glob("slot-*"):
            if slot.is_symlink() or not slot.is_dir():
                continue
            with contextlib.suppress(OSError):
                (slot / self.cfg.path.name).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                slot.rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()

    def _progress(self, label: str, result, resumed: bool) -> None:
        verdict = "bad" if result.bad else "good"
        if any(run.get("timed_out") for run in result.runs):
            verdict = f"bad (timed out after {self.args.timeout:g} s)"
        note = " (from the journal)" if resumed else f" ({result.seconds:.1f} s)"
        message = f"trial {self.count} [{label}]: {verdict}{note}"
        remaining = 0
        if self.search is not None:
            left = self.search.left
            found = len(self.search.found)
            remaining = self.search.remaining_estimate()
            message += f"; {left} candidates left, {found} guilty so far"
        if self.times:
            avg = sum(self.times) / len(self.times)
            message += f"; {avg:.1f} s per trial"
            if remaining:
                message += f", about {remaining} more (~{_duration(avg * remaining)})"
        if self.args.progress == "jsonl":
            total = self.count + max(remaining, 1)
            print(
                json.dumps({"done": self.count, "total": total, "message": message}),
                file=sys.stderr,
                flush=True,
            )
        else:
            print(f"fusion-switch bisect: {message}", file=sys.stderr, flush=True)

    # ----------------------------------------------------------------- endings

    def _put_base_back(self, found: str = "") -> bool:
        """The file as the bisection found it; False (said) when it cannot be written. A save
        made meanwhile is not overwritten: it is kept, recorded, and EditedMeanwhile raised
        (``found``: what the bisection had found, said with it)."""
        guard = getattr(self, "guard", None)
        if guard is None:
            return True
        try:
            put_back = guard.put_back(self.journal.base)
        except OSError as exc:
            print(
                f"fusion-switch bisect: cannot put {self.cfg.path} back: {exc}; it comes back "
                f"with: fusion-switch restore {self.cfg.path} (its content before the "
                f"bisection is in {self.journal.path} too)",
                file=sys.stderr,
            )
            return False
        if not put_back:
            guard.edited.found = guard.edited.found or found
            raise guard.edited
        self._forget_start()
        return True

    def _put_back_or_say(self) -> bool:
        """Put the file back as the bisection stops anyway; False (said) when a save of the
        user's was found there and kept, or when it cannot be written."""
        from ..workflow.bisect_guard import EditedMeanwhile

        try:
            return self._put_base_back()
        except EditedMeanwhile as edited:
            self.say(self._edited_message(edited))
            return False

    def _stopped_by(self, edited) -> int:
        message = self._edited_message(edited)
        self.say(message)
        self._emit(
            {
                "status": "edited",
                "exit": 2,
                "message": message,
                "guilty": [],
                "version": edited.version,
            }
        )
        return 2

    def _edited_message(self, edited) -> str:
        start = getattr(self, "start_version", None)
        return edited.advice(self.journal.path, start.number if start is not None else None)

    def _forget_start(self) -> None:
        """The file is as it was: the version kept at the start (for a SIGKILL) goes, so
        that restore and the recipe's 'off --all' step see the history as before."""
        from ..workflow.history import History, HistoryError
        from ..workflow.safe_files import UnsafePath

        start, self.start_version = getattr(self, "start_version", None), None
        if start is not None:
            with contextlib.suppress(OSError, HistoryError, UnsafePath):
                History(self.cfg.path).forget(start)

    def _finish_without(self, code: int, message: str) -> int:
        self._put_base_back(found=message)
        self.journal.remove()
        print(f"fusion-switch bisect: {message}.", file=sys.stderr)
        self._emit({"status": "no-result", "exit": code, "message": message, "guilty": []})
        return code

    def _finish(self, guilty, used: int, per_round: str, limit: int) -> int:
        from ..workflow import switching
        from ..workflow.changes import read_cfg, write_change

        names = ", ".join(f"{r} ({s})" for s, r in guilty)
        self._put_base_back(found=f"guilty: {names}")
        base_cfg = read_cfg(self.cfg.path, must_exist=False)
        changes = [(s, r, "off") for s, r in guilty]
        final = switching.switched_text(self.base_text, changes, self.catalogue)
        note = switching.json_note(self.cfg.path, self.base_text, changes, self.catalogue)
        version = write_change(
            base_cfg,
            _encode(final, self.journal.base),
            who="bisect",
            kind="bisect",
            why=f"bisect: {names} off",
            rules=[f"{s}:{r}" for s, r in guilty],
        )
        self.journal.remove()
        rounds_bound = f"bound {limit} rounds" if self.args.jobs > 1 else f"bound {limit}"
        print(
            f"fusion-switch bisect: guilty: {names}. {used} search trials{per_round} "
            f"({rounds_bound} for {len(guilty)} of {len(self.candidates_list)}), "
            f"{self.count} trials in all.",
            file=sys.stderr,
        )
        undo = (
            f" (previous file: version {version.number}; undo with: fusion-switch restore "
            f"{self.cfg.path})"
            if version
            else ""
        )
        more = switching.now_obeyed_by_ge(self.base_text, changes, self.catalogue)
        exactly = "" if more else "exactly "  # GE obeys more of the file's lines now
        print(f"fusion-switch: {self.cfg.path} now switches off {exactly}{names}{undo}.")
        if note:
            print(f"fusion-switch: {note}.")
        self._emit(
            {
                "status": "found",
                "exit": 0,
                "guilty": [{"section": s, "rule": r} for s, r in guilty],
                "trials": self.count,
                "search_trials": used,
                "bound": limit,
                "version": version.number if version else None,
                # every text the trials wrote to CFG: an editor that reloaded one is told
                # from one holding text the user typed
                "trial_digests": sorted(self.guard.texts),
            }
        )
        return 0

    def _emit(self, payload: dict) -> None:
        if self.args.fmt == "json":
            print(json.dumps(payload))

    def say(self, message: str) -> None:
        print(f"fusion-switch bisect: {message}", file=sys.stderr, flush=True)


def fired_rules(path: Path) -> list[tuple[str, str]]:
    """(section, rule) of every rule that took effect, from any fusion_result.json layout."""
    from ..readers.fusion_result import FusionResultError, read_fusion_result

    try:
        return list(read_fusion_result(path).fired())
    except FusionResultError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None


def _refuse_unreplaceable(path: Path) -> None:
    """BadInput where the cfg cannot be replaced (read-only, hard-linked): before any trial or
    journal (a review: a read-only file failed at the first trial with a traceback and left a
    journal behind; with -j the whole bisection ran before its result could not be written)."""
    from ..workflow.safe_files import NotReplaceable, check_replaceable

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return  # written whole at the end (the trials' own files: -j, or the file itself)
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        check_replaceable(path, st)
    except NotReplaceable as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None


def _interrupt_once() -> Callable:
    """A handler that stops the bisection at the first signal and ignores the later ones, so
    that its clean-up runs to its end: a second Ctrl-C cut ``Runner.stop`` short before its
    SIGKILL, and bisect waited for ever on jobs that ignore SIGTERM (a review)."""
    seen: list[int] = []

    def handle(signum, frame):
        if not seen:
            seen.append(signum)
            raise KeyboardInterrupt

    return handle


def _text(data: bytes | None) -> str:
    if data is None:
        return ""
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    return body.decode("utf-8", "surrogatepass")


def _encode(text: str, base: bytes | None) -> bytes:
    bom = b"\xef\xbb\xbf" if base is not None and base.startswith(b"\xef\xbb\xbf") else b""
    return bom + text.encode("utf-8", "surrogatepass")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

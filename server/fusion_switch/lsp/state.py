"""Everything the server knows between messages, kept apart from the handlers.

Handlers read and change state only through this object; it never talks to the client
(handlers decide what to tell the user). One analysis per document is cached, for its text and
`generation` (the text itself, never the version number, which a client may repeat):
`generation` moves whenever the catalogue or target changes, so a settings change makes every
cached analysis stale at once.

Large documents (`LARGE_DOCUMENT`) are analysed off the event loop, on one worker thread for
the whole process (`_ANALYSER`), so at most one analysis in flight per document: edits made
while one runs start nothing; when it ends, the text current then is analysed if it is newer
(the versions in between are skipped). A thread cannot be stopped, so this is what bounds the
work (a review typed into an 8 MB file and had dozens of analyses at once, minutes behind and
2 GB held). Requests on a large document that need the syntax tree only take it from the
cached analysis or from a parse (`document_async`, shared by the requests on one text), and
their work runs on one other worker thread (`run_for_request`), never behind an analysis.

The pure layer (`fusion_switch.cfg`, the 674-rule catalogue) is not imported at start-up: the
server answers `initialize` first, then `preload` loads the catalogue, the parser and the
checks while the client reads that answer (time the server would spend waiting for `didOpen`).
What completion, hover and quick fixes need is loaded by `warm_up` on a worker thread a little
later (`WARM_UP_DELAY` after `initialized`), so it neither delays the first diagnostics nor the
first completion.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types

from .capabilities import ClientFeatures
from .documents import DocumentStore, OpenDocument
from .scopes import Key, Scopes
from .settings import Settings

if TYPE_CHECKING:
    from ..catalogue import Catalogue, CatalogueError, Target
    from ..cfg import Analysis, CfgDocument
    from ..cfg.model import Context

T = TypeVar("T")
logger = logging.getLogger("fusion_switch.lsp")

# Documents larger than this are analysed on a worker thread so the event loop keeps
# answering other requests (a 10 MB paste must not freeze the editor).
LARGE_DOCUMENT = 256_000
# How long a request waits for a worker-thread analysis before answering from the syntax tree.
PATIENCE = 5.0
# Seconds after `initialized` before `warm_up` runs: after the first check of a file opened at
# start-up, which it would otherwise compete with.
WARM_UP_DELAY = 0.5
_WARM_UP_TEXT = '{"Switch": {"GraphFusion": {"ALL": "on", "X": "on"}}}'
# a new key being typed in each section (no colon yet): what a first completion looks like
_WARM_UP_COMPLETION = '{"Switch": {"GraphFusion": {"X"}, "UBFusion": {"X"}}}'


@dataclass
class SettingsOutcome:
    """What applying new settings changed, and what the user should be told."""

    revalidate: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Cached:
    generation: int
    text: str  # the text analysed: compared by identity, then by value
    analysis: Analysis


@dataclass(eq=False)
class _Job:
    """One analysis of one text, asked for by whoever awaits `future`: the Analysis, or None
    when a newer text took its turn before it started (see `ServerState._start`)."""

    text: str
    generation: int
    future: asyncio.Future

    def of(self, text: str, generation: int) -> bool:
        return self.generation == generation and _same(self.text, text)


@dataclass(eq=False)
class _Lane:
    """One large document's analyses: the one in flight, and the next, for the newest text
    asked about while it runs."""

    running: _Job | None = None
    queued: _Job | None = None


@dataclass(eq=False)
class _Parse:
    """One parse of one text on the request thread, shared by the requests on that text; when
    the last of them is cancelled before it started, it never starts."""

    text: str
    future: asyncio.Future
    waiters: int = 0


def _same(a: str, b: str) -> bool:
    return a is b or a == b


class _Worker:
    """One daemon thread running the calls given to it, the most urgent first (in the order
    given among equals, or the newest first). A call whose future is cancelled before it
    starts never starts; a daemon thread does not hold the process when it exits (a thread
    cannot be stopped)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._calls: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(
        self, urgency: int, fn: Callable[..., T], *args: Any, newest_first: bool = False
    ) -> Future[T]:
        future: Future[T] = Future()
        order = next(self._order)
        self._calls.put((urgency, -order if newest_first else order, future, fn, args))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
        return future

    def _work(self) -> None:
        worked = False
        while True:
            try:
                _, _, future, fn, args = self._calls.get(timeout=IDLE if worked else None)
            except queue.Empty:  # a burst of work is over: give back what it freed
                worked = False
                _release_freed_memory()
                continue
            if future.set_running_or_notify_cancel():
                worked = True
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # the caller gets it, as from an executor
                    future.set_exception(exc)
            del future, fn, args  # nothing of a call outlives it (a tree is large)


def _release_freed_memory() -> None:
    """glibc's `malloc_trim`: hand the pages of freed memory back to the system (without it a
    burst of edits on an 8 MB file kept hundreds of MB the process no longer used); a no-op
    where there is no glibc."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        import ctypes  # here: the server's start does not pay for it

        try:
            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM: Any = None  # resolved on first use; False where it does not exist
# Seconds a worker waits without work after a burst before it gives freed memory back.
IDLE = 1.0


# Analyses of large documents, one at a time for the whole process.
_ANALYSER = _Worker("fusion-switch-analysis")
# Parses and request work on large documents: a request's work (completion, hover... on a
# tree it has) before the next parse, so each tree is used and let go as soon as it is made;
# parses of the newest text first: the request the user waits for (a client that does not
# cancel the requests it no longer needs gets their answers after it).
_REQUESTS = _Worker("fusion-switch-requests")
_WORK, _PARSE = 0, 1  # urgency on `_REQUESTS`


async def run_for_request(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` on the request thread (for large documents); cancelled before it
    started (the request was), it never starts."""
    call = functools.partial(fn, *args, **kwargs)
    return await asyncio.wrap_future(_REQUESTS.submit(_WORK, call))


class ServerState:
    def __init__(self) -> None:
        self.documents = DocumentStore()
        self.settings = Settings()  # the window's; a folder's answer goes over it (`scopes`)
        self.scopes = Scopes()
        self.client = ClientFeatures()
        self.encoding: str = types.PositionEncodingKind.Utf16
        # catalogues by their resolved extra files, each loaded on first use (built-in: ())
        self._catalogues: dict[tuple[str, ...], _Loaded] = {}
        self._live: dict[Key, _Live] = {None: _Live(Settings(), (), None)}
        self.generation = 0
        self.initialized = False  # `initialized` arrived: notifications may be sent
        self.results = ComparisonResults()
        self.compare_job: Any = None  # the running workflow.job.CompareJob, if any
        self.bisect_job: Any = None  # the running workflow.bisect_job.BisectJob, if any
        self.validations: dict[str, asyncio.Task] = {}  # uri → background validation
        self.debouncing: set[str] = set()  # uris whose validation waits for edits to settle
        self.last_checked: dict[str, float] = {}  # uri → loop time its last check started
        self.background: set[asyncio.Future] = set()  # other tasks, kept until done
        self._cache: dict[str, _Cached] = {}
        self._lanes: dict[str, _Lane] = {}  # uri → its analyses in flight (large documents)
        self._parses: dict[str, _Parse] = {}  # uri → the parse of its newest text asked for
        self._announced: set[tuple[str, str]] = set()

    # context and analyses ------------------------------------------------------------
    def _loaded(self, files: tuple[str, ...]) -> _Loaded:
        """The catalogue with these extra files: built-in + the user's CANN install, if one
        is found, + the files (loaded once per set of files)."""
        loaded = self._catalogues.get(files)
        if loaded is None:
            from ..catalogue.cann import load_catalogue_with_cann

            catalogue, errors, cann = load_catalogue_with_cann(list(files))
            loaded = self._catalogues[files] = _Loaded(catalogue, errors, cann.label)
        return loaded

    def _scope(self, uri: str | None) -> _Live:
        return self._live.get(self.scopes.key_of(uri)) or self._live[None]

    @property
    def catalogue(self) -> Catalogue:
        """The window's catalogue (a document's: `catalogue_for`)."""
        return self._loaded(self._live[None].extra_files).catalogue

    @property
    def catalogue_errors(self) -> list[CatalogueError]:
        return self._loaded(self._live[None].extra_files).errors

    def catalogue_errors_for(self, uri: str | None) -> list[CatalogueError]:
        return self._loaded(self._scope(uri).extra_files).errors

    @property
    def cann_label(self) -> str:
        loaded = self._catalogues.get(self._live[None].extra_files)
        return loaded.cann_label if loaded else "CANN install not looked for yet"

    @property
    def target(self) -> Target | None:
        """The window's target (a document's: `target_for`)."""
        return self._live[None].target

    @property
    def detected_target(self) -> str | None:
        return self._live[None].detected_target

    def settings_for(self, uri: str | None) -> Settings:
        """The settings a document is checked and compared with (its folder's, see `scopes`)."""
        return self._scope(uri).settings

    def catalogue_for(self, uri: str | None) -> Catalogue:
        return self._loaded(self._scope(uri).extra_files).catalogue

    def target_for(self, uri: str | None) -> Target | None:
        return self._scope(uri).target

    def context(self, uri: str | None = None) -> Context:
        """What the checks of this document depend on (the window's without a document)."""
        from ..cfg.model import Context

        scope = self._scope(uri)
        return Context(catalogue=self._loaded(scope.extra_files).catalogue, target=scope.target)

    def preload(self) -> None:
        """Load what the first check needs (the catalogue and its name index, the parser and
        the checks) while the client reads our `initialize` answer and sends `initialized` and
        `didOpen`: time the server would otherwise spend waiting."""
        from ..cfg.analysis import analyse
        from ..cfg.suggest import name_index
        from ..workflow.results import load_results  # a comparison's results, if any

        name_index(self.catalogue)
        del analyse, load_results

    def warm_up(self) -> None:
        """Import and exercise the pure layer once (run on a worker thread after start-up):
        the check, completion, hover and quick fixes of a small file."""
        from .. import cfg

        ctx = self.context()
        analysis = cfg.analyse(_WARM_UP_TEXT, ctx)
        inside_x = _WARM_UP_TEXT.index('"X"') + 1
        cfg.complete(analysis.document, inside_x, ctx)
        cfg.hover(analysis.document, inside_x, ctx)
        cfg.code_actions(analysis.document, analysis.findings, ctx)
        self._warm_completion(ctx)

    def _warm_completion(self, ctx: Context) -> None:
        """Build what the first completion of a new rule key needs in each section, for this
        client (rule documentation, the shared items and their JSON): once per catalogue,
        ~10 ms for the built-in one, ~0.1 s for 5,000 rules, a cost the first completion in a
        section would otherwise pay."""
        from .. import cfg
        from .convert import Converter
        from .text import LineIndex

        text = _WARM_UP_COMPLETION
        conv = Converter(LineIndex(text), self.encoding, self.client)
        document = cfg.parse(text)
        for at in (text.index('"X"') + 2, text.rindex('"X"') + 2):  # as features/completion
            conv.completion_list(cfg.complete_choices(document, at, ctx, self.client.snippets))

    def result_id(self, doc: OpenDocument) -> str:
        """Identifies the diagnostics of one document text under one catalogue/target (the
        revision moves with every change, even one that repeats the version number)."""
        return f"{doc.version}:{doc.revision}:{self.generation}"

    def _cached(self, doc: OpenDocument, *, complete: bool = True) -> Analysis | None:
        """The cached analysis of the document's text; `complete`: with its deferred
        suggestions filled in first (see `analysis`)."""
        hit = self._cache.get(doc.uri)
        if hit is not None and hit.generation == self.generation and _same(hit.text, doc.text):
            if complete and hit.analysis.deferred:
                from .. import cfg

                cfg.fill_suggestions(hit.analysis)
            return hit.analysis
        return None

    def _store(self, uri: str, generation: int, analysis: Analysis, text: str) -> None:
        self._cache[uri] = _Cached(generation, text, analysis)
        parse = self._parses.get(uri)
        if parse is not None and parse.future.done():
            del self._parses[uri]  # the analysis holds a tree of the newest text now

    def analysis(self, doc: OpenDocument, *, defer_suggestions: bool = False) -> Analysis:
        """The analysis of the document's current text, computed now if not cached.

        `defer_suggestions` (the first publish of a check): the "did you mean" of many new
        unknown names may be missing (`Analysis.deferred`); every other caller gets them
        filled in, so only that publish ever sees an incomplete analysis."""
        from .. import cfg

        cached = self._cached(doc, complete=not defer_suggestions)
        if cached is None:
            text = doc.text
            context = self.context(doc.uri)
            cached = cfg.analyse(text, context, defer_suggestions=defer_suggestions)
            self._store(doc.uri, self.generation, cached, text)
        return cached

    async def analysis_async(self, doc: OpenDocument) -> Analysis:
        """Like `analysis`, but large documents are analysed on the worker thread; callers
        asking for the same text share one computation. If that takes longer than `PATIENCE`
        seconds, or a newer text takes its turn, the answer is built on the syntax tree alone
        (see `analysis_or_syntax`). For requests that need the findings (code actions, the
        recipe's edits): the others take `document_async` and never wait for an analysis."""
        analysis, _ = await self.analysis_or_syntax(doc)
        return analysis

    async def analysis_or_syntax(self, doc: OpenDocument) -> tuple[Analysis, bool]:
        """(analysis, complete): the full analysis of the document's text as it is now, or a
        parse-only one (syntax findings) after `PATIENCE` seconds, or at once when an edit
        made since replaced it in the queue: no request waits for minutes on a pathological
        file, nor for an analysis that will not run."""
        from .. import cfg

        cached = self._cached(doc)
        if cached is not None:
            return cached, True
        if len(doc.text) < LARGE_DOCUMENT:
            return self.analysis(doc), True
        text = doc.text
        try:
            analysis = await asyncio.wait_for(asyncio.shield(self._start(doc)), PATIENCE)
        except TimeoutError:
            analysis = None
        if analysis is not None:
            return analysis, True
        document = await self._parsed(doc.uri, text)
        return cfg.Analysis(document, list(document.syntax_findings)), False

    async def document_async(self, doc: OpenDocument) -> CfgDocument:
        """The syntax tree of the document's text, for requests that need nothing else
        (completion, hover, outline, folding, formatting): the cached analysis's, else for a
        large document a parse shared by the requests on this text, never an analysis."""
        cached = self._cached(doc, complete=False)
        if cached is not None:
            return cached.document
        if len(doc.text) < LARGE_DOCUMENT:
            return self.analysis(doc).document
        return await self._parsed(doc.uri, doc.text)

    async def full_analysis(self, doc: OpenDocument) -> Analysis | None:
        """The complete analysis of the document's text however long it takes (used to replace
        a parse-only one); None when a newer text took its turn."""
        cached = self._cached(doc)
        if cached is not None or len(doc.text) < LARGE_DOCUMENT:
            return cached if cached is not None else self.analysis(doc)
        return await asyncio.shield(self._start(doc))

    def _start(self, doc: OpenDocument) -> asyncio.Future:
        """The analysis of the document's current text on the worker thread: the one in
        flight or queued for this text, else a new one, started now if none of this document
        is in flight, else queued in place of the older text queued (whose waiters get None)."""
        loop = asyncio.get_running_loop()
        lane = self._lanes.setdefault(doc.uri, _Lane())
        for job in (lane.running, lane.queued):
            if job is not None and job.of(doc.text, self.generation):
                return job.future
        job = _Job(doc.text, self.generation, loop.create_future())
        if lane.running is None:
            self._run(doc.uri, lane, job)
        else:
            if lane.queued is not None:
                _resolve(lane.queued.future, None)
            lane.queued = job
        return job.future

    def _run(self, uri: str, lane: _Lane, job: _Job) -> None:
        from .. import cfg

        lane.running = job
        logger.debug("analysing %s (%d characters) on the worker thread", uri, len(job.text))
        context = self.context(uri)
        done = asyncio.wrap_future(_ANALYSER.submit(0, cfg.analyse, job.text, context))
        done.add_done_callback(functools.partial(self._finished, uri, lane, job))

    def _finished(self, uri: str, lane: _Lane, job: _Job, done: asyncio.Future) -> None:
        """An analysis ended: keep it if its text is still the document's, answer its
        waiters, then analyse the text current now if a newer one was asked for meanwhile."""
        lane.running = None
        result = None
        if not done.cancelled():
            if done.exception() is not None:
                logger.error("analysis of %s failed", uri, exc_info=done.exception())
            else:
                result = done.result()
        doc = self.documents.get(uri) if self._lanes.get(uri) is lane else None
        if result is not None and doc is not None and job.of(doc.text, self.generation):
            self._store(uri, job.generation, result, job.text)
        _resolve(job.future, result)
        queued, lane.queued = lane.queued, None
        follow = self._follow(doc, queued, done.get_loop())
        if follow is not None:
            self._run(uri, lane, follow)
        elif self._lanes.get(uri) is lane:
            del self._lanes[uri]

    def _follow(
        self, doc: OpenDocument | None, queued: _Job | None, loop: asyncio.AbstractEventLoop
    ) -> _Job | None:
        """What to analyse once an analysis ended: nothing unless a newer text was asked for
        meanwhile (`queued`), then the document's text as it is now unless it is analysed
        already. Waiters of a queued older text get None (they parse their text instead)."""
        if queued is None:
            return None
        if doc is None:  # closed, or opened again
            _resolve(queued.future, None)
            return None
        cached = self._cached(doc, complete=False)
        if queued.of(doc.text, self.generation):
            if cached is None:
                return queued
            _resolve(queued.future, cached)
            return None
        _resolve(queued.future, None)
        return _Job(doc.text, self.generation, loop.create_future()) if cached is None else None

    async def _parsed(self, uri: str, text: str) -> CfgDocument:
        """The syntax tree of `text` (a version of `uri`), parsed on the request thread once
        for all the requests that ask for it."""
        from .. import cfg

        parse = self._parses.get(uri)
        if parse is None or parse.future.cancelled() or not _same(parse.text, text):
            parsing = _REQUESTS.submit(_PARSE, cfg.parse, text, newest_first=True)
            future = asyncio.wrap_future(parsing)
            parse = _Parse(text, future)
            self._parses[uri] = parse
        parse.waiters += 1
        try:
            return await asyncio.shield(parse.future)
        finally:
            parse.waiters -= 1
            if parse.waiters == 0:
                if not parse.future.done():
                    parse.future.cancel()  # nobody wants it: never started, if not yet
                if self._parses.get(uri) is parse and not self._parse_wanted(uri, text):
                    del self._parses[uri]  # a tree is large: kept only for the next request

    def _parse_wanted(self, uri: str, text: str) -> bool:
        """Whether a parse of `text` may serve the next request on `uri`: the text is still
        the document's and no analysis of it (which holds a tree too) is cached."""
        doc = self.documents.get(uri)
        return doc is not None and doc.text is text and self._cached(doc, complete=False) is None

    def keep(self, future: asyncio.Future) -> None:
        """Hold a reference to a fire-and-forget task until it is done."""
        self.background.add(future)
        future.add_done_callback(self.background.discard)

    def forget(self, uri: str) -> None:
        """The document was opened again or closed: its analyses and parses are no longer
        wanted (one in flight ends on its own, and nothing follows it)."""
        self._cache.pop(uri, None)
        self._parses.pop(uri, None)
        lane = self._lanes.pop(uri, None)
        if lane is not None and lane.queued is not None:
            _resolve(lane.queued.future, None)
            lane.queued = None

    # settings ------------------------------------------------------------------------
    def apply_settings(self, settings: Settings, *, force_reload: bool = False) -> SettingsOutcome:
        """Adopt new window settings (every folder without an answer of its own, and the keys
        a folder's answer leaves out): reload catalogues whose files changed, resolve targets."""
        self.settings = settings
        return self.refresh_scopes(force_reload=force_reload)

    def apply_folder_answer(self, folder: str, answer: Any) -> SettingsOutcome:
        """The client's answer for a workspace folder (a scoped `workspace/configuration`
        item); null or not an object: the folder takes the window's settings."""
        if isinstance(answer, dict):
            self.scopes.answers[folder] = answer
        else:
            self.scopes.answers.pop(folder, None)
        return self.refresh_scopes()

    def refresh_scopes(self, *, force_reload: bool = False) -> SettingsOutcome:
        """Bring every key's catalogue and target up to date with its settings. The catalogue
        package is imported only when something changed: the default settings of `initialize`
        must not delay its answer (see `preload`)."""
        outcome = SettingsOutcome()
        if force_reload:
            self._catalogues.clear()
        scopes = self.scopes.scopes(self.settings)
        window_target = scopes[None].settings.target
        live: dict[Key, _Live] = {}
        for key, scope in scopes.items():
            before = self._live.get(key)
            where = f" (workspace folder {scope.folder})" if key is not None else ""
            files = scope.extra_files
            if before is None or force_reload or files != before.extra_files:
                if files or force_reload:
                    self._announce(self._loaded(files).errors, force_reload, outcome)
                outcome.revalidate = True  # a new key, or its catalogue changed
            text = scope.settings.target
            if before is not None and not force_reload and text == before.settings.target:
                target, detected = before.target, before.detected_target
            elif before is None and text == window_target:  # said for the window already
                target, detected = live[None].target, live[None].detected_target
            else:
                target, detected = self._resolve(text, where, outcome), None
            if before is not None and target != before.target:
                outcome.revalidate = True
            live[key] = _Live(scope.settings, files, target, detected)
        if set(live) != set(self._live):
            outcome.revalidate = True  # a folder's answer was withdrawn
        self._live = live
        if outcome.revalidate:
            self.generation += 1
        return outcome

    def _announce(self, errors, force_reload: bool, outcome: SettingsOutcome) -> None:
        for error in errors:
            key = (error.path, error.message)
            if key not in self._announced or force_reload:
                self._announced.add(key)
                outcome.warnings.append(
                    f"fusion-switch: extra catalogue {error.path} was not loaded: "
                    f"{error.message}. The other catalogues are in use."
                )

    @staticmethod
    def _resolve(text: str, where: str, outcome: SettingsOutcome) -> Target | None:
        if not text:
            return None
        from ..catalogue import known_target_names, resolve_target

        target = resolve_target(text)
        if target is None:
            outcome.warnings.append(
                f"fusion-switch: unknown target {text!r} in fusionSwitch.target{where}; "
                "target checks are off. Known targets: " + ", ".join(known_target_names())
            )
        return target

    def attach_results(self, cfg_path: Path, summary: dict) -> None:
        """A newer comparison replaces the results of the configuration it was made for, and
        of no other (and their annotations: the generation moves, so pull clients re-fetch
        diagnostics)."""
        self.results.put(cfg_path, summary)
        self.generation += 1

    def detach_results(self, cfg_path: Path) -> bool:
        """A newer run names no rule for this configuration (statistics dumps): its earlier
        results are taken off. Whether there were any."""
        had = self.results.get(cfg_path) is not None
        self.results.drop(cfg_path)
        self.generation += 1
        return had

    def use_detected_target(self, soc_version: str | None, uri: str | None = None) -> str | None:
        """Adopt the graphs' soc_version for the settings of the compared configuration
        (`uri`: its folder's, else the window's) when their fusionSwitch.target is empty;
        returns the label when this changed the target in force (the caller tells the user)."""
        from ..catalogue import resolve_target

        scope = self._scope(uri)
        if scope.settings.target or not soc_version:
            return None
        target = resolve_target(soc_version)
        if target is None or target == scope.target:
            return None
        scope.target = target
        scope.detected_target = soc_version
        self.generation += 1
        return target.label

    def status(self) -> dict:
        """The payload of the `fusionSwitch/status` notification: the window's target and
        catalogue, under `folders` each workspace folder's that has settings of its own, and
        under `files` each open configuration's suspect counts (`suspect_counts`)."""
        payload: dict[str, Any] = self._status_of(self._live[None])
        folders = {key: self._status_of(live) for key, live in self._live.items() if key}
        if folders:
            payload["folders"] = folders
        payload["files"] = self.suspect_counts()
        return payload

    def _status_of(self, live: _Live) -> dict[str, Any]:
        catalogue = self._loaded(live.extra_files).catalogue
        return {
            "target": live.target.label if live.target else None,
            "catalogue": ", ".join(catalogue.origins) or "built-in",
        }

    def suspect_counts(self) -> list[dict[str, Any]]:
        """Per open configuration with comparison results (`uri`): the rules they suspect and,
        of them, the ones the replay proves. Per file: a status bar shows the active file's
        own count (a review: it showed the latest comparison's on every file)."""
        from pygls.uris import to_fs_path

        out: list[dict[str, Any]] = []
        for doc in self.documents:
            path = to_fs_path(doc.uri)
            summary = self.results.get(Path(path)) if path else None
            if summary is not None:
                suspects, proven = _suspect_counts(summary)
                out.append({"uri": doc.uri, "suspects": suspects, "proven": proven})
        return out

    def describe(self, uri: str | None = None) -> str:
        """One line saying which target and catalogue are in force (logged after changes)."""
        scope = self._scope(uri)
        loaded = self._loaded(scope.extra_files)
        target = scope.target.label if scope.target else "none"
        origins = ", ".join(loaded.catalogue.origins) or "built-in"
        return (
            f"fusion-switch: target {target}; catalogue {len(loaded.catalogue)} rules from "
            f"{origins}; {loaded.cann_label}"
        )


@dataclass
class _Loaded:
    """A catalogue as loaded, with what went wrong and which CANN install it read."""

    catalogue: Catalogue
    errors: list[CatalogueError]
    cann_label: str


@dataclass
class _Live:
    """What one key's documents are checked with (see `scopes`)."""

    settings: Settings
    extra_files: tuple[str, ...]  # resolved
    target: Target | None
    detected_target: str | None = None  # soc_version from the graphs, when in use


class ComparisonResults:
    """The last comparison per configuration file, read from `.fusion-switch/` on first use
    (so a reopened file or a restarted server shows them again)."""

    def __init__(self) -> None:
        self._by_path: dict[Path, dict | None] = {}
        self.last_compared: Path | None = None  # the configuration compared last, if any

    def get(self, cfg_path: Path | None) -> dict | None:
        if cfg_path is None:
            return None
        if cfg_path not in self._by_path:
            from ..workflow.results import load_results

            self._by_path[cfg_path] = load_results(cfg_path)
        return self._by_path[cfg_path]

    def put(self, cfg_path: Path, summary: dict) -> None:
        self._by_path[cfg_path] = summary
        self.last_compared = cfg_path

    def drop(self, cfg_path: Path) -> None:
        self._by_path[cfg_path] = None


def _suspect_counts(summary: dict) -> tuple[int, int]:
    """(suspected rules, of them proven by replay): a run without the replay suspects by a
    labelled guess, which a status bar must not count as a proof."""
    suspects = [s for s in summary.get("suspects") or [] if isinstance(s, dict)]
    return len(suspects), sum(s.get("verdict") == "introduces" for s in suspects)


def _resolve(future: asyncio.Future, result: Any) -> None:
    if not future.done():
        future.set_result(result)

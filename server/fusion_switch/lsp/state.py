"""Everything the server knows between messages, kept apart from the handlers.

Handlers read and change state only through this object; it never talks to the client
(handlers decide what to tell the user). Analyses are cached by (uri, version, generation):
`generation` moves whenever the catalogue or target changes, so a settings change makes every
cached analysis stale at once.

The pure layer (`fusion_switch.cfg`, the 674-rule catalogue) is not imported at start-up: the
server answers `initialize` first, then `preload` loads the catalogue, the parser and the
checks while the client reads that answer (time the server would spend waiting for `didOpen`).
What completion, hover and quick fixes need is loaded by `warm_up` on a worker thread a little
later (`WARM_UP_DELAY` after `initialized`), so it neither delays the first diagnostics nor the
first completion.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .capabilities import ClientFeatures
from .documents import DocumentStore, OpenDocument
from .settings import Settings

if TYPE_CHECKING:
    from ..catalogue import Catalogue, CatalogueError, Target
    from ..cfg import Analysis
    from ..cfg.model import Context

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
    version: int | None
    generation: int
    text_len: int
    analysis: Analysis


class ServerState:
    def __init__(self) -> None:
        self.documents = DocumentStore()
        self.settings = Settings()
        self.client = ClientFeatures()
        self.encoding: str = types.PositionEncodingKind.Utf16
        self._catalogue: Catalogue | None = None  # built-in, loaded on first use
        self.catalogue_errors: list[CatalogueError] = []
        self.cann_label = "CANN install not looked for yet"
        self.target: Target | None = None
        self.generation = 0
        self.initialized = False  # `initialized` arrived: notifications may be sent
        self.results = ComparisonResults()
        self.compare_job: Any = None  # the running workflow.job.CompareJob, if any
        self.bisect_job: Any = None  # the running workflow.bisect_job.BisectJob, if any
        self.detected_target: str | None = None  # soc_version from the graphs, when in use
        self.validations: dict[str, asyncio.Task] = {}  # uri → background validation
        self.debouncing: set[str] = set()  # uris whose validation waits for edits to settle
        self.last_checked: dict[str, float] = {}  # uri → loop time its last check started
        self.background: set[asyncio.Future] = set()  # other tasks, kept until done
        self._cache: dict[str, _Cached] = {}
        self._pending: dict[str, tuple[int | None, int, asyncio.Future]] = {}
        self._announced: set[tuple[str, str]] = set()

    # context and analyses ------------------------------------------------------------
    @property
    def catalogue(self) -> Catalogue:
        if self._catalogue is None:  # built-in + the user's CANN install, if one is found
            from ..catalogue.cann import load_catalogue_with_cann

            self._catalogue, self.catalogue_errors, cann = load_catalogue_with_cann()
            self.cann_label = cann.label
        return self._catalogue

    def context(self) -> Context:
        from ..cfg.model import Context

        return Context(catalogue=self.catalogue, target=self.target)

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
        """Identifies the diagnostics of one document version under one catalogue/target."""
        return f"{doc.version}:{self.generation}"

    def _cached(self, doc: OpenDocument, *, complete: bool = True) -> Analysis | None:
        """The cached analysis of this version; `complete`: with its deferred suggestions
        filled in first (see `analysis`)."""
        hit = self._cache.get(doc.uri)
        if (
            hit is not None
            and hit.version == doc.version
            and hit.generation == self.generation
            and hit.text_len == len(doc.text)
        ):
            if complete and hit.analysis.deferred:
                from .. import cfg

                cfg.fill_suggestions(hit.analysis)
            return hit.analysis
        return None

    def _store(self, doc: OpenDocument, generation: int, analysis: Analysis, text: str) -> None:
        self._cache[doc.uri] = _Cached(doc.version, generation, len(text), analysis)

    def analysis(self, doc: OpenDocument, *, defer_suggestions: bool = False) -> Analysis:
        """The analysis of the document's current text, computed now if not cached.

        `defer_suggestions` (the first publish of a check): the "did you mean" of many new
        unknown names may be missing (`Analysis.deferred`); every other caller gets them
        filled in, so only that publish ever sees an incomplete analysis."""
        from .. import cfg

        cached = self._cached(doc, complete=not defer_suggestions)
        if cached is None:
            cached = cfg.analyse(doc.text, self.context(), defer_suggestions=defer_suggestions)
            self._store(doc, self.generation, cached, doc.text)
        return cached

    async def analysis_async(self, doc: OpenDocument) -> Analysis:
        """Like `analysis`, but large documents are analysed on a worker thread; callers
        asking for the same version share one computation. If that takes longer than
        `PATIENCE` seconds, the answer is built on the syntax tree alone (see `full_analysis`)."""
        analysis, _ = await self.analysis_or_syntax(doc)
        return analysis

    async def analysis_or_syntax(self, doc: OpenDocument) -> tuple[Analysis, bool]:
        """(analysis, complete): the full analysis, or after `PATIENCE` seconds a parse-only
        one (syntax findings), so no request waits for minutes on a pathological file."""
        from .. import cfg

        cached = self._cached(doc)
        if cached is not None:
            return cached, True
        if len(doc.text) < LARGE_DOCUMENT:
            return self.analysis(doc), True
        future = self._start(doc)
        try:
            return await asyncio.wait_for(asyncio.shield(future), PATIENCE), True
        except TimeoutError:
            document = await asyncio.to_thread(cfg.parse, doc.text)
            return cfg.Analysis(document, list(document.syntax_findings)), False

    async def full_analysis(self, doc: OpenDocument) -> Analysis:
        """The complete analysis however long it takes (used to replace a parse-only one)."""
        return await asyncio.shield(self._start(doc))

    def _start(self, doc: OpenDocument) -> asyncio.Future:
        """The worker-thread analysis of the document's current version (started once)."""
        from .. import cfg

        key = (doc.version, self.generation)
        pending = self._pending.get(doc.uri)
        if pending is not None and pending[:2] == key:
            return pending[2]
        text, ctx = doc.text, self.context()
        future = asyncio.ensure_future(asyncio.to_thread(cfg.analyse, text, ctx))
        self._pending[doc.uri] = (*key, future)

        def done(f: asyncio.Future, uri: str = doc.uri) -> None:
            if self._pending.get(uri, (None, None, None))[2] is f:
                del self._pending[uri]
            current = self.documents.get(uri)
            if f.cancelled() or f.exception() is not None or current is None:
                return
            if (current.version, self.generation) == key and current.text is text:
                self._store(current, key[1], f.result(), text)

        future.add_done_callback(done)
        return future

    def keep(self, future: asyncio.Future) -> None:
        """Hold a reference to a fire-and-forget task until it is done."""
        self.background.add(future)
        future.add_done_callback(self.background.discard)

    def forget(self, uri: str) -> None:
        self._cache.pop(uri, None)
        self._pending.pop(uri, None)

    # settings ------------------------------------------------------------------------
    def apply_settings(self, settings: Settings, *, force_reload: bool = False) -> SettingsOutcome:
        """Adopt new settings: reload the catalogue if its files changed, resolve the target."""
        outcome = SettingsOutcome()
        old = self.settings
        self.settings = settings
        # the catalogue package is imported only when something changed: the default settings
        # of `initialize` must not delay its answer (see `preload`)
        if force_reload or settings.extra_files != old.extra_files:
            from ..catalogue.cann import load_catalogue_with_cann

            self._catalogue, self.catalogue_errors, cann = load_catalogue_with_cann(
                list(settings.extra_files)
            )
            self.cann_label = cann.label
            for error in self.catalogue_errors:
                key = (error.path, error.message)
                if key not in self._announced or force_reload:
                    self._announced.add(key)
                    outcome.warnings.append(
                        f"fusion-switch: extra catalogue {error.path} was not loaded: "
                        f"{error.message}. The other catalogues are in use."
                    )
            outcome.revalidate = True
        if force_reload or settings.target != old.target:
            from ..catalogue import known_target_names, resolve_target

            self.detected_target = None
            target = resolve_target(settings.target) if settings.target else None
            if settings.target and target is None:
                outcome.warnings.append(
                    f"fusion-switch: unknown target {settings.target!r} in fusionSwitch.target; "
                    "target checks are off. Known targets: " + ", ".join(known_target_names())
                )
            if target != self.target:
                outcome.revalidate = True
            self.target = target
        if outcome.revalidate:
            self.generation += 1
        return outcome

    def attach_results(self, cfg_paths: list[Path], summary: dict) -> None:
        """A newer comparison replaces the results of these configurations (and their
        annotations: the generation moves, so pull clients re-fetch diagnostics)."""
        for path in cfg_paths:
            self.results.put(path, summary)
        self.generation += 1

    def use_detected_target(self, soc_version: str | None) -> str | None:
        """Adopt the graphs' soc_version when fusionSwitch.target is empty; returns the label
        when this changed the target in force (the caller tells the user)."""
        from ..catalogue import resolve_target

        if self.settings.target or not soc_version:
            return None
        target = resolve_target(soc_version)
        if target is None or target == self.target:
            return None
        self.target = target
        self.detected_target = soc_version
        self.generation += 1
        return target.label

    def status(self) -> dict:
        """The payload of the `fusionSwitch/status` notification."""
        origins = ", ".join(self.catalogue.origins) or "built-in"
        payload: dict[str, Any] = {
            "target": self.target.label if self.target else None,
            "catalogue": origins,
        }
        if self.results.last_suspects is not None:
            payload["suspects"], payload["proven"] = self.results.last_suspects
        return payload

    def describe(self) -> str:
        """One line saying which target and catalogue are in force (logged after changes)."""
        target = self.target.label if self.target else "none"
        origins = ", ".join(self.catalogue.origins) or "built-in"
        return (
            f"fusion-switch: target {target}; catalogue {len(self.catalogue)} rules from "
            f"{origins}; {self.cann_label}"
        )


class ComparisonResults:
    """The last comparison per configuration file, read from `.fusion-switch/` on first use
    (so a reopened file or a restarted server shows them again)."""

    def __init__(self) -> None:
        self._by_path: dict[Path, dict | None] = {}
        # (suspected rules, of them proven by replay) of the latest comparison seen
        self.last_suspects: tuple[int, int] | None = None

    def get(self, cfg_path: Path | None) -> dict | None:
        if cfg_path is None:
            return None
        if cfg_path not in self._by_path:
            from ..workflow.results import load_results

            summary = load_results(cfg_path)
            self._by_path[cfg_path] = summary
            if summary is not None and self.last_suspects is None:
                self.last_suspects = _suspect_counts(summary)
        return self._by_path[cfg_path]

    def put(self, cfg_path: Path, summary: dict) -> None:
        self._by_path[cfg_path] = summary
        self.last_suspects = _suspect_counts(summary)


def _suspect_counts(summary: dict) -> tuple[int, int]:
    """(suspected rules, of them proven by replay): a run without the replay suspects by a
    labelled guess, which a status bar must not count as a proof."""
    suspects = [s for s in summary.get("suspects") or [] if isinstance(s, dict)]
    return len(suspects), sum(s.get("verdict") == "introduces" for s in suspects)

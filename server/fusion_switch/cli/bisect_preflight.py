"""The runs `bisect` makes before its search (:class:`.bisect.Bisect` runs them): the job must
be good with all fusion off, bad with the configuration as it is, and good with every candidate
off; else the bisection ends with what those runs say. A bad run that backs a claim ("fusion
is not the cause") is run again, bad only when every run of it is (a review: one failure of the
job's own made the claim 11 times in 60 runs of a job failing 20% of the time), and a run that
ran past --timeout makes no claim at all (fusion off makes a job slower)."""

from __future__ import annotations

from typing import Any

NOT_FUSION = 3


def preflight(bisect: Any, all_off: str, cand_off: str) -> tuple[int, str] | None:
    """(exit status, message) ending the bisection, or None when the search can start."""
    pre = [("all fusion off", all_off), ("configuration as it is", bisect.base_text)]
    if cand_off != all_off:
        pre.append(("all candidates off", cand_off))
    if bisect.args.jobs > 1:
        results = bisect.evaluate(pre)
    else:
        results = []
        for i, item in enumerate(pre):
            results.extend(bisect.evaluate([item]))
            if i == 0 and results[0]:
                break
    if results[0]:
        return _claim_or_undecided(
            bisect,
            "all fusion off",
            all_off,
            "the job is bad even with all fusion off: fusion is not the cause (or the job fails "
            f"for another reason; see {bisect.last_log})",
        )
    if not results[1] and len(results) > 2 and results[2]:  # (a review: unsaid)
        return NOT_FUSION, (
            "inconsistent: the job is good with the configuration as it is but bad with every "
            "candidate rule off, which switches fusion off only more; it fails for another "
            f"reason (a stale cache, the environment: see {bisect.last_log})"
        )
    if not results[1]:
        return 1, "the job is good with the configuration as it is: nothing to bisect"
    if len(results) > 2 and results[2]:
        return _claim_or_undecided(
            bisect,
            "all candidates off",
            cand_off,
            "the job is still bad with every candidate rule off, but good with all fusion off: "
            "the guilty rule is not among the candidates (try --all-fired)",
        )
    return None


def _claim_or_undecided(bisect: Any, label: str, text: str, claim: str) -> tuple[int, str]:
    """``claim`` once a run again with ``label`` is bad in every run; else could not decide."""
    timeout = bisect.args.timeout
    if _timed_out(bisect, text):  # a review: reported as a plain bad run, then claimed
        return NOT_FUSION, (
            f"could not decide: with {label} the job ran past --timeout {timeout:g} s (see "
            f"{bisect.last_log}); a job runs slower with fusion off: raise --timeout and "
            "bisect again"
        )
    if bisect.evaluate([(f"{label}, again", text, "again\n" + text)], every=True)[0]:
        return NOT_FUSION, claim
    return NOT_FUSION, (
        f"could not decide: the job ran bad and then good with {label}: it fails for reasons "
        f"of its own (see {bisect.last_log}); make its runs repeatable and bisect again"
    )


def _timed_out(bisect: Any, text: str) -> bool:
    known = bisect.journal.result(text)
    return known is not None and any(run.get("timed_out") for run in known.runs)

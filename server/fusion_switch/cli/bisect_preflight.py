"""The runs `bisect` makes before its search (:class:`.bisect.Bisect` runs them): the job must
be good with all fusion off, bad with the configuration as it is, and good with every candidate
off; else the bisection ends with what those runs say. A bad run that backs a claim ("no rule
this file switches is the cause") is run again, bad only when every run of it is (a review: one
failure of the job's own made the claim 11 times in 60 runs of a job failing 20% of the time),
and from the cfg itself even under -j N (a job reading the cfg's own path, not ``{cfg}``, made
the claim); a run that ran past --timeout makes no claim at all (fusion off slows a job)."""

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
            "the job is bad even with all fusion off: no rule this file switches is the cause "
            "(fusion it does not switch may be: TorchAir's pattern fusion, MindSpore's O1 "
            "fusion, the rules CANN keeps on; or the job fails for another reason; see "
            f"{bisect.last_log})",
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
    copies = bisect.args.jobs > 1  # the run again is from the cfg itself (a review)
    again = f"{label}, again" + (f", from {bisect.cfg.path.name} itself" if copies else "")
    if bisect.evaluate([(again, text, "again\n" + text)], every=True, own=True)[0]:
        return NOT_FUSION, claim
    if copies:
        return NOT_FUSION, (
            f"could not decide: with {label} the job ran bad from a trial's copy of the cfg and "
            f"good from {bisect.cfg.path} itself: it does not read {{cfg}} (each trial's copy, "
            "also in $FUSION_SWITCH_CFG) but the cfg's own path (check its command and script: "
            "`fusion-switch wire` prints code that reads $FUSION_SWITCH_CFG), or it fails on "
            "its own; or bisect with -j 1, which writes the cfg itself"
        )
    return NOT_FUSION, (
        f"could not decide: the job ran bad and then good with {label}: it fails for reasons "
        f"of its own (see {bisect.last_log}); make its runs repeatable and bisect again"
    )


def _timed_out(bisect: Any, text: str) -> bool:
    known = bisect.journal.result(text)
    return known is not None and any(run.get("timed_out") for run in known.runs)

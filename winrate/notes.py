"""Coded notes: every warning and note winrate gives, as one structured object.

A :class:`Note` is its text (a ``str``: it prints, joins and compares as one) with a stable
``code``, a ``severity`` (``"warning"``: a number is less trustworthy than it looks;
``"note"``: what was done and why), the clustering ``axis`` it concerns (or None) and the
``models`` it names. The same object is kept on a result (``result.notes``), printed by the
command line as ``warning [code]: text``, written to JSON under ``notes`` and shown numbered
under ``summary()``; :class:`Notes` filters them by code. Scripts and tests match codes,
never wording: :data:`CODES` lists every code with its meaning, and each code is given by
one function of this module or of the module named there.

Notes are values. A step that finds something worth saying hands the note to
:func:`emit`, which gives it to the innermost :func:`gathered` block (a context variable:
no Python warnings are involved, so the library never has to silence itself); the step
that opened the block keeps the notes on its result or drops them. A call from outside
winrate gets each note once, at the API boundary, as a Python warning (category
:class:`winrate.errors.WinrateWarning`, the note itself as the message): that is what
:func:`emit` does outside any :func:`gathered` block, and what :func:`give` does with the
notes of a result. The command line runs every command inside a block and prints the
result's notes on stderr as ``warning [code]: text``.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar

from winrate.constants import FEW_CLUSTERS
from winrate.errors import WinrateWarning, outside_stacklevel

SEVERITIES = ("warning", "note")

#: Every code -> what it flags. A test checks that each is documented in docs/notes.md.
CODES = {
    # clustering and design
    "default-clustering": "the default prompt+judge clustering used only the axes the log has",
    "few-clusters": "an axis has fewer than 30 clusters: its clustered SE is rough",
    "single-cluster-pairs": "model pairs observed within one cluster of an axis",
    "dominant-cluster": "one cluster carries most of a model's variance on an axis",
    "few-effective-clusters": "some models' SEs rest on fewer than 10 effective clusters",
    "judges-fixed": "a log with few judges analysed without a judge axis",
    "engine": "the analysis ran on a query engine (DuckDB, Spark) from a scan, and why",
    "no-reliable-method": "no interval method covers at its nominal level in this design",
    "incomplete-design": "model pairs never compared",
    # estimates and their uncertainty
    "not-estimable": "models whose uncertainty cannot be estimated",
    "psd-repaired": "a multiway covariance clipped to positive semi-definite",
    "small-sample-floor": "pairs with a single outcome got a small-sample variance floor",
    "interval-cut": "a win rate of 0% or 100% (no logit-scale interval): its normal interval "
                    "reaching past the bound was cut",
    "prior-dominates": "ratings that only a ridge prior keeps finite",
    # resampling
    "undefined-replicates": "resampling replicates in which a model had no comparisons",
    "coarse-bootstrap-support": "a wild bootstrap with too few distinct draws",
    "bootstrap-conditional": "a bootstrap that holds every model in every draw",
    # joint inference
    "zero-variance-contrast": "contrasts with zero variance left out of a maximum",
    "monte-carlo-precision": "a Monte-Carlo critical value short of its target precision",
    "family-not-joint": "boards by category not estimable jointly: Sidak or Bonferroni instead",
    # reading data and options
    # fidelity branch (issue 26): upstream conventions and edge cases of the readers
    "outcome-labels": "model names that are also outcome labels, read by the column's content",
    "similar-names": "model names that differ only by surrounding whitespace or Unicode form",
    "case-only-names": "model names that differ only in case, kept as different models",
    "battles-dropped": "clean_battle rows left out as LMArena does (named battles, dedup_tag)",
    "skipped-records": "malformed records skipped on request (skip_malformed)",
    "folder-names-model": "AlpacaEval files whose rows name another model, or duplicate another",
    "off-baseline-rows": "rows not against the baseline, which a baseline score ignores",
    # codes branch (issue 22, point 3): the texts that were still written where emitted
    "uncoded": "a plain-text warning from outside winrate.notes (say, a custom estimator's)",
    "bonferroni-fallback": "too many contrasts for Monte-Carlo max-T: Bonferroni critical values",
    "clustering-not-identified": "a clustering asked of eda that the log cannot identify",
    "verdicts-dropped": "rows whose verdict is missing or unparseable, dropped by a reader",
    "self-comparisons": "rows comparing a model with itself, dropped by a reader",
    "duplicate-files": "two files with one judge's verdicts on the same pair of models",
    "conflicting-metadata": "questions whose category or source differs between model files",
    "unverified-download": "a download kept without a pinned checksum to verify it",
    "constant-scores": "eval: a model's scores all equal, so every SE is 0",
    "constant-difference": "eval: a paired difference the same on every question (SE 0)",
    "undefined-correlation": "eval: a constant model, so the score correlation is undefined",
    "no-discordant": "eval: no discordant questions, so McNemar's test is degenerate",
    "common-questions": "eval: a comparison on only the questions both models answered",
    "low-effective-draws": "eval: importance sampling kept few effective draws (noisy posterior)",
    "negative-variance": "eval: a method-of-moments variance component below 0, set to 0",
    # check branch (issue 24, point 3): winrate check, the coverage on the user's design
    "check-under-covers": "winrate check: the chosen method's intervals under-cover on this design",
    "check-simulation-model": "winrate check: a simplification of the simulation model fitted",
    "check-failed-replications": "winrate check: simulated logs whose analysis could not run",
    "check-slow-method": "winrate check: how long the replications take with a slow method",
    # scores branch (issue 23, item 4): per-question evals as pairwise leaderboards
    "unpaired-questions": "questions (or models) of a score table that hold no comparison",
    # lc-join branch (issue 26): the lc estimator's positional join of instruction difficulty
    "positional-difficulty": "lc: rows given another instruction's difficulty by the "
                             "positional join (AlpacaEval's)",
    # issue 32, item 6: a running Spark session is used as it is
    "spark-driver-memory": "a running Spark session's driver has less memory than a session "
                           "winrate starts would get from the memory budget",
    # issue 39: the leaderboard page's model metadata
    "unknown-meta-models": "models in a model-metadata file that are not on the leaderboard",
    # issue 34: what leaderboard builders ask (judges, plan, diff)
    "judges-design": "a part of the judge audit the log's design cannot give",
    "plan-unreachable": "a lever of the plan that alone cannot reach the power asked",
    "releases-disjoint": "two releases that share no cluster: their changes' variance is the sum",
}


class Note(str):
    """A warning or note: the text, with ``code`` (:data:`CODES`), ``severity``, ``axis``
    and ``models`` (module doc)."""

    code: str
    severity: str
    axis: str | None
    models: tuple[str, ...]

    def __new__(cls, code: str, text: str, *, severity: str = "warning",
                axis: str | None = None, models=()):
        if code not in CODES:
            raise ValueError(f"unknown note code {code!r}: add it to winrate.notes.CODES")
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {severity!r}")
        note = super().__new__(cls, text)
        note.code, note.severity, note.axis = code, severity, axis
        note.models = tuple(str(m) for m in models)
        return note

    def __reduce__(self):
        return (_rebuild, (self.code, str(self), self.severity, self.axis, self.models))

    @property
    def text(self) -> str:
        return str(self)

    def to_dict(self) -> dict:
        """The JSON form: ``code``, ``severity``, ``axis``, ``models``, ``text``."""
        return {"code": self.code, "severity": self.severity, "axis": self.axis,
                "models": list(self.models), "text": str(self)}

    def line(self) -> str:
        """One line for the terminal: ``warning [few-clusters]: text``."""
        return f"{self.severity} [{self.code}]: {self}"


def _rebuild(code, text, severity, axis, models) -> Note:
    return Note(code, text, severity=severity, axis=axis, models=models)


def as_note(message, code: str = "uncoded") -> Note:
    """``message`` as a :class:`Note` (a note passes through; plain text gets ``code``)."""
    return message if isinstance(message, Note) else Note(code, str(message))


class Notes(list):
    """The notes of a result, in order, each once; filterable by code."""

    def __init__(self, notes=()):
        super().__init__(dict.fromkeys(notes))

    @property
    def codes(self) -> list[str]:
        return [note.code for note in self]

    def only(self, *codes: str) -> Notes:
        """The notes with one of ``codes``."""
        _check_codes(codes)
        return Notes(note for note in self if note.code in codes)

    def without(self, *codes: str) -> Notes:
        """The notes with none of ``codes``."""
        _check_codes(codes)
        return Notes(note for note in self if note.code not in codes)

    def to_list(self) -> list[dict]:
        return [note.to_dict() for note in self]


def _check_codes(codes) -> None:
    unknown = [code for code in codes if code not in CODES]
    if unknown:
        from winrate.errors import WinrateInputError

        raise WinrateInputError(f"unknown note code(s) {unknown}; the codes are "
                                f"{', '.join(CODES)}")


#: The notes of the innermost :func:`gathered` block and what shows each as it comes (None:
#: outside any block).
_GATHERING: ContextVar[tuple | None] = ContextVar("winrate_notes", default=None)


def emit(note: Note) -> None:
    """Hand ``note`` to the innermost :func:`gathered` block (once); outside any block, give
    it as a :class:`WinrateWarning` at once (its message is the note itself), pointing at
    the first line outside winrate (:func:`winrate.errors.outside_stacklevel`)."""
    block = _GATHERING.get()
    if block is None:
        warnings.warn(note, WinrateWarning, stacklevel=outside_stacklevel())
        return
    found, show = block
    if note not in found:
        found.append(note)
        if show is not None:
            show(note)


def give(found) -> None:
    """The notes of a result at the API boundary: each to the enclosing :func:`gathered`
    block, or, outside any, as a Python warning (:func:`emit`)."""
    for note in found:
        emit(note)


@contextmanager
def gathered(show=None):
    """Within the block, :func:`emit` collects into the :class:`Notes` yielded (module doc),
    and calls ``show(note)`` as each comes when given (the command line prints them);
    Python warnings of other libraries pass as usual."""
    found = Notes()
    token = _GATHERING.set((found, show))
    try:
        yield found
    finally:
        _GATHERING.reset(token)


# --------------------------------------------------------------------------- the texts
# Every text winrate's leaderboard analysis gives, each with its code. Numbers in them are
# formatted here; the callers pass the facts.

#: Effective clusters (G*) per model below which its clustered SE is called rough.
FEW_EFFECTIVE = 10
#: Share of unobserved model pairs above which the opponent-averaged win rate is declared
#: not comparable across models (:func:`incomplete_design`).
INCOMPLETE_SHARE = 0.10


def plural(count, noun: str, nouns: str | None = None) -> str:
    """``'1 model'``, ``'3 models'``, ``'2.5 comparisons'`` (``nouns``: an irregular plural)."""
    return f"{count:,g} {noun if count == 1 else nouns or noun + 's'}"


def _listed(names, limit: int = 5) -> str:
    names = [str(n) for n in names]
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def default_clustering(used: tuple[str, ...], reasons: list[str]) -> Note:
    """The axes of the default prompt+judge clustering that were ``used``, and the
    ``reasons`` the others could not be (:func:`winrate.inference.plan.default_clustering`)."""
    chosen = " + ".join(used) if used else "none (rows treated as independent)"
    return Note("default-clustering", f"default clustering prompt+judge: clustered by {chosen}, "
                f"because {'; '.join(reasons)}", severity="note")


def few_clusters(axis: str, n_clusters: int, method: str, t_reference: bool) -> Note:
    """The few-cluster warning, worded for the variance method that was run."""
    head = (f"axis '{axis}' has only {n_clusters} clusters (< {FEW_CLUSTERS}): "
            f"its clustered SE rests on {n_clusters} independent units")
    if method == "sandwich" and t_reference:
        tail = ("; t(G - 1) critical values allow for that, but the SE itself is rough.")
    elif method == "sandwich":
        tail = (" and is unreliable; use t(G - 1) critical values (reference 't'; "
                "method 'jackknife' does) or a bootstrap, and treat the SE as rough.")
    elif method == "jackknife":
        tail = ("; the jackknife with t(G - 1) critical values is the few-cluster "
                "method, but with so few clusters its SE is still rough.")
    else:
        tail = (f"; the bootstrap can only resample these {n_clusters} clusters, "
                "so its SE is rough.")
    return Note("few-clusters", head + tail, axis=axis)


def single_cluster_pairs(axis: str, count: int, n_pairs: int, bounded: bool = False) -> Note:
    """Pairs whose comparisons all lie in one cluster of ``axis``; ``bounded``: the
    estimator gave each the variance of its comparisons inflated by the axis' design
    effect (:func:`winrate.estimators.small_sample.unidentified_pair_cov`)."""
    consequence = (
        f"each is given the variance of its comparisons inflated by the design effect of "
        f"the ICC of the {axis} axis' (cluster, pair) cells (1 where it is not "
        "identified), which widens the "
        "intervals of the models involved" if bounded else
        "SEs of the models involved are understated on that axis")
    return Note("single-cluster-pairs",
                f"axis '{axis}': {count} of {n_pairs} model pairs are observed within a "
                f"single {axis} cluster; the {axis} variance is not identified for them, so "
                f"{consequence}.", axis=axis)


def dominant_cluster(axis: str, limit: float, n_flagged: int, worst_share: float,
                     worst_model: str, worst_cluster) -> Note:
    """The Lindeberg warning: one cluster carries more than ``limit`` of some models'
    clustered variance on an axis with enough clusters."""
    return Note(
        "dominant-cluster",
        f"axis '{axis}': a single cluster carries more than {limit:.0%} of the clustered "
        f"variance for {n_flagged} model(s), up to {worst_share:.0%} for "
        f"{worst_model} ({axis} {worst_cluster}); its SE then "
        "rests on fewer than 4 effective clusters and the normal approximation on that one "
        "cluster (Lindeberg condition), so treat the SE as rough: use method 'jackknife' or "
        "t critical values, and check the result without that cluster.",
        axis=axis, models=[worst_model])


def few_effective_clusters(axis: str, n_clusters: int, flagged: list[tuple[str, float]],
                           critical: tuple[float, float], addressed: bool,
                           auto_method: str) -> Note:
    """Models whose SE rests on fewer than :data:`FEW_EFFECTIVE` effective clusters G*
    (Carter, Schnepel & Steigerwald 2017), ``flagged`` as (model, G*) fewest first. For the
    first, ``critical``: the 95% critical value the method in use gives it and the one of
    t(G* - 1); ``addressed``: the method in use is auto's for such designs (CR2 or the
    jackknife with small-sample t) or takes t on at most G* - 1 df;
    ``auto_method``: what method 'auto' runs on such a design (the remedy otherwise)."""
    worst, g_star = flagged[0]
    now, wanted = critical
    if addressed:
        remedy = (f"the method in use allows for that with a bias-reduced variance and a t "
                  f"reference (for {worst}: a 95% critical value of {now:.2f}, against 1.96 "
                  "for the normal).")
    else:
        remedy = (f"with the method in use they are too narrow: method 'auto' widens them "
                  f"({auto_method}: for {worst} a 95% critical value of {wanted:.2f} instead "
                  f"of {now:.2f}, and a variance without CR1's downward bias); the coverage "
                  "check with best=True reports the narrowest method that covers on this "
                  "design.")
    shown = ", ".join(f"{m} ({g:.1f})" for m, g in flagged[:8])
    return Note(
        "few-effective-clusters",
        f"axis '{axis}': the SEs of {len(flagged)} model(s) rest on fewer than "
        f"{FEW_EFFECTIVE} effective {axis} clusters G* (of {n_clusters:,}): "
        f"{shown}{', ...' if len(flagged) > 8 else ''}. Their comparisons are concentrated "
        f"in a few {axis}s, so their intervals behave as if clustered in that few; "
        f"{remedy}", axis=axis, models=[m for m, _ in flagged])


def engine_run(engine: str, reason: str, n_terms: int | None) -> Note:
    variance = ("the clustered variance reduced in the engine by a second pass of grouped "
                f"SQL ({n_terms} term(s) of the multiway sum)" if n_terms
                else "no second pass (no clustering)")
    return Note("engine", f"analysed on {engine} ({reason}): the fit from the engine's key "
                f"table, {variance}", severity="note")


def judges_fixed(n_judges: int) -> Note:
    return Note(
        "judges-fixed",
        f"the log has {n_judges} judges but the intervals are not clustered by "
        f"judge: they are conditional on these {n_judges} judges (what they "
        "would say on new prompts) and understate the uncertainty about what other "
        "judges would say; cluster by prompt+judge to treat the judges as a sample.",
        axis="judge")


def incomplete_design(missing: list[tuple[str, str]], models: list[str]) -> Note:
    """Win rates on a comparison graph far from complete: above :data:`INCOMPLETE_SHARE`
    of unobserved pairs the scores are declared not comparable across models and
    Bradley-Terry is recommended; below it, a milder note says how many pairs are missing
    (module doc of :mod:`winrate.estimators.win_rate`)."""
    import pandas as pd  # value_counts' order of tied counts, as the note always listed them

    k = len(models)
    share = len(missing) / (k * (k - 1) / 2)
    unmet = pd.Series([m for pair in missing for m in pair]).value_counts()
    most = ", ".join(f"{m} ({n} of {k - 1})" for m, n in unmet.head(5).items())
    named = [str(m) for m in unmet.index]
    if share > INCOMPLETE_SHARE:
        return Note(
            "incomplete-design",
            f"{len(missing)} of {k * (k - 1) // 2} model pairs ({share:.0%}) were never "
            "compared: the opponent-averaged win rate scores each model against the "
            "opponents it happened to meet, and its interval covers that average, not "
            "the average over the whole field; scores are not comparable across models "
            f"(most opponents missed: {most}). Use model 'bt' (Bradley-Terry adjusts for "
            "opponent strength).", models=named)
    were, they = ("pair was", "it is") if len(missing) == 1 else ("pairs were", "they are")
    return Note("incomplete-design",
                f"{len(missing)} model {were} never compared; {they} left out of the scores "
                "(never imputed), so models are scored against slightly different opponent "
                f"sets (opponents missed: {most}).", severity="note", models=named)


def not_estimable_reason(n_comparisons: float, single_cluster_axes: list[str]) -> str:
    """Why a model's uncertainty cannot be estimated, in words (the ``not_estimable``
    reasons of a result and of :func:`not_estimable`): no comparisons, all of them in one
    cluster of the ``single_cluster_axes``, or else a zero estimated variance."""
    if n_comparisons == 0:
        return "no comparisons"
    if not single_cluster_axes:
        return "zero estimated variance"
    where = ("its one comparison falls" if n_comparisons == 1 else
             f"all of its {plural(n_comparisons, 'comparison')} fall")
    return (f"{where} in one {' and one '.join(single_cluster_axes)} cluster, so its "
            "clustered variance is not identified")


def not_estimable(reasons: dict[str, str]) -> Note:
    return Note("not-estimable",
                "uncertainty not estimable (no SE, interval or certain rank is "
                "reported; a score, where shown, has no error bar): "
                + "; ".join(f"{m}: {why}" for m, why in reasons.items()), models=list(reasons))


def psd_repaired(ratio: float | None = None, model: str | None = None) -> Note:
    """The multiway covariance clipped to PSD; ``ratio`` the largest ratio (at ``model``) of
    the SE of the sum of the positive inclusion-exclusion terms, PSD and never smaller, to
    the clipped sum's (clustered parts only, before any small-sample floor; None: not
    computed, a resampling method's covariance)."""
    alternative = ("the sum of the one-way covariances without the intersection term is "
                   "PSD by construction and never smaller (Davezies, D'Haultfoeuille & "
                   "Guyonvarch 2021; MacKinnon, Nielsen & Webb 2021)")
    gives = ("" if ratio is None else
             f": it gives clustered SEs at most {ratio:.3g} times the clipped sum's "
             f"(largest for {model})")
    return Note("psd-repaired",
                "the multiway covariance was not positive semi-definite and was repaired by "
                "clipping negative eigenvalues (Cameron, Gelbach & Miller 2011, sec. 2.3), "
                "which can understate the SEs of contrasts along the clipped directions; "
                f"{alternative}{gives}.")


def not_psd(what: str, min_eig: float) -> Note:
    return Note("psd-repaired",
                f"the {what} was not PSD (positive semi-definite; smallest eigenvalue "
                f"{min_eig:.3g}); negative eigenvalues were clipped to zero (Cameron, Gelbach "
                "& Miller 2011, sec. 2.3). Standard errors of some contrasts may be "
                "understated; this usually means too few clusters on one axis.")


def interval_cut(models: list[str]) -> Note:
    return Note(
        "interval-cut",
        f"{plural(len(models), 'model')} ({_listed(models)}) scored 0% or 100%, where the "
        "logit-scale interval of a win rate is undefined; the normal interval reached past "
        "the bound and is cut there, as for a proportion. So little information is behind "
        "these scores that the normal approximation is poor: read their intervals as rough.",
        models=models)


def small_sample_floor(pairs: list[tuple[str, str, float]], n_degenerate: int,
                       kind: str) -> Note:
    """Pairs whose comparisons all agree got a small-sample floor
    (:mod:`winrate.estimators.small_sample`);
    ``pairs``: the first few as (model, model, comparisons)."""
    shown = [f"{a} vs {b} ({plural(n, 'comparison')})" for a, b, n in pairs[:5]]
    how = ("the posterior mean of its binomial variance under a Beta prior centred on a "
           "Bradley-Terry fit of the whole log (empirical Bayes), so pairs the log places "
           "far apart stay narrow and close pairs do not" if kind == "empirical Bayes" else
           "the variance that makes its 95% interval reach the far Wilson bound (at every "
           "level: the variance does not depend on it), because no "
           "three or more models are linked by wins in both directions, so the log cannot "
           "say how far apart models are (this floor is conservative)")
    return Note("small-sample-floor",
                f"{n_degenerate} model pair(s) had the same outcome in every comparison "
                f"({'; '.join(shown)}{', ...' if n_degenerate > 5 else ''}): their sample "
                f"variance is zero, so instead of a zero-width interval each got {how} "
                "(small-sample floor, winrate.estimators.small_sample).",
                models=sorted({m for a, b, _ in pairs for m in (a, b)}))


def prior_dominates(problem: str) -> Note:
    return Note("prior-dominates",
                f"Bradley-Terry: {problem}; only the ridge prior keeps these ratings "
                "finite, so they mostly reflect the prior")


def no_reliable_axis(axis: str, g: int) -> Note:
    return Note("no-reliable-method",
                f"with only {g} {axis} clusters no interval method covers at its nominal "
                f"level (coverage study, paper/coverage): the intervals are wide and still "
                f"rough. Report results per {axis}, or cluster without the {axis} axis and "
                f"say they are conditional on these {g} {axis}s.", axis=axis)


def no_reliable_pair(low: int, high: int) -> Note:
    return Note("no-reliable-method",
                f"with {low} and {high} clusters on the two smallest axes no interval method "
                "covers at its nominal level with informative intervals (coverage study, "
                "paper/coverage: short of nominal, or, with few judges, valid but very "
                "wide); treat the intervals as rough and collect more prompts.")


def undefined_replicates(undefined: int) -> Note:
    return Note("undefined-replicates",
                f"{undefined} jackknife replicate score(s) were undefined (deleting a "
                "cluster removed every comparison of a model); the full-sample score "
                "was used there, which understates that model's variance")


def bootstrap_conditional(dropped: int, reps: int) -> Note:
    return Note("bootstrap-conditional",
                f"{dropped} of {reps} bootstrap replicates left a model "
                "without comparisons and were dropped; the bootstrap distribution is "
                "conditional on every model being drawn")


def coarse_rademacher(n_groups: int, alpha: float) -> Note:
    return Note("coarse-bootstrap-support",
                f"Rademacher weights with {n_groups} clusters have only 2^{n_groups} = "
                f"{2**n_groups} equally likely draws ({2**(n_groups - 1)} distinct |t*|): no "
                f"bootstrap quantile reaches {1 - alpha:.0%}, so the interval is set by the "
                "largest draw and its coverage is not controlled; use Webb weights")


def few_wild_clusters(n_groups: int) -> Note:
    return Note("coarse-bootstrap-support",
                f"the wild cluster bootstrap with only {n_groups} clusters is unreliable "
                "(MacKinnon & Webb 2017): its intervals can under- or over-cover badly"
                + (", and with 2 clusters some draws leave almost no residual variation, so "
                   "the interval can be arbitrarily wide" if n_groups == 2 else ""))


def few_tail_draws(beyond: float) -> Note:
    return Note("monte-carlo-precision",
                f"only {beyond:.0f} Monte-Carlo draws beyond the critical value; "
                "increase n_draws for a stable quantile")


def zero_variance(count: int, what: str) -> Note:
    return Note("zero-variance-contrast",
                f"{count} {what} have zero variance: they are left out of the "
                "simultaneous critical value and their estimates are treated as exact")


def off_baseline_rows(dropped: int, n_rows: int, baseline: str) -> Note:
    return Note("off-baseline-rows",
                f"{dropped} of {n_rows} rows compare two models without the baseline "
                f"{baseline!r}: a score against the baseline does not use them, so they are "
                "left out of the analysis, the comparison count and n (Bradley-Terry, model "
                "'bt', uses them)", severity="note")


# ------------------------------------------------- lc-join branch (issue 26)

def positional_difficulty(shifted: dict[str, int]) -> Note:
    """``shifted``: per model, its rows that the positional join of model 'lc' gives
    another instruction's difficulty."""
    listed = ", ".join(f"{model} ({rows})" for model, rows in shifted.items())
    return Note("positional-difficulty",
                f"model 'lc' joins instruction difficulty to rows by position in each "
                f"model's rows, as AlpacaEval does: {sum(shifted.values())} row(s) of "
                f"{len(shifted)} model(s) whose rows miss an instruction take another "
                f"instruction's difficulty ({listed}); difficulty_join='instruction' joins "
                "each row to its own instruction", models=list(shifted))


# ------------------------------------------------- codes branch: the texts of the readers,
# joint inference, eda and the eval statistics (issue 22, point 3)

def bonferroni_fallback(n_contrasts: int, budget: float) -> Note:
    return Note("bonferroni-fallback",
                f"{n_contrasts:,} contrasts are too many for Monte-Carlo max-T critical "
                f"values within {budget:.0e} evaluations: Bonferroni's are used "
                "(valid, and wider than max-T's where contrasts are correlated)",
                severity="note")


def clustering_not_identified(name: str, reason: str) -> Note:
    return Note("clustering-not-identified",
                f"clustering by {name} is not identified: {reason}.", axis=name)


#: Files named in a reader's note before it says "... and N more".
SHOW_FILES = 5

#: Why a reader drops rows (:func:`verdicts_dropped`), by the kind of verdict.
DROPPED_VERDICTS = {
    "alpaca_eval": "a null preference (failed judge) or one outside {0} and [1, 2], as "
                   "AlpacaEval drops them",
    "unparsed": "an unparsed verdict (score not 1, 2, 3 or a pair of grades)",
    "arena_hard": "a null game verdict",
}


def _files(counts: list[str], n_files: int) -> str:
    """The first :data:`SHOW_FILES` of ``counts`` (one per file), then how many more."""
    more = n_files - min(n_files, SHOW_FILES)
    return ", ".join(counts[:SHOW_FILES]) + (f", ... and {more} more" if more else "")


def verdicts_dropped(reader: str, kind: str, per_file: list[tuple[str, int, int]]) -> Note:
    """Rows of a reader's files dropped for a verdict of ``kind`` (:data:`DROPPED_VERDICTS`);
    ``per_file``: (file name, rows dropped, rows) of each file with any."""
    shown = [f"{name} ({n} of {total})" for name, n, total in per_file]
    return Note("verdicts-dropped",
                f"{reader}: dropped {sum(n for _, n, _ in per_file)} row(s) with "
                f"{DROPPED_VERDICTS[kind]} in {len(per_file)} file(s): "
                f"{_files(shown, len(per_file))}")


def labelled_verdicts_dropped(reader: str, dropped: int, total: int, judge: str,
                              labels: list[str], file: str) -> Note:
    """A judge's verdicts with an upstream label for 'unparseable', dropped."""
    return Note("verdicts-dropped",
                f"{reader}: dropped {dropped} of {total} {judge} verdicts labelled {labels} "
                f"(unparseable upstream) in {file}")


def skipped_records(reader: str, per_file: list[tuple[str, int]]) -> Note:
    """Malformed records skipped on request; ``per_file``: (file name, records skipped)."""
    shown = [f"{name} ({n})" for name, n in per_file]
    return Note("skipped-records",
                f"{reader}: skipped {sum(n for _, n in per_file)} malformed record(s) or "
                f"game(s) in {len(per_file)} file(s): {_files(shown, len(per_file))}")


def self_comparisons(reader: str, n_rows: int, models: list[str]) -> Note:
    return Note("self-comparisons",
                f"{reader}: dropped {n_rows} row(s) comparing a model with "
                f"itself ({', '.join(models[:5])})", models=models)


def duplicate_files(first: str, second: str, judge: str, model_a: str, model_b: str,
                    keep: bool) -> Note:
    """Two PRD files with one reviewer's verdicts on one pair; ``keep``: both kept."""
    kept = "both are kept" if keep else "only the first is kept"
    return Note("duplicate-files",
                f"prd: {first} and {second} both hold reviewer {judge!r}'s verdicts on "
                f"{model_a} vs {model_b}; {kept}", models=[model_a, model_b])


def renamed_by_folder(renamed: list[tuple[str, str, str]]) -> Note:
    """AlpacaEval files whose rows name another model than their folder: ``renamed`` as
    (file, model the rows name, model of the folder)."""
    shown = "; ".join(f"{file} (rows name {named!r}, read as {folder!r})"
                      for file, named, folder in renamed[:5])
    return Note("folder-names-model",
                f"alpaca_eval: {len(renamed)} file(s) whose rows name another model "
                f"than their folder or file name, which names the model in AlpacaEval: "
                f"{shown}", models=[folder for _, _, folder in renamed])


def copied_files(copies: list[tuple[str, str, int]]) -> Note:
    """AlpacaEval file pairs sharing most annotations: (file, file, shared annotations)."""
    shown = "; ".join(f"{a} and {b} ({n} annotations)" for a, b, n in copies[:5])
    return Note("folder-names-model",
                f"alpaca_eval: {len(copies)} pair(s) of files share most of their "
                f"annotations (a duplicated file is counted twice): {shown}")


def battles_dropped(total: int, named: int, duplicates: int, reader: str = "clean_battle",
                    unit: str = "battle") -> Note:
    """Battles (or votes) of ``reader`` left out as LMArena leaves them out: ``named``
    (non-anonymous) and ``duplicates`` (dedup_tag not 'sampled'), of ``total``."""
    parts = []
    if named:
        parts.append(f"{named} named (non-anonymous) {unit}(s) (LMArena ranks "
                     "anonymous ones only; include_named keeps them)")
    if duplicates:
        parts.append(f"{duplicates} {unit}(s) whose dedup_tag is not 'sampled' "
                     "(LMArena's de-duplication of over-frequent prompts; dedup=False "
                     "keeps them)")
    return Note("battles-dropped", f"{reader}: of {total} {unit}s, left out "
                + " and ".join(parts), severity="note")


def thin_categories(column: str, thin: dict[str, str]) -> Note:
    """Categories of ``column`` whose rows give no board, with the reason of each."""
    shown = "; ".join(f"{label!r}: {reason}" for label, reason in list(thin.items())[:5])
    more = f"; ... and {len(thin) - 5} more" if len(thin) > 5 else ""
    return Note("not-estimable", f"by {column}: {plural(len(thin), 'category', 'categories')}"
                f" too thin for a board: {shown}{more}")


def family_not_joint(column: str, reason: str, rule: str) -> Note:
    """The family of boards by ``column`` could not be estimated jointly (``reason``): its
    intervals combine the boards' own simultaneous intervals by ``rule`` instead."""
    return Note("family-not-joint",
                f"by {column}: the family of boards has no joint covariance ({reason}); its "
                f"intervals combine each board's simultaneous intervals by {rule.title()} "
                "instead (valid, more conservative)", severity="note")


def similar_names(groups: list[list[str]]) -> Note:
    """Groups of model names alike up to surrounding whitespace or Unicode normal form."""
    shown = "; ".join(" vs ".join(repr(n) for n in group) for group in groups[:5])
    return Note("similar-names",
                f"{len(groups)} group(s) of model names differ only by surrounding whitespace "
                f"or Unicode normal form and are kept as different models: {shown}",
                models=[n for group in groups for n in group])


def case_only_names(groups: list[list[str]]) -> Note:
    """Groups of model names alike up to case (``"GPT-4"`` and ``"gpt-4"``)."""
    shown = "; ".join(" vs ".join(repr(n) for n in group) for group in groups[:5])
    return Note("case-only-names",
                f"{len(groups)} group(s) of model names differ only in case and are kept as "
                f"different models (rename them to one spelling if they are one model): "
                f"{shown}", models=[n for group in groups for n in group])


def outcome_labels(column: str, both: list[str], names_fit: bool, n_clash: int) -> Note:
    """Values of an outcome column that are both labels and model names, read as names
    (``names_fit``) or as labels; ``n_clash`` rows would differ the other way."""
    reading = "winners' names" if names_fit else "labels (a / model_a: model_a won)"
    return Note("outcome-labels",
                f"column {column!r}: {both} are both outcome labels and model names; read as "
                f"{reading}, the only reading that fits every row ({n_clash} row(s) "
                "would differ the other way)", models=both)


def conflicting_metadata(dataset: str, n_questions: int, column: str, first: str) -> Note:
    return Note("conflicting-metadata",
                f"{dataset}: {n_questions} question(s) have a different {column!r} in "
                f"different model files (first question_ids: {first}); the most common value "
                "is used")


def unverified_download(what: str, url: str, sha256: str) -> Note:
    return Note("unverified-download",
                f"{what}: downloaded from {url} without a pinned checksum (none is known for "
                f"this upstream file); its SHA-256 is {sha256}. Kept unverified.")


# eval statistics of per-question scores (winrate.evals). ``name`` is what the scores are
# of (``model 'x'``, ``scores``), as the caller says it; :func:`per_model` merges the notes
# of several models.

def eval_few_clusters(column: str, g: int, context: str, few: int) -> Note:
    """A cluster column with ``g`` < ``few`` clusters: t(G - 1) intervals, a rough SE."""
    where = f" ({context})" if context else ""
    return Note("few-clusters",
                f"only {g} clusters in {column!r}{where}: with fewer than about {few} "
                "clusters the cluster-robust SE is biased down; intervals use a t reference "
                f"with {g - 1} degrees of freedom (Cameron & Miller 2015, sec. VI)", axis=column)


def cr0_clipped(min_eig: float) -> Note:
    return Note("psd-repaired",
                f"the multiway CR0 variance was negative ({min_eig:.3g}) and was clipped to 0 "
                "(Cameron, Gelbach & Miller 2011, sec. 2.3); this usually means too few "
                "clusters on one axis")


def constant_scores(n: int, name: str, value: float) -> Note:
    return Note("constant-scores",
                f"all {n} scores of {name} equal {value:g}: every SE is 0, a Wald interval has "
                "zero width and the design effect is undefined (reported as None); for 0/1 "
                "scores use a small-N interval ('bayes', 'wilson' or 'clopper-pearson')")


def _negative(name: str, value: float, meaning: str) -> Note:
    return Note("negative-variance",
                f"estimated {name} is negative ({value:.3g}): {meaning}; using {name} = 0")


def negative_omega2(value: float) -> Note:
    """The power pilot's omega^2 (variance of the conditional-mean differences) below 0."""
    return _negative("omega^2", value,
                     "the conditional noise explains all the variance of the paired differences "
                     "in this pilot (no detectable question-level difference between the models)")


def negative_var_x(value: float, name: str) -> Note:
    """The variance of the expected scores of ``name``'s questions, Var(x), below 0."""
    return _negative("Var(x)", value,
                     f"the answer noise E[sigma^2] / K explains all the variance of the question "
                     f"means of {name} (the questions do not differ detectably in their "
                     "expected score)")


def constant_difference(name_a: str, name_b: str, value: float, n: int) -> Note:
    return Note("constant-difference",
                f"{name_a} - {name_b} is {value:g} on every one of the {n} questions: the "
                "paired SE is 0, so z and p are degenerate (0 and 1 for a zero difference)")


def undefined_correlation() -> Note:
    return Note("undefined-correlation",
                "one model's scores are constant, so the score correlation is undefined (None)")


def no_discordant() -> Note:
    return Note("no-discordant", "no discordant questions: McNemar's statistic is 0 and p = 1")


def common_questions(model_a: str, model_b: str, n: int) -> Note:
    return Note("common-questions",
                f"{model_a} vs {model_b}: compared on the {n} questions both answered",
                models=[model_a, model_b])


def low_effective_draws(what: str, ess: float, n_samples: int, sampler: str) -> Note:
    """Importance sampling with a Kish effective sample size ``ess`` of ``n_samples``
    draws from the ``sampler`` ('prior' or the Laplace-t proposal)."""
    draws = "prior" if sampler == "prior" else "Laplace-t proposal"
    return Note("low-effective-draws",
                f"{what}: importance sampling kept an effective sample size of only {ess:.0f} "
                f"of {n_samples} {draws} draws, so the posterior summary is noisy; increase "
                "n_samples")


def per_model(by_model: dict[str, list]) -> list[Note]:
    """Each distinct note once: notes of one code that differ only in the model they name
    (``model 'X'``) become one note naming those models (``all 29 models``), with them in
    ``models``. ``by_model``: model -> its notes (plain text gets the code ``uncoded``)."""
    groups: dict[tuple, list[str]] = {}
    firsts: dict[tuple, Note] = {}
    for model, found in by_model.items():
        for note in map(as_note, found):
            key = (note.code, str(note).replace(f"model {model!r}", "\0models\0"))
            groups.setdefault(key, []).append(model)
            firsts.setdefault(key, note)
    merged = []
    for (code, template), models in groups.items():
        if len(models) == 1:
            named = f"model {models[0]!r}"
        elif len(models) == len(by_model):
            named = f"all {len(models)} models"
        else:
            shown = ", ".join(repr(m) for m in models[:3])
            named = f"{len(models)} models: {shown}{', ...' if len(models) > 3 else ''}"
        first = firsts[(code, template)]
        merged.append(Note(code, template.replace("\0models\0", named), severity=first.severity,
                           axis=first.axis, models=dict.fromkeys([*first.models, *models])))
    return merged


# --------------------------------------------------------------------------- winrate check


def check_failed_replications(failed: int, total: int) -> Note:
    return Note("check-failed-replications",
                f"{failed} of {total} simulated logs could not be analysed (e.g. a "
                "Bradley-Terry MLE that is not finite); coverage is over the others")


def check_under_covers(verdict: str, models: list[str]) -> Note:
    return Note("check-under-covers", verdict[0].upper() + verdict[1:], models=models)


def check_simulation_model(discretised: bool, prior: float | None, calibrated: bool,
                           rounds: int) -> list[Note]:
    """What the simulation model of ``winrate check`` simplifies."""
    found = []
    if discretised:
        found.append("the log has graded preferences; the simulation draws win / tie / "
                     "loss outcomes (a fit to the rounded outcomes)")
    if prior is not None:
        found.append(f"the marginal maximum-likelihood fit is not finite (a model never lost "
                     f"or never won); the simulation's abilities come from a fit with a "
                     f"ridge prior of variance {prior:g}")
    if not calibrated:
        found.append(f"the simulation model's calibration did not converge in {rounds} "
                     "rounds; its variance components are approximate")
    return [Note("check-simulation-model", text, severity="note") for text in found]


def check_slow_method(label: str, seconds: float, reps: int, workers: int) -> Note:
    minutes = seconds * reps / workers / 60
    return Note("check-slow-method",
                f"one replication with the {label} took {seconds:.1f} s, so {reps} take about "
                f"{minutes:.0f} min on {workers} worker(s)"
                + ("; a bootstrap reruns all of its resamples in every replication"
                   if "bootstrap" in label else ""), severity="note")


# --------------------------------------------------------------------------- score tables


def unpaired_questions(n_questions: int, models: list[str]) -> Note:
    """Questions answered by fewer than two models, and models with no other answer on any
    question, left out of a per-question eval read as comparisons."""
    parts = []
    if n_questions:
        parts.append(f"{plural(n_questions, 'question')} answered by fewer than two models")
    if models:
        parts.append(f"{plural(len(models), 'model')} with no other answer: "
                     f"{', '.join(models[:5])}{' ...' if len(models) > 5 else ''}")
    return Note("unpaired-questions", f"{' and '.join(parts)} hold no comparison and were "
                "left out", models=models)


# --------------------------------------------------------------------------- Spark


def spark_driver_memory(have: int, share: int, budget: int) -> Note:
    """A running Spark session whose driver heap ``have`` (bytes) is below the ``share`` a
    session winrate starts gets from the memory ``budget``; the session is left as it is."""
    return Note("spark-driver-memory",
                f"the running Spark session's driver has {have / 2**30:.1f} GiB of heap, less "
                f"than the {share / 2**30:.1f} GiB a session winrate starts gets from the "
                f"{budget / 2**30:.1f} GiB memory budget; a running session is used as it "
                f"is: to give its driver that share, start it with "
                f"spark.driver.memory={share >> 20}m", severity="note")


# --------------------------------------------------------------------------- web page


def unknown_meta_models(source: str, models: list[str]) -> Note:
    """Models that a model-metadata file (``source``) describes but the leaderboard does not
    hold: their metadata is not shown (a misspelt name, or a model left out of the log)."""
    shown = ", ".join(models[:8]) + (f" and {len(models) - 8} more" if len(models) > 8 else "")
    return Note("unknown-meta-models",
                f"{plural(len(models), 'model')} in {source} not on the leaderboard, their "
                f"metadata not shown: {shown}", severity="note", models=models)


# --------------------------------------------------------------------------- builders


def judges_design(part: str, reason: str) -> Note:
    """A ``part`` of the judge audit (:func:`winrate.judges.audit_judges`) left out because
    of ``reason``."""
    return Note("judges-design", f"judge audit: no {part}, because {reason}", severity="note")


def plan_unreachable(contrast: str, levers: list[str]) -> Note:
    """The ``levers`` that alone cannot give ``contrast`` the power asked
    (:func:`winrate.planning.plan`): the variance of the parts they leave fixed exceeds
    what the power allows."""
    return Note("plan-unreachable",
                f"plan: {contrast} cannot reach the power asked by more {' or '.join(levers)} "
                "alone: the variance of the parts they leave unchanged already exceeds what "
                "it allows; grow the other axes too (prompts and judges together)",
                severity="note")


def releases_disjoint(axes: list[str]) -> Note:
    """Two releases (:func:`winrate.diff.diff_releases`) that share no cluster of ``axes``."""
    return Note("releases-disjoint",
                f"the two releases share no {' and no '.join(axes)} cluster: their estimates "
                "are independent and the variance of each change is the sum of the two "
                "releases' variances", severity="note")

"""Coded notes: every warning and note winrate gives, as one structured object.

A :class:`Note` is its text (a ``str``: it prints, joins and compares as one) with a stable
``code``, a ``severity`` (``"warning"``: a number is less trustworthy than it looks;
``"note"``: what was done and why), the clustering ``axis`` it concerns (or None) and the
``models`` it names. The same object is kept on a result (``result.notes``), printed by the
command line as ``warning [code]: text``, written to JSON under ``notes`` and shown numbered
under ``summary()``; :class:`Notes` filters them by code. Scripts and tests match codes,
never wording: :data:`CODES` lists every code with its meaning, and each code is given by
one function of this module or of the module named there.

A library function emits a note as a Python warning (:func:`emit`, category
:class:`winrate.errors.WinrateWarning`, the note itself as the message), so callers outside
winrate see it as usual and :func:`collected` gathers them back as notes.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from winrate.errors import WinrateWarning

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
    "no-reliable-method": "no interval method covers at its nominal level in this design",
    "incomplete-design": "model pairs never compared",
    # estimates and their uncertainty
    "not-estimable": "models whose uncertainty cannot be estimated",
    "psd-repaired": "a multiway covariance clipped to positive semi-definite",
    "small-sample-floor": "pairs with a single outcome got a small-sample variance floor",
    "interval-cut": "normal intervals reaching past 0% or 100% were cut at the bound",
    "prior-dominates": "ratings that only a ridge prior keeps finite",
    # resampling
    "undefined-replicates": "resampling replicates in which a model had no comparisons",
    "coarse-bootstrap-support": "a wild bootstrap with too few distinct draws",
    "bootstrap-conditional": "a bootstrap that holds every model in every draw",
    "resampling-note": "another remark of a resampling method",
    # joint inference
    "zero-variance-contrast": "contrasts with zero variance left out of a maximum",
    "monte-carlo-precision": "a Monte-Carlo critical value short of its target precision",
    # reading data and options
    "reader": "a remark of a reader about rows it dropped or changed",
    "deprecated": "an argument kept for compatibility; the note names its replacement",
    "eval": "a remark of the eval statistics of per-question scores",
    # fidelity branch (issue 26): upstream conventions and edge cases of the readers
    "outcome-labels": "model names that are also outcome labels, read by the column's content",
    "similar-names": "model names that differ only by surrounding whitespace or Unicode form",
    "battles-dropped": "clean_battle rows left out as LMArena does (named battles, dedup_tag)",
    "skipped-records": "malformed records skipped on request (--skip-malformed)",
    "folder-names-model": "AlpacaEval files whose rows name another model, or duplicate another",
    "baseline-inferred": "an arena-hard baseline read from the data, not given",
    "off-baseline-rows": "rows not against the baseline, which a baseline score ignores",
    # scores branch (issue 23, item 4): per-question evals as pairwise leaderboards
    "unpaired-questions": "questions (or models) of a score table that hold no comparison",
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


def as_note(message, code: str = "resampling-note") -> Note:
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


def emit(note: Note, stacklevel: int = 2) -> None:
    """Give ``note`` as a :class:`WinrateWarning` (its message is the note itself)."""
    warnings.warn(note, WinrateWarning, stacklevel=stacklevel + 1)


@contextmanager
def collected(code: str = "resampling-note"):
    """Gather the WinrateWarnings raised inside as notes (a plain-text warning of another
    library gets ``code``); other warnings pass through to the caller."""
    gathered = Notes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WinrateWarning)
        yield gathered
    for item in caught:
        if issubclass(item.category, WinrateWarning):
            message = item.message.args[0] if item.message.args else str(item.message)
            note = as_note(message, code)
            if note not in gathered:
                gathered.append(note)
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


# --------------------------------------------------------------------------- the texts
# Every text winrate's leaderboard analysis gives, each with its code. Numbers in them are
# formatted here; the callers pass the facts.

#: Clusters on an axis below which its clustered SE is called rough.
FEW_CLUSTERS = 30
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


def default_clustering(chosen: str, reasons: str) -> Note:
    return Note("default-clustering", f"default clustering prompt+judge: clustered by {chosen}, "
                f"because {reasons}", severity="note")


def few_clusters(axis: str, n_clusters: int, method: str, t_reference: bool) -> Note:
    """The few-cluster warning, worded for the variance method that was run."""
    head = (f"axis '{axis}' has only {n_clusters} clusters (< {FEW_CLUSTERS}): "
            f"its clustered SE rests on {n_clusters} independent units")
    if method == "sandwich" and t_reference:
        tail = ("; t(G - 1) critical values allow for that, but the SE itself is rough.")
    elif method == "sandwich":
        tail = (" and is unreliable; use t(G - 1) critical values (--reference t; "
                "--method jackknife does) or a bootstrap, and treat the SE as rough.")
    elif method == "jackknife":
        tail = ("; the jackknife with t(G - 1) critical values is the few-cluster "
                "method, but with so few clusters its SE is still rough.")
    else:
        tail = (f"; the bootstrap can only resample these {n_clusters} clusters, "
                "so its SE is rough.")
    return Note("few-clusters", head + tail, axis=axis)


def single_cluster_pairs(axis: str, count: int, n_pairs: int) -> Note:
    return Note("single-cluster-pairs",
                f"axis '{axis}': {count} of {n_pairs} model pairs are observed within a "
                f"single {axis} cluster; the {axis} variance is not identified for them, so "
                "SEs of the models involved are understated on that axis.", axis=axis)


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
        "cluster (Lindeberg condition), so treat the SE as rough: use --method jackknife or "
        "t critical values, and check the result without that cluster.",
        axis=axis, models=[worst_model])


def few_effective_clusters(axis: str, n_clusters: int, flagged: list[tuple[str, float]],
                           remedy: str) -> Note:
    """Models whose SE rests on fewer than :data:`FEW_EFFECTIVE` effective clusters G*
    (Carter, Schnepel & Steigerwald 2017), ``flagged`` as (model, G*) fewest first."""
    shown = ", ".join(f"{m} ({g:.1f})" for m, g in flagged[:8])
    return Note(
        "few-effective-clusters",
        f"axis '{axis}': the SEs of {len(flagged)} model(s) rest on fewer than "
        f"{FEW_EFFECTIVE} effective {axis} clusters G* (of {n_clusters:,}): "
        f"{shown}{', ...' if len(flagged) > 8 else ''}. Their comparisons are concentrated "
        f"in a few {axis}s, so their intervals behave as if clustered in that few "
        f"and are rough; {remedy}", axis=axis, models=[m for m, _ in flagged])


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
            f"(most opponents missed: {most}). Use --model bt (Bradley-Terry adjusts for "
            "opponent strength).", models=named)
    were, they = ("pair was", "it is") if len(missing) == 1 else ("pairs were", "they are")
    return Note("incomplete-design",
                f"{len(missing)} model {were} never compared; {they} left out of the scores "
                "(never imputed), so models are scored against slightly different opponent "
                f"sets (opponents missed: {most}).", severity="note", models=named)


def not_estimable(reasons: dict[str, str]) -> Note:
    return Note("not-estimable",
                "uncertainty not estimable (no SE, interval or certain rank is "
                "reported; a score, where shown, has no error bar): "
                + "; ".join(f"{m}: {why}" for m, why in reasons.items()), models=list(reasons))


def psd_repaired() -> Note:
    return Note("psd-repaired",
                "the multiway covariance was not positive semi-definite and was repaired by "
                "clipping negative eigenvalues (Cameron, Gelbach & Miller 2011); some "
                "contrasts may have understated SEs.")


def not_psd(what: str, min_eig: float) -> Note:
    return Note("psd-repaired",
                f"the {what} was not PSD (positive semi-definite; smallest eigenvalue "
                f"{min_eig:.3g}); negative eigenvalues were clipped to zero (Cameron, Gelbach "
                "& Miller 2011, sec. 2.3). Standard errors of some contrasts may be "
                "understated; this usually means too few clusters on one axis.")


def interval_cut(models: list[str]) -> Note:
    return Note(
        "interval-cut",
        f"{plural(len(models), 'model')} ({_listed(models)}) had a normal interval reaching "
        "past 0% or 100% (marginal or simultaneous); it is cut at the bound, as for a "
        "proportion. So little information is behind these scores that the normal "
        "approximation is poor: read their intervals as rough.", models=models)


def small_sample_floor(pairs: list[tuple[str, str, float]], n_degenerate: int,
                       kind: str) -> Note:
    """Pairs whose comparisons all agree got a small-sample floor
    (:mod:`winrate.estimators.small_sample`);
    ``pairs``: the first few as (model, model, comparisons)."""
    shown = [f"{a} vs {b} ({plural(n, 'comparison')})" for a, b, n in pairs[:5]]
    how = ("the posterior mean of its binomial variance under a Beta prior centred on a "
           "Bradley-Terry fit of the whole log (empirical Bayes), so pairs the log places "
           "far apart stay narrow and close pairs do not" if kind == "empirical Bayes" else
           "the variance that makes its interval reach the far Wilson bound, because no "
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


def deprecated(old: str, new: str) -> Note:
    return Note("deprecated", f"analyze(..., {old}) is deprecated: use {new}",
                severity="note")


def off_baseline_rows(dropped: int, n_rows: int, baseline: str) -> Note:
    return Note("off-baseline-rows",
                f"{dropped} of {n_rows} rows compare two models without the baseline "
                f"{baseline!r}: a score against the baseline does not use them, so they are "
                "left out of the analysis, the comparison count and n (Bradley-Terry, model "
                "'bt', uses them)", severity="note")

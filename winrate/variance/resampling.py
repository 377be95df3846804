"""Few-cluster and resampling inference for leaderboard scores, from cluster-level sufficient
statistics.

Every method here works on the per-cluster pair totals of one clustering of the rows: for
cluster g and observed pair p = (lo, hi) (``Leaderboard.pairs``)::

    W_gp = sum_{r in g, pair(r) = p} f_r s_r,     N_gp = sum_{r in g, pair(r) = p} f_r

with ``s_r`` the half-tie score of the lower-coded model and ``f_r`` the row frequency. Any
re-weighting of whole clusters (deleting one, resampling them) changes the pair totals to
``W*_p = sum_g c_g W_gp`` and ``N*_p = sum_g c_g N_gp``, from which the scores follow
exactly (:func:`replicate_scorer`), without re-reading rows: a (B, G) matrix of cluster
weights times the (G, P) sparse totals gives B replicates at once.

Replicate scores follow :func:`winrate.estimators.win_rate_kernels.fit` exactly: ``psi*_p = W*_p /
N*_p``, opponent weights recomputed on the replicate's observed pairs (``"uniform"``: 1 / number of
observed opponents; ``"count"``: ``N*_ab / N*_a``). A pair whose replicate count is 0 (it lived only
in deleted / undrawn clusters) is *dropped* and the model's weights are renormalised over its
remaining opponents -- the convention of refitting the reduced log. A user weight matrix is held
fixed on the remaining pairs and each model's row is rescaled to its original row sum. A model left
with no comparisons in a replicate has an undefined score; see each method for how that is handled.

Methods
-------
* :func:`jackknife_cov` / :func:`multiway_jackknife_cov`: delete-one-cluster jackknife
  variance (mean-centred by default, CV3 with ``center="estimate"``), with t(G - 1)
  critical values; :func:`row_jackknife_cov` / :func:`row_bootstrap`: no clustering, each
  comparison a unit (a row of frequency f is f comparisons).
* :func:`cluster_bootstrap`: pairs (cluster) bootstrap by one axis, or Owen's (2007)
  pigeonhole bootstrap over two or more crossed axes.
* :func:`wild_cluster_bootstrap`: wild cluster bootstrap of the linearised estimator
  (Rademacher or Webb weights), percentile-t intervals, one-way clustering.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np
import scipy.sparse as sp

from winrate import estimators, notes
from winrate.constants import FEW_CLUSTERS, VARIANCE_METHODS
from winrate.errors import WinrateInputError, one_of
from winrate.estimators.leaderboard import Leaderboard
from winrate.io.logs import ComparisonLog
from winrate.progress import bar
from winrate.variance.reference import check_alpha, quantile_with_se, reference_label
from winrate.variance.sandwich import (
    DEFAULT_CORRECTION,
    group_codes,
    inclusion_exclusion,
    intersect_codes,
    small_sample_factor,
)

_BLOCK_ELEMENTS = 1 << 22  # dense (block, P) or (block, C) arrays stay ~32 MB
_ZERO_COUNT_RTOL = 1e-10  # a replicate pair count <= this * full count counts as zero
WILD_DISTRIBUTIONS = ("rademacher", "webb")
_WEBB_POINTS = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])
_ENUMERATE_LIMIT = 4096  # enumerate all sign / 6-point vectors when there are at most this many
_MIN_WILD_DRAWS = 99  # random wild draws: at least this many


# ------------------------------------------------------------------ sufficient statistics


@dataclass(frozen=True)
class PairTotals:
    """Cluster-level sufficient statistics ``W_gp``, ``N_gp`` of one clustering.

    ``wins`` and ``counts`` are (G, P) CSR matrices over ``Leaderboard.pairs``.
    """

    wins: sp.csr_array
    counts: sp.csr_array
    n_clusters: int

    @property
    def total_wins(self) -> np.ndarray:
        return np.asarray(self.wins.sum(axis=0)).ravel()

    @property
    def total_counts(self) -> np.ndarray:
        return np.asarray(self.counts.sum(axis=0)).ravel()


def pair_totals(log: ComparisonLog, board: Leaderboard, groups) -> PairTotals:
    """(G, P) sparse ``W_gp`` and ``N_gp`` (module doc) built by COO -> CSR summation."""
    codes, n_groups = group_codes(groups)
    if codes.shape[0] != log.n_rows:
        raise WinrateInputError(
            f"cluster codes have {codes.shape[0]} entries but the log has {log.n_rows} rows"
        )
    score_low = np.where(log.model_a > log.model_b, 1.0 - log.score, log.score)
    unit, n_units = estimators.of(board).resampling_units(board)
    keep = unit >= 0  # rows of zero frequency belong to no observed pair
    shape = (n_groups, n_units)
    idx = (codes[keep], unit[keep])
    f = log.weight[keep]
    wins = sp.coo_array((f * score_low[keep], idx), shape=shape).tocsr()
    counts = sp.coo_array((f, idx), shape=shape).tocsr()
    return PairTotals(wins, counts, n_groups)


def replicate_scorer(board: Leaderboard, total_counts, log: ComparisonLog):
    """Scores of replicate pair (or row) totals by refitting ``board``'s estimator exactly
    (:meth:`winrate.estimators.base.Estimator.replicate_scorer`), with the fit's own
    options."""
    return estimators.of(board).replicate_scorer(board, total_counts, log)


def _fitted(log: ComparisonLog, board: Leaderboard | None) -> Leaderboard:
    """``board``, or the default estimator with its default options when none is given
    (another estimator or options: pass their fit, :func:`winrate.estimators.fit`)."""
    return estimators.fit(log) if board is None else board


def _coded_axes(log: ComparisonLog, groups: list) -> tuple[list[np.ndarray], list[int]]:
    """Dense codes and cluster counts of each axis, checked against the log's length."""
    if not groups:
        raise WinrateInputError("resampling needs at least one clustering axis")
    codes, sizes = [], []
    for i, g in enumerate(groups):
        dense, size = group_codes(g)
        if dense.shape[0] != log.n_rows:
            raise WinrateInputError(f"cluster axis {i} has {dense.shape[0]} entries but the "
                                    f"log has {log.n_rows} rows")
        codes.append(dense)
        sizes.append(size)
    return codes, sizes


def _block_size(width: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(width, 1))


# ------------------------------------------------------------------------ jackknife


def _jackknife_blocks(totals: PairTotals, scorer, units=None):
    """Yield ``(start, S^(-g))`` for blocks of deleted clusters g (module doc).

    ``units``: per-cluster number of identical units (row frequencies when each row is
    a cluster of identical comparisons); one unit ``W_g / m_g``, ``N_g / m_g`` is deleted.
    """
    wins_all, counts_all = totals.total_wins, totals.total_counts
    block = _block_size(len(wins_all))
    for start in range(0, totals.n_clusters, block):
        stop = min(start + block, totals.n_clusters)
        wins, counts = totals.wins[start:stop].toarray(), totals.counts[start:stop].toarray()
        if units is not None:
            m = units[start:stop, None]
            wins = np.divide(wins, m, out=np.zeros(wins.shape), where=m > 0)
            counts = np.divide(counts, m, out=np.zeros(counts.shape), where=m > 0)
        yield start, scorer.scores(wins_all - wins, counts_all - counts)


def jackknife_replicates(log: ComparisonLog, groups,
                         board: Leaderboard | None = None) -> np.ndarray:
    """(G, K) delete-one-cluster scores ``S^(-g)``: exactly ``fit`` on the log without
    cluster g (NaN for a model left without comparisons), from the sufficient statistics
    ``S^(-g) = score(W - W_g, N - N_g)`` in O(G P) instead of G refits."""
    board = _fitted(log, board)
    totals = pair_totals(log, board, groups)
    scorer = replicate_scorer(board, totals.total_counts, log)
    return board.reported(np.concatenate([s for _, s in _jackknife_blocks(totals, scorer)]))


@dataclass(frozen=True)
class JackknifeCovariance:
    """Delete-one-cluster jackknife covariance.

    ``cov``: (K, K) jackknife covariance (``center`` of :func:`jackknife_cov`; multiway:
    inclusion-exclusion of one-way terms, PSD-repaired); ``n_clusters``: clusters per axis
    (comparisons for the frequency-weighted row jackknife); ``df = min(G) - 1`` for t
    critical values; ``undefined_replicates``: (replicate, model) pairs where deleting a
    cluster left the model without comparisons (its full-sample score was used there);
    ``psd_repaired``.
    """

    cov: np.ndarray
    n_clusters: tuple[int, ...]
    df: int
    undefined_replicates: int
    psd_repaired: bool
    min_eigenvalue: float


def _cv3(log, board, groups, center, units=None) -> tuple[np.ndarray, int]:
    """One jackknife term, accumulated over blocks of deleted clusters (no (G, K) array
    kept). ``units`` (see ``_jackknife_blocks``): cluster g stands for ``m_g`` identical
    units, each deleted in turn, so its replicate counts ``m_g`` times among
    ``n = sum_g m_g`` replicates. Computed in the canonical parameterisation
    (:class:`winrate.estimators.leaderboard.Leaderboard`)."""
    totals = pair_totals(log, board, groups)
    scorer = replicate_scorer(board, totals.total_counts, log)
    estimate = board.canonical_scores
    k = estimate.size
    mult = np.ones(totals.n_clusters) if units is None else np.asarray(units, float)
    n_units = mult.sum()
    full = np.nan_to_num(estimate)
    sum_d, sum_dd, undefined = np.zeros(k), np.zeros((k, k)), 0
    for start, reps in _jackknife_blocks(totals, scorer, units):
        m = mult[start:start + len(reps), None]
        missing = np.isnan(reps) & ~np.isnan(estimate) & (m > 0)
        undefined += int(missing.sum())
        d = np.where(np.isnan(reps), full, reps) - full
        sum_d += (m * d).sum(axis=0)
        sum_dd += d.T @ (m * d)
    if center == "mean":
        sum_dd -= np.outer(sum_d, sum_d) / n_units
    return (n_units - 1) / n_units * sum_dd, undefined


def jackknife_cov(log: ComparisonLog, groups,
                  board: Leaderboard | None = None, center: str = "mean"
                  ) -> JackknifeCovariance:
    """Delete-one-cluster jackknife variance of the scores for one clustering::

        V = (G - 1) / G * sum_g (S^(-g) - C)(S^(-g) - C)^T

    * ``center="mean"`` (default): ``C = Sbar = mean_g S^(-g)``, the classical jackknife
      (Quenouille-Tukey), called CV3J by MacKinnon, Nielsen & Webb (2023, "Fast and
      reliable jackknife and bootstrap methods for cluster-robust inference", J. Appl.
      Econometrics 38(5)); it is never larger than the estimate-centred version (the
      sum of squares is smallest about the mean).
    * ``center="estimate"``: ``C = S``, the full-sample estimate: the CV3 of MacKinnon,
      Nielsen & Webb (2023, "Cluster-robust inference: a guide to empirical practice",
      J. Econometrics 232(2)), which for OLS equals the CR3 sandwich with
      ``(I - H_gg)^{-1}`` leverage corrections (Bell & McCaffrey 2002, Survey
      Methodology 28(2); tested against a hand-written CR3 for an intercept-only OLS).

    Either is larger than CR1 when few clusters dominate -- the reason the jackknife is
    preferred with few clusters, paired with t(G - 1) critical values. Replicates come
    from :func:`jackknife_replicates`' sufficient statistics. A model left without
    comparisons by deleting a cluster keeps its full-sample score in that replicate
    (counted in ``undefined_replicates``, warned).
    """
    return multiway_jackknife_cov(log, [groups], board, center)


def _warn_undefined(undefined: int) -> None:
    if undefined:
        notes.emit(notes.undefined_replicates(undefined))


def multiway_jackknife_cov(log: ComparisonLog, groups: list,
                           board: Leaderboard | None = None, center: str = "mean"
                           ) -> JackknifeCovariance:
    """Multiway jackknife: inclusion-exclusion of one-way jackknife terms
    (:func:`jackknife_cov`, same ``center``) over every non-empty subset S of the
    clustering dimensions, ``V = sum_S (-1)^(|S|+1) V_jack(cap S)`` -- the
    Cameron-Gelbach-Miller (2011, JBES 29(2), eq. 2.11) combination with each term's
    sandwich replaced by its jackknife (as in MacKinnon, Nielsen & Webb 2021, "Wild
    bootstrap and asymptotic inference with multiway clustering", JBES 39(2), sec. 3).
    Negative eigenvalues are clipped to zero (CGM 2011, sec. 2.3), with a warning.
    One dimension gives :func:`jackknife_cov`.
    """
    if center not in ("mean", "estimate"):
        raise WinrateInputError(f"center must be 'mean' or 'estimate', got {center!r}")
    if not groups:
        raise WinrateInputError("the jackknife needs at least one clustering axis")
    codes, sizes = _coded_axes(log, groups)
    if min(sizes) < 2:
        raise WinrateInputError("the jackknife needs at least 2 clusters on every axis")
    board = _fitted(log, board)

    def term(term_codes, _n_range):
        return _cv3(log, board, term_codes, center)

    cov, min_eig, repaired, parts = inclusion_exclusion(
        codes, sizes, term, "multiway jackknife covariance")
    _warn_undefined(sum(info for dims, _, _, info in parts if len(dims) == 1))
    return JackknifeCovariance(board.reported_cov(cov), tuple(sizes), min(sizes) - 1,
                               sum(info for dims, _, _, info in parts if len(dims) == 1),
                               repaired, min_eig)


def _require_whole_frequencies(log: ComparisonLog, method: str) -> np.ndarray:
    freq = log.weight
    if not np.array_equal(freq, np.round(freq)):
        raise WinrateInputError(
            f"the {method} without clustering treats a row of frequency f as f identical "
            "comparisons, so it needs whole-number frequencies; cluster the log, or use "
            "the sandwich (method 'sandwich')")
    return freq


def row_jackknife_cov(log: ComparisonLog, board: Leaderboard | None = None,
                      center: str = "mean") -> JackknifeCovariance:
    """Delete-one-comparison jackknife with no clustering: that of the expanded log in
    which a row of frequency ``f_r`` is ``f_r`` identical comparisons.

    Deleting any of row r's copies gives the same replicate ``S^(-r)`` (row r's
    frequency lowered by one), so with ``n = sum_r f_r``
    ``V = (n - 1) / n sum_r f_r (S^(-r) - C)(S^(-r) - C)^T``, ``C = sum_r f_r S^(-r) / n``
    (``center="mean"``) or the estimate -- in O(rows), equal to :func:`jackknife_cov` of the
    expanded log by rows (tested). Frequencies must be whole numbers.
    """
    if center not in ("mean", "estimate"):
        raise WinrateInputError(f"center must be 'mean' or 'estimate', got {center!r}")
    freq = _require_whole_frequencies(log, "jackknife")
    n_units = int(freq.sum())
    if n_units < 2:
        raise WinrateInputError("the jackknife needs at least 2 comparisons")
    board = _fitted(log, board)
    cov, undefined = _cv3(log, board, np.arange(log.n_rows), center, units=freq)
    _warn_undefined(undefined)
    return JackknifeCovariance(board.reported_cov(cov), (n_units,), n_units - 1, undefined,
                               False, np.nan)


# --------------------------------------------------------- cluster / pigeonhole bootstrap


@dataclass(frozen=True)
class BootstrapResult:
    """Bootstrap replicates of the scores.

    ``replicates``: (B, K) replicate scores (replicates with an undefined score dropped,
    their number in ``n_dropped``); ``cov``: their covariance (ddof 1); ``method``:
    ``"cluster"``, ``"pigeonhole"`` or ``"row"`` (:func:`row_bootstrap`); ``axes``:
    clusters per resampled axis (comparisons for ``"row"``).
    """

    estimate: np.ndarray
    replicates: np.ndarray
    cov: np.ndarray
    method: str
    axes: tuple[int, ...]
    n_dropped: int
    seed: int | None

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    def percentile(self, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval ``[q_{alpha/2}, q_{1-alpha/2}]`` of each model's replicates
        (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", eq. 13.5)."""
        alpha = check_alpha(alpha)
        low, high = np.quantile(self.replicates, [alpha / 2, 1 - alpha / 2], axis=0)
        return low, high


def _cell_structure(log: ComparisonLog, groups: list):
    """Codes of the intersection cells and, per axis, each cell's cluster on that axis."""
    codes, sizes = _coded_axes(log, groups)
    cells, n_cells = group_codes(intersect_codes(codes, sizes)[0])
    cell_of_axis = []
    for axis_codes in codes:
        mapping = np.zeros(n_cells, dtype=np.int64)
        mapping[cells] = axis_codes
        cell_of_axis.append(mapping)
    return cells, n_cells, sizes, cell_of_axis


class ProductWeightScorer:
    """Scores of logs whose cells are re-weighted by products of per-axis cluster weights.

    ``scores([c^(1), ..., c^(d)])`` with ``c^(d)`` a (B, G_d) matrix of cluster weights on
    axis d gives the (B, K) scores of the B logs in which every row of cell (g_1, ..., g_d)
    has its frequency multiplied by ``prod_d c^(d)_{g_d}``: ``W* = (cell weights) @ W_cell``
    with the (C, P) cell totals of the intersection clustering. Integer weights are
    resampled logs (a cluster drawn twice counts twice); it equals ``fit`` on the log with
    those frequencies (tested).
    """

    def __init__(self, log: ComparisonLog, board: Leaderboard, groups: list):
        cells, self.n_cells, self.sizes, self.cell_of_axis = _cell_structure(log, groups)
        totals = pair_totals(log, board, cells)
        self.scorer = replicate_scorer(board, totals.total_counts, log)
        self.wins_t, self.counts_t = totals.wins.T.tocsr(), totals.counts.T.tocsr()

    def scores(self, cluster_weights: list[np.ndarray]) -> np.ndarray:
        cell_weight = np.ones((cluster_weights[0].shape[0], self.n_cells))
        for weight, mapping in zip(cluster_weights, self.cell_of_axis, strict=True):
            cell_weight *= weight[:, mapping]
        wins = np.asarray(self.wins_t @ cell_weight.T).T
        counts = np.asarray(self.counts_t @ cell_weight.T).T
        return self.scorer.scores(wins, counts)


def cluster_bootstrap(log: ComparisonLog, groups: list, reps: int = 999,
                      seed: int | None = 0, board: Leaderboard | None = None,
                      progress: bool | None = None) -> BootstrapResult:
    """Cluster bootstrap by one axis, or the pigeonhole bootstrap over crossed axes.

    Each axis d draws multinomial cluster counts ``c^(d) ~ Mult(G_d; 1/G_d, ..., 1/G_d)``
    (resampling its G_d clusters with replacement), independently across axes; a cell of
    the intersection clustering (e.g. a (prompt, judge) pair) gets weight
    ``prod_d c^(d)_{g_d(cell)}`` and ``W*_p = sum_cells weight * W_cell,p`` (and N*
    alike; :class:`ProductWeightScorer`). One axis is the pairs cluster bootstrap
    (Cameron, Gelbach & Miller 2008, REStat 90(3)); two is Owen's (2007, "The pigeonhole
    bootstrap", Ann. Appl. Stat. 1(2)) bootstrap for crossed random effects, whose
    variance is *conservative*: for a mean it estimates about
    ``V_prompt + V_judge + V_cell`` where the two-way sandwich subtracts the cell term
    (Owen 2007, sec. 3), so it overstates the variance most when clustering is weak.
    Replicates are computed a block at a time as a (B, C) weight matrix times the (C, P)
    cell totals. ``groups`` is a list of cluster-code arrays, one per resampled axis.
    """
    if int(reps) != reps or reps < 2:
        raise WinrateInputError(f"bootstrap reps must be an integer >= 2, got {reps}")
    if not groups:
        raise WinrateInputError("the bootstrap needs at least one clustering axis")
    board = _fitted(log, board)
    scorer = ProductWeightScorer(log, board, groups)
    rng = np.random.default_rng(seed)

    def draw(b):
        return [rng.multinomial(size, np.full(size, 1.0 / size), size=b).astype(float)
                for size in scorer.sizes]

    method = "cluster" if len(groups) == 1 else "pigeonhole"
    out = _run_bootstrap(scorer, draw, reps, board.canonical_scores.size, method, progress)
    return _bootstrap_result(board, out, method, tuple(scorer.sizes), seed)


def row_bootstrap(log: ComparisonLog, reps: int = 999,
                  seed: int | None = 0, board: Leaderboard | None = None,
                  progress: bool | None = None) -> BootstrapResult:
    """Bootstrap of comparisons with no clustering: that of the expanded log in which a
    row of frequency ``f_r`` is ``f_r`` identical comparisons.

    Drawing ``n = sum_r f_r`` comparisons with replacement from the expanded log takes
    ``c ~ Mult(n; f / n)`` copies of row r's comparison, i.e. row r's frequency becomes
    ``c_r`` (weight ``c_r / f_r`` on its totals, :class:`ProductWeightScorer`). Unweighted
    logs give the ordinary bootstrap of rows. Frequencies must be whole numbers.
    """
    if int(reps) != reps or reps < 2:
        raise WinrateInputError(f"bootstrap reps must be an integer >= 2, got {reps}")
    freq = _require_whole_frequencies(log, "bootstrap")
    n_units = int(freq.sum())
    board = _fitted(log, board)
    scorer = ProductWeightScorer(log, board, [np.arange(log.n_rows)])
    rng = np.random.default_rng(seed)
    inv = np.divide(1.0, freq, out=np.zeros(freq.shape), where=freq > 0)

    def draw(b):
        return [rng.multinomial(n_units, freq / n_units, size=b) * inv]

    out = _run_bootstrap(scorer, draw, reps, board.canonical_scores.size, "row", progress)
    return _bootstrap_result(board, out, "row", (n_units,), seed)


def _run_bootstrap(scorer: ProductWeightScorer, draw, reps: int, k: int, method: str,
                   progress) -> np.ndarray:
    """(reps, K) replicate scores, ``draw(b)`` giving each block's per-axis weights."""
    out = np.empty((reps, k))
    block = min(reps, _block_size(scorer.n_cells))
    for start in bar(range(0, reps, block), desc=f"{method} bootstrap", unit="block",
                     progress=progress):
        b = min(block, reps - start)
        out[start:start + b] = scorer.scores(draw(b))
    return out


def _bootstrap_result(board, reps, method, sizes, seed) -> BootstrapResult:
    """Replicates (canonical, :class:`winrate.estimators.leaderboard.Leaderboard`) to the result on
    the reported scale; the covariance is mapped from the canonical one."""
    estimate = board.canonical_scores
    defined = ~np.isnan(estimate)
    bad = np.isnan(reps[:, defined]).any(axis=1)
    if bad.any():
        notes.emit(notes.bootstrap_conditional(int(bad.sum()), len(reps)))
    reps = np.where(np.isnan(reps), np.nan_to_num(estimate), reps)[~bad]
    if len(reps) < 2:
        raise WinrateInputError("fewer than 2 bootstrap replicates left every model scored")
    cov = np.cov(reps, rowvar=False, ddof=1).reshape(reps.shape[1], reps.shape[1])
    return BootstrapResult(board.scores, board.reported(reps), board.reported_cov(cov),
                           method, sizes, int(bad.sum()), seed)


# ----------------------------------------------------------------- wild cluster bootstrap


@dataclass(frozen=True)
class WildBootstrapResult:
    """Wild cluster bootstrap percentile-t intervals (see :func:`wild_cluster_bootstrap`).

    ``se``: one-way CV1 standard errors; ``critical_values`` (K,): per-model bootstrap
    quantiles of ``|t*_a|``; ``low``/``high``: marginal intervals ``S_a -/+ c_a se_a``;
    ``simultaneous_critical_value``: quantile of ``max_a |t*_a|``; ``sim_low``/``sim_high``;
    ``cov``: the one-way CV1 covariance; ``n_draws``: number of weight vectors (``2^G`` or
    ``6^G`` when ``enumerated``).
    """

    estimate: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_values: np.ndarray
    simultaneous_critical_value: float
    sim_low: np.ndarray
    sim_high: np.ndarray
    distribution: str
    n_clusters: int
    n_draws: int
    enumerated: bool
    alpha: float


def wild_weights(n_clusters: int, reps: int, distribution: str = "webb", seed=0
                 ) -> tuple[np.ndarray, bool]:
    """(B, G) wild bootstrap weights and whether they enumerate the whole support.

    Rademacher: ``v = +/-1`` with probability 1/2 each; Webb (2023, "Reworking wild
    bootstrap-based inference for clustered errors", Canadian J. Econ. 56(3)) six-point:
    ``v in {+/-sqrt(1/2), +/-1, +/-sqrt(3/2)}`` with probability 1/6 each (mean 0,
    variance 1). When the support has at most ``max(reps, 4096)`` points (Rademacher with
    G <= 12) all ``2^G`` (``6^G``) equally likely vectors are returned instead of draws;
    otherwise ``reps`` must be an integer >= 99.
    """
    if distribution not in WILD_DISTRIBUTIONS:
        raise WinrateInputError(
            f"wild bootstrap weights must be one of {one_of(WILD_DISTRIBUTIONS)}, "
            f"got {distribution!r}")
    if int(reps) != reps or reps < 1:
        raise WinrateInputError(f"wild bootstrap reps must be a positive integer, got {reps}")
    points = np.array([-1.0, 1.0]) if distribution == "rademacher" else _WEBB_POINTS
    if len(points) ** n_clusters <= max(reps, _ENUMERATE_LIMIT):
        return np.array(list(product(points, repeat=n_clusters))), True
    if reps < _MIN_WILD_DRAWS:
        raise WinrateInputError(
            f"wild bootstrap reps must be >= {_MIN_WILD_DRAWS} when the {len(points)}^"
            f"{n_clusters} weight vectors are not enumerated, got {reps}")
    reps = int(reps)
    rng = np.random.default_rng(seed)
    return points[rng.integers(0, len(points), (reps, n_clusters))], False


@dataclass(frozen=True, eq=False)
class WildDraws:
    """The wild cluster bootstrap before a level is chosen (:func:`wild_draws`): the
    estimates, the sample CV1 ``se`` and ``cov``, the (B, K) draws ``statistics`` of
    ``|t*|``, the weight ``distribution``, ``n_clusters`` and the number of weight vectors
    ``n_draws`` (``enumerated``: the whole support). :meth:`at` gives the intervals."""

    estimate: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    statistics: np.ndarray
    distribution: str
    n_clusters: int
    enumerated: bool

    @property
    def n_draws(self) -> int:
        return self.statistics.shape[0]

    def at(self, alpha: float) -> WildBootstrapResult:
        """Symmetric percentile-t intervals at level 1 - ``alpha``: ``S_a -/+ c_a se_a``
        with ``c_a`` the 1 - alpha quantile of ``|t*_a|``, and the simultaneous ones from
        the quantile of ``max_a |t*_a|`` (:func:`wild_cluster_bootstrap`); a note when the
        weights' support is too coarse for this level."""
        alpha = check_alpha(alpha)
        _warn_coarse_support(self.distribution, self.n_clusters, alpha)
        crit = quantile_with_se(self.statistics, alpha)[0]
        sim_crit = float(quantile_with_se(self.statistics.max(axis=1, keepdims=True),
                                           alpha)[0][0])
        est, se = self.estimate, self.se
        half = np.where(se > 0, crit * se, 0.0)  # crit may be inf (see _wild_statistics)
        sim_half = np.where(se > 0, sim_crit * se, 0.0)
        return WildBootstrapResult(
            est, se, self.cov, est - half, est + half, crit, sim_crit, est - sim_half,
            est + sim_half, self.distribution, self.n_clusters, self.n_draws,
            self.enumerated, alpha)


def wild_cluster_bootstrap(log: ComparisonLog, groups, alpha: float = 0.05,
                           reps: int = 9999, distribution: str = "webb", seed: int | None = 0,
                           correction: str = DEFAULT_CORRECTION,
                           board: Leaderboard | None = None,
                           progress: bool | None = None) -> WildBootstrapResult:
    """Wild cluster bootstrap (WCU) of the linearised scores, symmetric percentile-t.

    The score is a plug-in (ratio) estimator, not a regression, so the bootstrap acts on
    its influence representation ``S - S0 ~ sum_g t_g`` with ``t_g = E_g A`` the cluster
    sums of the influence, ``E_gp = W_gp - psi_p N_gp`` the centred pair totals and ``A``
    the (P, K) influence map (``_influence_map``). With weights ``v_g`` (Rademacher or
    Webb, :func:`wild_weights`) a bootstrap sample has centred totals ``v_g E_gp``; its
    estimate moves by ``dpsi*_p = sum_g v_g E_gp / N_p`` and ``d* = dpsi* A``, and its own
    residual cluster totals are re-centred at the bootstrap estimate,
    ``E*_gp = v_g E_gp - N_gp dpsi*_p`` (the analogue of re-estimating the regression
    residuals in the WCU bootstrap: MacKinnon & Webb 2017, "Wild bootstrap inference for
    wildly different cluster sizes", J. Appl. Econometrics 32(2); Webb 2023). Each draw is
    studentised by its own CV1 variance ``V*_a = c(G) sum_g (E*_g A)_a^2``, giving
    ``t*_a = d*_a / sqrt(V*_a)``. The interval is ``S_a -/+ c_a se_a`` with ``se_a`` the
    sample CV1 SE and ``c_a`` the ``1 - alpha`` quantile of ``|t*_a|`` (symmetric
    percentile-t); the simultaneous critical value is the quantile of ``max_a |t*_a|``.
    The draws do not depend on ``alpha`` (:func:`wild_draws`; :meth:`WildDraws.at`).

    Limits: only one clustering axis (two-way dependence is not resampled; use the
    pigeonhole bootstrap or the jackknife); the bootstrap is of the *linearised* estimator,
    so it corrects the reference distribution, not the nonlinearity of the ratio. With G
    clusters Rademacher weights have only 2^G equally likely vectors (2^(G-1) distinct
    ``|t*|``): when ``2 / 2^G > alpha`` no quantile reaches 1 - alpha and the interval is
    set by the largest draw (a warning says so); Webb's six points give 6^G vectors.
    """
    alpha = check_alpha(alpha)
    return wild_draws(log, groups, reps, distribution, seed, correction, board,
                      progress).at(alpha)


def wild_draws(log: ComparisonLog, groups, reps: int = 9999,
               distribution: str = "webb", seed: int | None = 0,
               correction: str = DEFAULT_CORRECTION, board: Leaderboard | None = None,
               progress: bool | None = None) -> WildDraws:
    """The draws of :func:`wild_cluster_bootstrap` (its doc), at no level yet."""
    factor = small_sample_factor(2, correction)  # validates correction before any work
    board = _fitted(log, board)
    totals = pair_totals(log, board, groups)
    n_groups = totals.n_clusters
    if n_groups < 2:
        raise WinrateInputError("the wild cluster bootstrap needs at least 2 clusters")
    v, enumerated = wild_weights(n_groups, reps, distribution, seed)
    counts_p = totals.total_counts
    psi = np.divide(totals.total_wins, counts_p)
    centred = (totals.wins - totals.counts.multiply(psi[None, :])).toarray()  # (G, P) E_gp
    amap = estimators.of(board).wild_influence_map(board, counts_p)
    t_g = np.asarray(centred @ amap)  # (G, K) cluster sums of the influence
    factor = small_sample_factor(n_groups, correction)
    cov = factor * t_g.T @ t_g
    stats = _wild_statistics(v, centred, totals.counts.toarray(), counts_p, amap, t_g, factor,
                             progress)
    return WildDraws(board.scores, np.sqrt(np.diag(cov)), cov, np.abs(stats), distribution,
                     n_groups, enumerated)


def _wild_statistics(v, centred, counts, counts_p, amap, t_g, factor, progress) -> np.ndarray:
    """(B, K) bootstrap t statistics ``t*`` (see :func:`wild_cluster_bootstrap`), B draws at
    a time: ``d* = v T``; ``V* = c sum_g (v_g t_g - (N_g * dpsi*) A)^2``.

    A draw whose ``V*`` is zero (at round-off level) has ``|t*| = inf`` when its ``d*`` is
    not (e.g. two equal clusters with ``v_1 = -v_2``: the bootstrap residuals cancel in
    each cluster), and ``t* = 0`` when ``d*`` is zero too (a model seen in one cluster).
    """
    n_draws, k = v.shape[0], t_g.shape[1]
    out = np.empty((n_draws, k))
    # a variance at round-off level (a model seen in one cluster only) counts as zero, and
    # so does a shift below 1e-10 of the largest sample SE
    tiny = 1e-20 * max(float(factor * (t_g**2).sum(axis=0).max(initial=0.0)), 1e-300)
    block = _block_size(max(centred.shape[1], k) * 4)
    for start in bar(range(0, n_draws, block), desc="wild bootstrap", unit="block",
                     progress=progress):
        vb = v[start:start + block]
        shift = np.asarray(vb @ centred) / counts_p  # (b, P) dpsi*
        delta = vb @ t_g  # (b, K)
        var = np.zeros(delta.shape)
        for g in range(centred.shape[0]):  # loop over clusters, vectorised over draws
            resid = vb[:, g:g + 1] * t_g[g] - np.asarray((shift * counts[g]) @ amap)
            var += resid**2
        var *= factor
        exact = np.where(np.abs(delta) > np.sqrt(tiny), np.copysign(np.inf, delta), 0.0)
        out[start:start + block] = np.divide(delta, np.sqrt(var), out=exact, where=var > tiny)
    return out


def _warn_coarse_support(distribution: str, n_groups: int, alpha: float) -> None:
    if distribution == "rademacher" and 2.0 / 2**n_groups > alpha:
        notes.emit(notes.coarse_rademacher(n_groups, alpha))
    elif n_groups <= 5:
        notes.emit(notes.few_wild_clusters(n_groups))


# ------------------------------------------------------------ method choice for reports

WILD_MAX_CLUSTERS = 50  # one axis with at most this many clusters: wild cluster bootstrap
WEBB_MAX_CLUSTERS = 12  # ... with Webb weights up to here, Rademacher above


@dataclass(frozen=True)
class VarianceChoice:
    """A covariance (and possibly intervals) from one of :data:`VARIANCE_METHODS`.

    ``method``: what was run (``"sandwich"``, ``"jackknife"``, ``"wild bootstrap"``,
    ``"cluster bootstrap"``, ``"pigeonhole bootstrap"``); ``cov`` and ``df`` (t degrees of
    freedom, None for normal) feed Wald, simultaneous, pairwise and rank inference;
    ``wild`` holds the wild bootstrap's draws when it was used (its percentile-t intervals,
    :meth:`WildDraws.at`, replace the Wald intervals); ``note``: one line saying what was
    used and why.
    """

    method: str
    cov: np.ndarray
    df: int | None
    note: str
    wild: WildDraws | None = None
    bootstrap: BootstrapResult | None = None
    psd_repaired: bool = False


def _axes_phrase(names, sizes) -> str:
    return " + ".join(f"{n} ({g:,} clusters)" for n, g in zip(names, sizes, strict=True))


def _smallest(names, sizes) -> tuple[str, int]:
    i = int(np.argmin(sizes))
    return names[i], sizes[i]


def sandwich_note(names, sizes, correction: str, df) -> str:
    """What the default sandwich did, and a pointer to the few-cluster methods if needed."""
    ref = f"{reference_label(df)} reference"
    if not names:
        return f"sandwich: rows treated as independent ({correction}), {ref}"
    note = f"sandwich ({correction}) clustered by {_axes_phrase(names, sizes)}, {ref}"
    name, g = _smallest(names, sizes)
    if g < FEW_CLUSTERS and df is None:
        note += (f"; the {name} axis has only {g} clusters (< {FEW_CLUSTERS}): the sandwich "
                 f"with a normal reference is unreliable there, use method 'auto' "
                 f"(t({g - 1}) critical values)")
    return note


def resampled_variance(log: ComparisonLog, board: Leaderboard, names: tuple[str, ...],
                       method: str, reps: int = 999,
                       seed: int | None = 0, progress: bool | None = None,
                       correction: str = DEFAULT_CORRECTION) -> VarianceChoice:
    """Covariance by the jackknife or a bootstrap, chosen by the clustering (``names``
    are axes of ``log``), with the reason in ``note``.

    * ``"jackknife"``: mean-centred delete-one-cluster jackknife (multiway by
      inclusion-exclusion, :func:`multiway_jackknife_cov`) with t(G_min - 1).
    * ``"bootstrap"``: one axis with <= 50 clusters -> wild cluster bootstrap,
      percentile-t (Webb weights for G <= 12, Rademacher above; MacKinnon, Nielsen & Webb
      2023 recommend Webb when G is small because Rademacher has only 2^G draws), with
      t(G - 1) for pairwise and rank inference from its covariance (small-sample
      ``correction``, CR1 by default); one axis with more clusters -> pairs cluster
      bootstrap covariance; two or more axes -> pigeonhole bootstrap covariance (Owen
      2007; conservative).
    * No clustering: each comparison is a unit -- a row of frequency f counts as f
      identical comparisons (:func:`row_jackknife_cov`, :func:`row_bootstrap`), so the
      result is that of the expanded log, like ``naive_cov``.
    """
    if method not in ("jackknife", "bootstrap"):
        raise WinrateInputError(f"method must be one of {one_of(VARIANCE_METHODS)}, got {method!r}")
    groups = [log.axes[n].codes for n in names]
    sizes = [log.axes[n].n_clusters for n in names]
    label = _axes_phrase(names, sizes) if names else "comparisons (no clustering)"
    if method == "jackknife":
        if names:
            jack = multiway_jackknife_cov(log, groups, board=board)
        else:
            jack = row_jackknife_cov(log, board=board)
        note = (f"jackknife (CV3J: delete one cluster, mean-centred) by {label}, "
                f"t({jack.df}) reference: ")
        if names:
            name, g = _smallest(names, sizes)
            note += (f"the {name} axis has {g:,} clusters; the jackknife with t(G - 1) is the "
                     "few-cluster choice of MacKinnon, Nielsen & Webb (2023)")
        else:
            note += "no clustering requested, so each comparison is deleted in turn"
        return VarianceChoice("jackknife", jack.cov, jack.df, note,
                              psd_repaired=jack.psd_repaired)
    estimator = estimators.of(board)
    if (len(groups) == 1 and sizes[0] <= WILD_MAX_CLUSTERS
            and estimator.supports("wild bootstrap")):
        dist = "webb" if sizes[0] <= WEBB_MAX_CLUSTERS else "rademacher"
        wild = wild_draws(log, groups[0], reps, dist, seed, correction,
                          board=board, progress=progress)
        why = ("Webb 6-point weights since Rademacher has only 2^G draws" if dist == "webb"
               else "Rademacher weights")
        note = (f"wild cluster bootstrap by {label} ({wild.n_draws:,} draws"
                f"{', all enumerated' if wild.enumerated else ''}, symmetric percentile-t): "
                f"one axis with <= {WILD_MAX_CLUSTERS} clusters, {why}; pairwise and rank "
                f"inference use its {correction} covariance with t({sizes[0] - 1})")
        return VarianceChoice("wild bootstrap", wild.cov, sizes[0] - 1, note, wild=wild)
    if not names:
        boot = row_bootstrap(log, reps, seed, board, progress)
        note = (f"bootstrap of comparisons ({len(boot.replicates):,} replicates), normal "
                "intervals from the bootstrap covariance: no clustering requested, "
                "comparisons are resampled")
        return VarianceChoice("cluster bootstrap", boot.cov, None, note, bootstrap=boot)
    boot = cluster_bootstrap(log, groups, reps, seed, board, progress)
    kind = "pigeonhole bootstrap" if len(groups) > 1 else "cluster bootstrap"
    why = ("crossed axes: Owen's (2007) pigeonhole bootstrap resamples each axis "
           "independently; it is conservative (counts the cell variance twice)"
           if len(groups) > 1 else f"one axis with > {WILD_MAX_CLUSTERS} clusters"
           if estimator.supports("wild bootstrap") else f"{estimator.title} is "
           f"{estimator.refit_phrase} (the wild bootstrap perturbs a linear influence, which "
           "only the win rate has)")
    note = (f"{kind} by {label} ({len(boot.replicates):,} replicates), normal intervals from "
            f"the bootstrap covariance: {why}")
    if min(sizes) < FEW_CLUSTERS:
        note += f"; only {min(sizes)} clusters on one axis, so the bootstrap is rough"
    return VarianceChoice(kind, boot.cov, None, note, bootstrap=boot)

"""Joint inference from a vector of estimates and its covariance.

Everything here works from ``(estimate, cov[, df])``: the estimator and its clustering
were chosen upstream, so the same functions serve leaderboards and per-question evals.
Higher scores are better; rank 1 is the best model.

Public API
----------
``critical_value(alpha, df=None)``
    Two-sided marginal critical value (normal or t).
``wald_intervals(estimate, cov, alpha=0.05, df=None) -> WaldIntervals``
    Marginal Wald intervals.
``simultaneous_intervals(estimate, cov, alpha=0.05, df=None, *, n_draws, seed, chunk_size,
mc_tolerance) -> SimultaneousIntervals``
    Intervals covering all K scores jointly (max-|T| critical value).
``pairwise_differences(estimate, cov, alpha=0.05, df=None, *, n_draws, seed, chunk_size)
-> PairwiseDifferences``
    Every ``S_i - S_j`` (i < j): SE, marginal / Holm / max-T p-values, simultaneous
    intervals; ``.to_frame(names=None)``.
``holm(p_values)``
    Holm step-down adjusted p-values.
``rank_sets(estimate, cov, alpha=0.05, df=None, *, method="marginal", stepdown=True,
n_draws, seed, chunk_size) -> RankSets``
    Confidence sets ``[low, high]`` for the rank of each model (Mogstad et al. 2024).
``tau_best(estimate, cov, tau, alpha=0.05, df=None, *, stepdown=True, n_draws, seed,
chunk_size) -> TauBest``
    Set of models that may be among the true top ``tau`` (Mogstad et al. 2024).

All Monte-Carlo functions take ``n_draws`` (at most this many draws; default 200 000),
``mc_tolerance`` (default 0.002; see "Draws"), ``seed`` (default 0, for
``numpy.random.SeedSequence``; None for fresh entropy, drawn once per call so every
step-down step shares it) and ``chunk_size`` (draws per
chunk; None sizes chunks to ~32 MB), and report the critical value's Monte-Carlo SE and
the number of draws used. Cost is about ``draws * (number of contrasts)`` simple
operations, vectorised over draws.

Draws
-----
The draws adapt to the precision needed: a first round of 10 000 draws (at least
``200 / alpha``), then rounds sized from the SE's ``1 / sqrt(n)`` decay, until the
Monte-Carlo SE of every critical value c is at most ``mc_tolerance * c`` or ``n_draws``
are used; ``mc_tolerance=None`` uses exactly ``n_draws``. Why 0.002: an error delta in c
scales every simultaneous half-width ``c * se`` by ``1 + delta / c``, so at one MC SE the
half-widths are within 0.2% of their exact-quantile values (c = 3.8 +/- 0.008), and the
joint coverage moves by the density of the maximum at c times delta, about 0.1
percentage points (a Gumbel-like maximum of scale ~0.3 has density ~0.16 at its 95%
quantile). For 100 models that takes some 20 000 - 60 000 draws instead of a fixed
200 000. A step-down (rank sets) chooses the draws at its first step and reuses them at
every later step, which keeps its critical values non-increasing.

Max-|T| critical values
-----------------------
For standardised contrasts ``T_h = s_h (L_h Z) / sd(L_h Z)`` with ``Z ~ N(0, V)`` the
critical value of a family ``H`` is the ``1 - alpha`` quantile of ``max_{h in H} T_h``
(two-sided hypotheses enter as ``|T_h|``). It is computed by a seeded Monte-Carlo over a
factor ``F`` of ``V = F F^T`` from the eigen-decomposition with clipped eigenvalues, so
singular ``V`` (round-robin win rates summing to a constant) are handled exactly. With
``df`` the reference is the multivariate t, ``T = Z / S`` with ``S = sqrt(W / df)``,
``W ~ chi2(df)`` independent of Z, the defining representation of the multivariate t
(Genz & Bretz 2009, "Computation of Multivariate Normal and t Probabilities", ch. 1).
The maximum of a family is then ``M / S`` with M the Gaussian maximum, and
``P(M / S <= c) = E[P(S >= M / c | M)]``: S is integrated out for each simulated M
(conditional Monte Carlo, which only lowers the variance; the separation of the chi
variable is how Genz & Bretz compute t probabilities) by the midpoint rule over 256
quantiles of S. A draw of W per draw of Z would make the quantile of a heavy-tailed ratio
several times noisier (with 9 df and 100 models, about eight times the draws for the same
precision).
Contrasts with zero variance are left out of the maximum (with a ``WinrateWarning``);
their difference is known exactly, so a nonzero one
is declared significant. The Monte-Carlo SE of each critical value is half the distance
between the order statistics at ``n p -/+ sqrt(n p (1 - p))``, the +/-1 SD band of the
binomial count below the quantile (David & Nagaraja 2003, "Order Statistics", sec. 7.1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pandas as pd
from numba import njit, prange
from scipy import special

from winrate import notes
from winrate.constants import DEFAULT_DRAWS, RANK_METHODS
from winrate.errors import WinrateInputError, one_of
from winrate.parallel import sized_kernel
from winrate.variance.reference import (
    EMPTY_FAMILY,
    check_alpha,
    check_df,
    critical_value,
    quantile_with_se,
)

#: Default Monte-Carlo tolerance: draws are added until the MC SE of every critical value is
#: at most this fraction of it (module doc, "Draws"), up to ``n_draws``.
DEFAULT_MC_TOLERANCE = 0.002
#: Draws of the first round of an adaptive critical value.
FIRST_DRAWS = 10_000
#: Most contrast evaluations (draws times contrasts) one Monte-Carlo critical value may
#: spend; beyond it Bonferroni's (``_critical_values``). Set when they took about 5 s on
#: one core; the pair-entry kernel (:func:`_family_max`) spends 1.6e9 of them (300
#: models' marginal rank sets) in about 0.3 s on the development machine's two cores.
MC_WORK = 2_000_000_000
_ZERO_VAR_RTOL = 1e-12  # a contrast variance <= this * max(diag V) counts as zero
_NEG_EIG_RTOL = 1e-8  # eigenvalues below -this * max eigenvalue: cov is not PSD
_CHUNK_BYTES = 32 * 2**20


# --------------------------------------------------------------------------- validation


def _check_inputs(estimate, cov) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(est, V)`` as float arrays: 1-D finite estimate, symmetric (K, K) cov."""
    est = np.asarray(estimate, dtype=float)
    V = np.asarray(cov, dtype=float)
    if est.ndim != 1 or est.size == 0:
        raise WinrateInputError(f"estimate must be a non-empty 1-D array, got shape {est.shape}")
    if V.shape != (est.size, est.size):
        raise WinrateInputError(f"cov must have shape {(est.size,) * 2}, got {V.shape}")
    for name, arr in (("estimate", est), ("cov", V)):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            raise WinrateInputError(f"{name} has non-finite entries, first at {bad[0].tolist()}")
    asym = np.abs(V - V.T).max()
    if asym > 1e-10 * max(np.abs(V).max(), np.finfo(float).tiny):
        raise WinrateInputError(f"cov is not symmetric (max |V - V^T| = {asym:.3g})")
    return est, (V + V.T) / 2


def _check_draws(n_draws: int, alpha: float) -> int:
    if int(n_draws) != n_draws or n_draws < 1000:
        raise WinrateInputError(f"n_draws must be an integer >= 1000, got {n_draws}")
    if n_draws * alpha < 200:
        notes.emit(notes.few_tail_draws(n_draws * alpha))
    return int(n_draws)


def _factor(V: np.ndarray) -> np.ndarray:
    """``F`` (K, r) with ``F F^T = V`` up to clipped round-off eigenvalues.

    ``V = U diag(lam) U^T``; eigenvalues below ``K eps max(lam)`` are set to zero and their
    columns dropped, so a singular ``V`` gives ``r < K``. Clearly negative eigenvalues mean
    the input is not a covariance and raise.
    """
    lam, U = np.linalg.eigh(V)
    top = max(lam.max(initial=0.0), 0.0)
    if lam.min() < -_NEG_EIG_RTOL * top or (top == 0 and lam.min() < 0):
        raise WinrateInputError(
            f"cov is not positive semi-definite (smallest eigenvalue {lam.min():.3g}, "
            f"largest {top:.3g}); repair it first, e.g. with winrate.variance.sandwich.repair_psd"
        )
    keep = lam > V.shape[0] * np.finfo(float).eps * top
    return U[:, keep] * np.sqrt(lam[keep])


def _warn_zero(zero: np.ndarray, what: str) -> None:
    if zero.any():
        notes.emit(notes.zero_variance(int(zero.sum()), what))


# ------------------------------------------------------------------ Monte-Carlo engine


_NO_HYPOTHESIS = -1e30  # start of every maximum: finite, so the kernel never meets inf;
# any maximum below EMPTY_FAMILY means an empty family
_TILE = 512  # draws per tile: a tile's draws and running maxima stay in cache


@njit(cache=True, inline="always")
def _tile_of(zt, out, i0, width):  # pragma: no cover - numba
    """Draws ``i0 .. i0 + width - 1`` of ``zt`` and their running maxima ``out`` as
    contiguous ``(rows, _TILE)`` and ``(families, _TILE)`` buffers."""
    z = np.empty((zt.shape[0], _TILE), np.float32)
    best = np.empty((out.shape[1], _TILE), np.float32)
    for r in range(zt.shape[0]):
        z[r, :width] = zt[r, i0:i0 + width]
    for h in range(out.shape[1]):
        for t in range(width):
            best[h, t] = out[i0 + t, h]
    return z, best


@sized_kernel(fastmath={"nnan", "ninf", "nsz"})  # finite values: max vectorises
def _family_max(zt, lo, hi, g1, u1, u2, g2, v1, v2, out):  # pragma: no cover - numba
    """For every pair entry p and draw i, with ``d = Z[lo_p] - Z[hi_p]`` of draw i:
    ``out[i, g1_p] = max(out[i, g1_p], max(u1_p d, u2_p d))`` and, where ``g2_p >= 0``,
    the same with ``g2_p, v1_p, v2_p``.

    ``u1 = -u2 = 1/sd`` gives ``|d|/sd``; ``u1 = u2 = +/-1/sd`` a one-sided statistic. An
    entry carries both contrasts of an unordered pair (``Z_a - Z_b`` and ``Z_b - Z_a``,
    the second with its weights negated, which is exact), so marginal rank sets evaluate
    each difference once for the two families it enters. ``zt`` holds the draws in
    columns, ``(K + 1, n)`` float32 (single precision moves the quantile by ~1e-7, far
    below its Monte-Carlo error). Tiles of :data:`_TILE` draws run in parallel; each tile
    copies its draws and its running maxima into contiguous buffers first (:func:`_tile_of`;
    reading rows ``n`` floats apart at every entry costs cache and TLB misses, ten times
    the arithmetic), and its innermost loops run over draws, one vectorised pass per
    entry. The maximum is exact, so the result does not depend on the order of the entries.
    """
    n = zt.shape[1]
    for tile in prange((n + _TILE - 1) // _TILE):
        i0 = tile * _TILE
        width = min(_TILE, n - i0)
        z, best = _tile_of(zt, out, i0, width)
        for p in range(lo.shape[0]):
            j, k, h, m = lo[p], hi[p], g1[p], g2[p]
            x1, x2 = np.float32(u1[p]), np.float32(u2[p])
            y1, y2 = np.float32(v1[p]), np.float32(v2[p])
            if m < 0:
                for t in range(width):
                    d = z[j, t] - z[k, t]
                    best[h, t] = max(best[h, t], max(x1 * d, x2 * d))
            else:
                for t in range(width):
                    d = z[j, t] - z[k, t]
                    best[h, t] = max(best[h, t], max(x1 * d, x2 * d))
                    best[m, t] = max(best[m, t], max(y1 * d, y2 * d))
        for t in range(width):
            out[i0 + t, :] = best[:, t]


@dataclass(frozen=True)
class _Family:
    """Contrast families as pair entries for :func:`_family_max`: entry p evaluates
    ``d = Z_lo - Z_hi`` (``lo < hi``) once, for family ``g1`` with weights ``(u1, u2)``
    and, where ``g2 >= 0``, for family ``g2`` with ``(v1, v2)``. Column K of the padded
    factor is identically zero, so ``hi = K`` encodes a single score ``Z_lo``."""

    lo: np.ndarray
    hi: np.ndarray
    g1: np.ndarray
    u1: np.ndarray
    u2: np.ndarray
    g2: np.ndarray
    v1: np.ndarray
    v2: np.ndarray
    n_groups: int

    @property
    def cells(self) -> int:
        """Contrast evaluations per draw (one per entry)."""
        return int(self.lo.size)

    def maxima_into(self, zt: np.ndarray, out: np.ndarray) -> None:
        """Each family's running maximum over the draws ``zt`` (:func:`_family_max`)."""
        kernel = _family_max.choose(zt.shape[1] * self.cells)[0]
        kernel(zt, self.lo, self.hi, self.g1, self.u1, self.u2, self.g2, self.v1, self.v2,
               out)


def _padded(F: np.ndarray) -> np.ndarray:
    """Factor with an extra zero row: ``Z_K = 0``."""
    return np.vstack([F, np.zeros((1, F.shape[1]))])


class _GaussianDraws:
    """Draws ``Z = F e``, ``e ~ N(0, I_r)``, of the padded factor ``F`` (:func:`_padded`),
    as float32 blocks ``(K + 1, m)`` with the draws in columns.

    ``e`` comes in chunks of ``chunk_size`` rows from one seeded stream, so the first n
    draws are the same however they were requested (all at once, in chunks of any size, or
    extended as the precision requires). With ``keep`` the blocks are kept, so a step-down
    reads the same draws at every step instead of making them again: at most
    ``4 (K + 1) n`` bytes, about 115 MB at worst (``n <=`` :data:`MC_WORK` over the
    ``K (K - 1) / 2`` contrasts of rank sets, and at most ``n_draws``).
    """

    def __init__(self, F, seed, chunk_size, keep: bool = False):
        self.Fp = _padded(F)
        self._rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        self._chunk = chunk_size or max(1000, _CHUNK_BYTES // (8 * max(self.Fp.shape)))
        self._keep = keep
        self._kept: list[np.ndarray] = []
        self.made = 0  # draws taken from the stream so far

    def blocks(self, start: int, stop: int):
        """Draws ``start .. stop - 1`` as consecutive blocks: the kept ones, then new ones.
        Without ``keep`` only new draws can be read (``start`` = ``made``)."""
        offset = 0
        for block in self._kept:
            lo, hi = max(start, offset), min(stop, offset + block.shape[1])
            if lo < hi:
                yield np.ascontiguousarray(block[:, lo - offset:hi - offset])
            offset += block.shape[1]
        while self.made < stop:
            e = self._rng.standard_normal((min(self._chunk, stop - self.made), self.Fp.shape[1]))
            block = (self.Fp @ e.T).astype(np.float32)
            self.made += block.shape[1]
            if self._keep:
                self._kept.append(block)
            yield block


class _MaxDraws:
    """Draws of each family's maximum standardised Gaussian contrast over the draws of a
    :class:`_GaussianDraws`, extended on demand. The t reference is applied to these maxima
    afterwards (:func:`_quantiles`)."""

    def __init__(self, gaussian: _GaussianDraws, fam: _Family):
        self._gaussian, self._fam = gaussian, fam
        self.draws = np.empty((0, fam.n_groups), np.float32)  # float32: half the memory

    def extend(self, n_draws: int) -> np.ndarray:
        """The first ``n_draws`` draws, ``(n_draws, n_groups)``."""
        fam, have = self._fam, self.draws.shape[0]
        if n_draws <= have:
            return self.draws[:n_draws]
        out = np.full((n_draws - have, fam.n_groups), _NO_HYPOTHESIS, dtype=np.float32)
        start = 0
        for zt in self._gaussian.blocks(have, n_draws):
            stop = start + zt.shape[1]
            fam.maxima_into(zt, out[start:stop])
            start = stop
        self.draws = np.concatenate([self.draws, out])
        return self.draws


#: Nodes of the midpoint rule over the chi scale of the t reference (module doc).
_T_NODES = 256


@lru_cache(maxsize=64)
def _chi_scale_nodes(df: float) -> np.ndarray:
    """Midpoint quantiles ``s_j = F^{-1}((j - 1/2) / m)``, j = 1..m (ascending), of
    ``S = sqrt(W / df)``, ``W ~ chi2(df)`` (cached by df, read-only: 256 ``chdtri`` calls
    cost more than the quantile search that uses them)."""
    upper = 1 - (np.arange(_T_NODES) + 0.5) / _T_NODES  # chdtri inverts the upper tail
    nodes = np.sqrt(special.chdtri(df, upper) / df)
    nodes.setflags(write=False)
    return nodes


@njit(cache=True)
def _t_count(sorted_max, c, nodes, low, high, at):  # pragma: no cover - numba
    """``sum_j #{i: M_i <= c s_j}`` over one family's ascending maxima M, each node's count
    ``at[j]`` searched only between bounds known to hold it, ``low[j] <= at[j] <= high[j]``
    (the counts at a smaller and a larger c: ``c s_j`` grows with c)."""
    inside = 0
    for j in range(nodes.size):
        at[j] = low[j]
        if high[j] > low[j]:  # else the count is known: no search
            at[j] += np.searchsorted(sorted_max[low[j]:high[j]], c * nodes[j], side="right")
        inside += at[j]
    return inside


@njit(cache=True)
def _t_cdf(sorted_max, c, nodes):  # pragma: no cover - numba
    """``P(M / S <= c) = mean_j P(M <= c s_j)`` from one family's sorted Gaussian maxima M
    (the counts summed exactly, then divided as a float mean would be)."""
    low, high = np.zeros(nodes.size, np.int64), np.full(nodes.size, sorted_max.size)
    inside = _t_count(sorted_max, c, nodes, low, high, np.empty_like(low))
    return inside / nodes.size / sorted_max.size


@njit(cache=True)
def _per_draw_sd(m, c, nodes):  # pragma: no cover - numba
    """SD of the per-draw probabilities ``P(S >= M_i / c) = 1 - #{j: s_j < M_i / c} / m``
    over one family's ascending maxima, in one pass (Welford 1962, Technometrics 4(3))."""
    above = 1 - np.arange(nodes.size + 1) / nodes.size  # P(S >= M_i / c) with k nodes below
    k, mean, squares = 0, 0.0, 0.0
    for i in range(m.size):
        while k < nodes.size and nodes[k] < m[i] / c:
            k += 1
        step = above[k] - mean
        mean += step / (i + 1)
        squares += step * (above[k] - mean)
    return np.sqrt(squares / m.size)


@sized_kernel
def _t_bisection(sorted_max, alpha, nodes, out):  # pragma: no cover - numba
    """Per family (rows of ascending maxima), ``out[g] = (c, cdf(0.99 c), cdf(1.01 c),
    sd)``: c the smallest value where ``P(M / S <= c) >= 1 - alpha``, by bisection to a
    relative width of 1e-9 (far below the MC error), and sd that of the per-draw
    probabilities at c (:func:`_per_draw_sd`); NaN for an empty family. Each step keeps
    the per-node counts at ``lo`` and ``hi`` as the bounds of the next step's searches
    (:func:`_t_count`), so later steps search a few draws instead of all of them."""
    for g in prange(sorted_max.shape[0]):
        m = sorted_max[g]
        if m[-1] < EMPTY_FAMILY:
            out[g, :] = np.nan
            continue
        lo, hi = 0.0, max(m[-1], 1.0) / nodes[0] * 2
        at_lo, at_hi = np.zeros(nodes.size, np.int64), np.full(nodes.size, m.size)
        at = np.empty_like(at_lo)
        while hi - lo > 1e-9 * hi:
            mid = (lo + hi) / 2
            if _t_count(m, mid, nodes, at_lo, at_hi, at) / nodes.size / m.size < 1 - alpha:
                lo = mid
                at_lo[:] = at
            else:
                hi = mid
                at_hi[:] = at
        out[g, 0] = hi
        out[g, 1] = _t_cdf(m, 0.99 * hi, nodes)
        out[g, 2] = _t_cdf(m, 1.01 * hi, nodes)
        out[g, 3] = _per_draw_sd(m, hi, nodes)


def _t_quantiles_with_se(sorted_max: np.ndarray, alpha: float, nodes: np.ndarray):
    """Per family (rows of ascending Gaussian maxima M), the ``1 - alpha`` quantile c of
    ``M / S`` and its MC SE by the delta method (:func:`_t_bisection`): the SD of the
    per-draw probabilities ``P(S >= M_i / c)`` over ``sqrt(n)``, divided by the slope of
    the CDF at c. NaN for a family with no positive-variance contrast."""
    n_fam, n = sorted_max.shape
    found = np.empty((n_fam, 4))
    # work: about 40 bisection steps (to 1e-9), each a binary search per node
    kernel = _t_bisection.choose(n_fam * 40 * nodes.size * np.log2(n + 1))[0]
    kernel(sorted_max, alpha, nodes, found)
    c, below, above, sd = found.T
    with np.errstate(invalid="ignore"):
        slope = (above - below) / (0.02 * c)
        se = np.where(slope > 0, sd / np.sqrt(n) / slope, np.inf)
    return c, np.where(np.isnan(c), np.nan, se)


def _quantiles(draws: np.ndarray, alpha: float, df) -> tuple[np.ndarray, np.ndarray]:
    """Each family's critical value and MC SE from its Gaussian maxima: the order statistic
    (normal reference), or with ``df`` the quantile of ``M / S`` with the chi scale S
    integrated out (module doc, conditional Monte Carlo)."""
    if df is None:
        return quantile_with_se(draws, alpha)
    # float32 maxima: every comparison and quotient in the kernels is made in float64
    return _t_quantiles_with_se(np.sort(draws.T, axis=1), alpha, _chi_scale_nodes(df))


def _family(Fp, a, b, sign, group, n_groups) -> _Family:
    """Pair entries (:class:`_Family`) for contrast rows ``Z_a - Z_b`` (``b = -1``:
    ``Z_a``) with ``sign`` 0 (two-sided), +1 (``T``) or -1 (``-T``); ``group`` numbers the
    families. ``T = max(w1 d, w2 d)`` with ``d = Z_a - Z_b`` and ``(w1, w2)`` = ``(w,
    -w)``, ``(w, w)`` or ``(-w, -w)``, ``w = 1 / sd(d)``; a row with ``a > b`` is written
    on ``Z_b - Z_a = -d`` with its weights negated, and two rows on one pair share an
    entry."""
    K = Fp.shape[0] - 1
    b = np.where(b < 0, K, b)  # Z_a - 0: the zero column
    diff = Fp[a] - Fp[b]
    w = 1 / np.sqrt(np.einsum("ij,ij->i", diff, diff))
    flip = np.where(a > b, -1.0, 1.0)
    w1, w2 = flip * np.where(sign < 0, -w, w), flip * np.where(sign > 0, w, -w)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.argsort(lo * (K + 1) + hi, kind="stable")
    lo, hi, group, w1, w2 = lo[order], hi[order], group[order], w1[order], w2[order]
    starts = np.flatnonzero(np.r_[True, (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])])
    place = np.arange(lo.size) - np.repeat(starts, np.diff(np.r_[starts, lo.size]))
    opens = place % 2 == 0  # rows 0, 2, .. of a pair's rows open an entry
    joins = ~opens  # rows 1, 3, .. join the entry the row before them opened
    entry = np.cumsum(opens) - 1
    g2, v1, v2 = np.full(opens.sum(), -1), np.zeros(opens.sum()), np.zeros(opens.sum())
    g2[entry[joins]], v1[entry[joins]], v2[entry[joins]] = group[joins], w1[joins], w2[joins]
    return _Family(lo[opens], hi[opens], group[opens], w1[opens], w2[opens], g2, v1, v2,
                   n_groups)


@dataclass(frozen=True)
class _MC:
    """Monte-Carlo settings: at most ``n_draws`` draws, fewer once every critical value's
    MC SE is at most ``tolerance`` times the critical value (None: exactly ``n_draws``)."""

    n_draws: int
    seed: int | None
    chunk_size: int | None
    tolerance: float | None = DEFAULT_MC_TOLERANCE
    analytic: bool = False  # Bonferroni critical values (over the work budget)

    def first_round(self, alpha: float) -> int:
        """Draws of the first round: :data:`FIRST_DRAWS`, and at least 200 beyond the
        quantile (``200 / alpha``), at most ``n_draws``."""
        if self.tolerance is None:
            return self.n_draws
        return min(self.n_draws, max(FIRST_DRAWS, int(np.ceil(200 / alpha))))


def _next_round(n: int, worst: float, tolerance: float) -> int:
    """Draws for the next round: the MC SE falls as ``1 / sqrt(n)``, so about
    ``n (worst / tolerance)^2`` for the worst relative SE, with 10% to spare, at least 25%
    more, in thousands."""
    wanted = max(1.25, 1.1 * (worst / tolerance) ** 2) * n
    return int(np.ceil(wanted / 1000) * 1000)


def _critical_values(gaussian: _GaussianDraws, a, b, sign, group, n_groups, alpha, df,
                     mc: _MC, keep_draws=False):
    """Critical value and MC SE of each family (NaN for an empty family), the sorted
    Gaussian maxima of family 0 (``keep_draws``) and the number of draws used.

    Draws are added in rounds (:class:`_MaxDraws` over the ``gaussian`` draws) until every
    family's MC SE is at most ``mc.tolerance`` times its critical value or ``mc.n_draws``
    are used, and at most :data:`MC_WORK` contrast evaluations are spent: draws times
    contrasts, each draw evaluating every contrast. When even the first round would
    exceed it (the K(K - 1) contrasts of marginal rank sets of 1,000 models), or
    ``mc.analytic``, the critical values are Bonferroni's (:func:`_bonferroni`), no draws
    are made (0 draws used)."""
    budget = MC_WORK // max(a.size, 1)
    if mc.analytic or budget < mc.first_round(alpha):
        if not mc.analytic:
            notes.emit(notes.bonferroni_fallback(a.size, MC_WORK))
        return _bonferroni(sign, group, n_groups, alpha, df), np.zeros(n_groups), None, 0
    mc = replace(mc, n_draws=min(mc.n_draws, budget))
    maxima = _MaxDraws(gaussian, _family(gaussian.Fp, a, b, sign, group, n_groups))
    n = mc.first_round(alpha)
    while True:
        draws = maxima.extend(n)
        crit, se = _quantiles(draws, alpha, df)
        with np.errstate(divide="ignore", invalid="ignore"):
            worst = float(np.nanmax(se / np.abs(crit), initial=0.0))
        if mc.tolerance is None or n >= mc.n_draws or not worst > mc.tolerance:
            return crit, se, (np.sort(draws[:, 0]) if keep_draws else None), n
        n = min(mc.n_draws, _next_round(n, worst, mc.tolerance))


def _bonferroni(sign, group, n_groups, alpha, df) -> np.ndarray:
    """Bonferroni critical value of each family: with ``m`` one-sided hypotheses (a
    two-sided ``|T|`` counts as two), ``q_{1 - alpha / m}`` of the normal (or t(df)), so
    that ``P(any T_h > c) <= m alpha / m = alpha`` whatever the correlation (the union
    bound; conservative where the max-T quantile would be smaller). NaN for an empty
    family."""
    m = np.bincount(group, weights=np.where(sign == 0, 2.0, 1.0), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(m > 0, 1.0 - alpha / m, np.nan)
    return special.ndtri(p) if df is None else special.stdtrit(df, p)


def _two_sided_family(F, a, b, alpha, df, mc: _MC):
    """One two-sided family: critical value, MC SE and the sorted simulated maxima."""
    zeros = np.zeros(a.size, int)
    return _critical_values(_GaussianDraws(F, mc.seed, mc.chunk_size), a, b, zeros, zeros, 1,
                            alpha, df, mc, keep_draws=True)


def _max_t_pvalues(sorted_max: np.ndarray, stat: np.ndarray, df=None) -> np.ndarray:
    """Single-step max-T adjusted p-value ``P(max_h |T_h| >= |t|)`` (Westfall & Young 1993,
    "Resampling-Based Multiple Testing", ch. 2), estimated from the simulated Gaussian
    maxima M: the share of draws with ``M >= |t|``, or with ``df`` the mean over the chi
    scale nodes of the share with ``M >= |t| s_j`` (module doc).

    ``max |T| >= 0``, so the maxima are clamped at 0: a family whose contrasts all have zero
    variance (every simulated maximum is the ``_NO_HYPOTHESIS`` sentinel) gives p = 1 for a
    zero difference and p = 0 for a nonzero (exact) one."""
    n = sorted_max.size
    clamped = np.maximum(sorted_max, 0.0)  # monotone: stays sorted
    thresholds = np.abs(stat) if df is None else np.multiply.outer(np.abs(stat),
                                                                   _chi_scale_nodes(df))
    beyond = (n - np.searchsorted(clamped, thresholds, side="left")) / n
    return beyond if df is None else beyond.mean(axis=-1)


# ------------------------------------------------------------------ marginal intervals


@dataclass(frozen=True, eq=False)
class WaldIntervals:
    """Marginal Wald intervals ``estimate +/- crit * se``.

    Attributes: ``estimate``, ``se``, ``low``, ``high``, ``critical_value``, ``alpha``,
    ``df`` (None for the normal reference distribution). ``df`` and ``critical_value`` are
    arrays when each estimate has its own df.
    """

    estimate: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_value: float | np.ndarray
    alpha: float
    df: float | np.ndarray | None


def wald_intervals(estimate, cov, alpha: float = 0.05, df=None) -> WaldIntervals:
    """Marginal Wald intervals ``theta_a +/- q * sqrt(V_aa)``.

    ``q`` is the normal quantile ``z_{1-alpha/2}``, or ``t_{G-1, 1-alpha/2}`` when
    ``df = G - 1`` is given (the few-cluster reference of Cameron & Miller 2015, sec. VI.C),
    or ``t_{df_a, 1-alpha/2}`` per estimate when ``df`` is an array.
    """
    est = np.asarray(estimate, dtype=float)
    var = np.diag(np.asarray(cov, dtype=float))
    if var.shape != est.shape:
        raise WinrateInputError(f"cov diagonal has shape {var.shape}, estimate has {est.shape}")
    se = np.sqrt(np.clip(var, 0.0, None))  # non-finite entries propagate, as callers expect
    crit = critical_value(alpha, df)
    return WaldIntervals(est, se, est - crit * se, est + crit * se, crit, alpha, check_df(df))


# -------------------------------------------------------------- simultaneous intervals


@dataclass(frozen=True, eq=False)
class SimultaneousIntervals:
    """Intervals ``estimate +/- c * se`` covering all K scores jointly with prob. 1 - alpha.

    ``critical_value`` is the MC quantile ``c`` of ``max_a |T_a|``, ``mc_se`` its
    Monte-Carlo SE from ``n_draws`` draws (adaptive: module doc, "Draws"; ``mc_tolerance``
    the target SE relative to c, None for a fixed number); ``p_adjusted`` are single-step
    max-T adjusted p-values of ``S_a = 0``.
    """

    estimate: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_adjusted: np.ndarray
    critical_value: float
    mc_se: float
    alpha: float
    df: float | None
    n_draws: int
    mc_tolerance: float | None = None


def _setup(estimate, cov, alpha, df, n_draws, seed, chunk_size, tolerance):
    est, V = _check_inputs(estimate, cov)
    alpha, df = check_alpha(alpha), check_df(df)
    if seed is None:  # draw fresh entropy once, so every step-down step uses the same draws
        seed = np.random.SeedSequence().entropy
    if tolerance is not None and not (np.isfinite(tolerance) and tolerance > 0):
        raise WinrateInputError(f"mc_tolerance must be a positive number or None, got "
                                f"{tolerance}")
    mc = _MC(_check_draws(n_draws, alpha), seed, chunk_size, tolerance)
    return est, V, _factor(V), alpha, df, mc


def simultaneous_intervals(
    estimate,
    cov,
    alpha: float = 0.05,
    df: float | None = None,
    *,
    n_draws: int = DEFAULT_DRAWS,
    seed: int | None = 0,
    chunk_size: int | None = None,
    mc_tolerance: float | None = DEFAULT_MC_TOLERANCE,
) -> SimultaneousIntervals:
    """Simultaneous intervals ``S_a +/- c sqrt(V_aa)`` for all a.

    ``c`` is the ``1 - alpha`` quantile of ``max_a |Z_a|``, ``Z ~ N(0, R)`` with ``R`` the
    correlation of ``V`` (or of the multivariate t with ``df``): the single-step max-T
    construction (Hothorn, Bretz & Westfall 2008, "Simultaneous Inference in General
    Parametric Models", Biometrical Journal 50). For independent scores it is Sidak's
    ``z_{(1 + (1 - alpha)^(1/K)) / 2}``.
    """
    est, V, F, alpha, df, mc = _setup(estimate, cov, alpha, df, n_draws, seed, chunk_size,
                                      mc_tolerance)
    se = np.sqrt(np.clip(np.diag(V), 0.0, None))
    zero = _zero_pairs(V, se)
    _warn_zero(zero, "scores")
    rows = np.flatnonzero(~zero)
    crit, mc_se, sorted_max, used = _two_sided_family(F, rows, np.full(rows.size, -1), alpha,
                                                      df, mc)
    stat = _pair_stat(est, se, zero)
    p_adj = (_max_t_pvalues(sorted_max, stat, df) if sorted_max is not None
             else np.minimum(1.0, _two_sided_p(stat, df) * max(rows.size, 1)))
    c = _within_exact_bounds(float(crit[0]), rows.size, alpha, df, used)
    half = np.where(zero, 0.0, c * se)
    return SimultaneousIntervals(
        est, se, est - half, est + half, p_adj, c, float(mc_se[0]), alpha, df, used,
        mc.tolerance,
    )


def _two_sided_p(stat, df=None) -> np.ndarray:
    """Two-sided p-value: normal or t(df) survival function (scipy.stats' evaluations)."""
    return 2 * (special.ndtr(-np.abs(stat)) if df is None else special.stdtr(df, -np.abs(stat)))


def _within_exact_bounds(c: float, m: int, alpha: float, df, n_draws: int) -> float:
    """The Monte-Carlo quantile ``c`` of ``max`` of ``m`` two-sided ``|T|`` kept within
    its exact bounds: at least the marginal ``q_{1-alpha/2}`` (the maximum is at least any
    one ``|T|``) and at most Bonferroni's ``q_{1-alpha/(2m)}`` (the union bound). When
    fewer than 200 draws lie beyond the quantile (``n_draws * alpha < 200``, e.g. alpha
    = 1e-6) the order statistic cannot resolve it and the Bonferroni value is used: in
    that far tail the union bound is nearly exact (the events rarely overlap), and it is
    conservative."""
    if m == 0 or not np.isfinite(c):
        return c
    marginal = critical_value(alpha, df)
    bonferroni = critical_value(alpha / m, df)
    if n_draws * alpha < 200:
        return float(bonferroni)
    return float(np.clip(c, marginal, bonferroni))


# ---------------------------------------------------------------- pairwise differences


def holm(p_values) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values.

    With ``p_(1) <= ... <= p_(m)``: ``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``
    (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J.
    Statist. 6, 65-70; adjusted form as in Wright 1992, "Adjusted P-values for simultaneous
    inference", Biometrics 48).
    """
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = p.size
    adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty_like(p)
    out[order] = adj
    return out


def _pair_se(V, a, b) -> np.ndarray:
    """``SE(S_a - S_b) = sqrt(V_aa + V_bb - 2 V_ab)`` (the diagonal of ``L V L^T``)."""
    var = V[a, a] + V[b, b] - 2 * V[a, b]
    return np.sqrt(np.clip(var, 0.0, None))


def _pair_stat(d, se, zero) -> np.ndarray:
    """``d / se``; a zero-variance contrast is exact: ``+/-inf`` if nonzero, else 0."""
    exact = np.where(d == 0, 0.0, np.copysign(np.inf, d))
    return np.divide(d, se, out=exact, where=~zero)


def _zero_pairs(V, se) -> np.ndarray:
    """Contrasts (or scores) whose variance ``se**2`` is zero relative to ``max(diag V)``."""
    return se**2 <= _ZERO_VAR_RTOL * np.diag(V).max(initial=0.0)


@dataclass(frozen=True, eq=False)
class PairwiseDifferences:
    """All differences ``S_i - S_j`` over unordered pairs ``i < j`` (``np.triu_indices``).

    ``p_value``: marginal two-sided (normal or t(df)); ``p_holm``: Holm-adjusted;
    ``p_max_t``: single-step max-T adjusted. ``low``/``high``: simultaneous intervals
    over all pairs with critical value ``critical_value`` (MC SE ``mc_se`` from
    ``n_draws`` draws, target ``mc_tolerance`` relative to it).
    """

    i: np.ndarray
    j: np.ndarray
    estimate: np.ndarray
    se: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray
    p_max_t: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_value: float
    mc_se: float
    alpha: float
    df: float | None
    n_draws: int
    mc_tolerance: float | None = None

    @classmethod
    def none(cls, alpha: float, df=None) -> PairwiseDifferences:
        """No pair: when no model has an estimable score (e.g. every comparison a tie)."""
        empty, index = np.zeros(0), np.zeros(0, dtype=np.int64)
        return cls(index, index, *([empty] * 8), np.nan, np.nan, alpha, df, 0)

    def to_frame(self, names=None) -> pd.DataFrame:
        """One row per pair; ``names`` (length K) labels the models."""
        first, second = self.i, self.j
        if names is not None:
            labels = np.asarray(names)
            first, second = labels[first], labels[second]
        cols = ("estimate", "se", "statistic", "p_value", "p_holm", "p_max_t", "low", "high")
        return pd.DataFrame({"i": first, "j": second} | {c: getattr(self, c) for c in cols})


def pairwise_differences(
    estimate,
    cov,
    alpha: float = 0.05,
    df: float | None = None,
    *,
    n_draws: int = DEFAULT_DRAWS,
    seed: int | None = 0,
    chunk_size: int | None = None,
    mc_tolerance: float | None = DEFAULT_MC_TOLERANCE,
) -> PairwiseDifferences:
    """All pairwise differences ``S_i - S_j`` with marginal and simultaneous inference.

    ``SE_ij = sqrt(V_ii + V_jj - 2 V_ij)``; ``T_ij = (S_i - S_j) / SE_ij``; marginal
    p-values ``2 P(N(0,1) > |T|)`` or with t(df). Simultaneous intervals use the
    ``1 - alpha`` quantile of ``max_{i<j} |T_ij|`` under ``Z ~ N(0, V)`` (the contrast
    correlation ``L V L^T`` implicitly), i.e. Tukey's studentized range / sqrt(2) for
    equicorrelated equal-variance scores (Tukey's all-pairs comparisons; Hothorn, Bretz &
    Westfall 2008).
    """
    est, V, F, alpha, df, mc = _setup(estimate, cov, alpha, df, n_draws, seed, chunk_size,
                                      mc_tolerance)
    i, j = np.triu_indices(est.size, 1)
    d, se = est[i] - est[j], _pair_se(V, i, j)
    zero = _zero_pairs(V, se)
    _warn_zero(zero, "pairwise differences")
    stat = _pair_stat(d, se, zero)
    p = _two_sided_p(stat, df)
    crit, mc_se, sorted_max, used = _two_sided_family(F, i[~zero], j[~zero], alpha, df, mc)
    c = float(crit[0])
    half = np.where(zero, 0.0, c * se)
    p_max_t = (_max_t_pvalues(sorted_max, stat, df) if sorted_max is not None
               else np.minimum(1.0, p * max(int((~zero).sum()), 1)))  # Bonferroni's
    return PairwiseDifferences(
        i,
        j,
        d,
        se,
        stat,
        p,
        holm(p),
        p_max_t,
        d - half,
        d + half,
        c,
        float(mc_se[0]),
        alpha,
        df,
        used,
        mc.tolerance,
    )


# ------------------------------------------------------------------------- rank sets


@dataclass(frozen=True, eq=False)
class RankSets:
    """Confidence sets ``{low_j, ..., high_j}`` for the rank of each model (1 = best).

    ``method``: "marginal" (each set covers its own rank with prob. >= 1 - alpha) or
    "simultaneous" (all sets jointly). ``critical_value``: per-model final critical value
    (marginal) or the common one (repeated); ``mc_se`` its Monte-Carlo SE; ``n_steps``
    the number of step-down iterations (1 = single step); ``n_draws`` the draws used at
    every step (chosen by the first step to meet ``mc_tolerance``; module doc, "Draws").
    """

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    method: str
    stepdown: bool
    critical_value: np.ndarray
    mc_se: np.ndarray
    n_steps: int
    alpha: float
    df: float | None
    n_draws: int
    mc_tolerance: float | None = None

    def to_frame(self, names=None) -> pd.DataFrame:
        """One row per model: estimate, rank of the estimate, rank set bounds."""
        rank = 1 + (self.estimate[None, :] > self.estimate[:, None]).sum(axis=1)
        index = None if names is None else pd.Index(names, name="model")
        data = {"estimate": self.estimate, "rank": rank, "low": self.low, "high": self.high}
        return pd.DataFrame(data, index=index)


def _rank_rows(K: int, method: str, within: np.ndarray | None = None):
    """Contrast rows ``S_a - S_b`` and their family.

    marginal: rows ``(j, k)`` for all ``k != j`` in family ``j``; simultaneous: unordered
    pairs ``a < b``, one family. ``within`` (K,): each model's group; only pairs of one
    group are contrasted (ranks within each group, :func:`rank_sets`).
    """
    if method == "marginal":
        a, b = np.nonzero(~np.eye(K, dtype=bool))
        group, n_groups = a, K
    else:
        a, b = np.triu_indices(K, 1)
        group, n_groups = np.zeros(a.size, int), 1
    if within is None:
        return a, b, group, n_groups
    same = within[a] == within[b]
    return a[same], b[same], group[same], n_groups


def _stepdown_rejections(stat, zero, rows, alpha, df, F, mc, stepdown):
    """Romano-Wolf step-down over one-sided hypotheses ``S_a <= S_b`` ("up", rejected when
    ``T > c``) and ``S_a >= S_b`` ("down", ``T < -c``) of every row.

    Step s computes each family's critical value ``c_s`` as the ``1 - alpha`` quantile of
    the maximum over its *not yet rejected* one-sided hypotheses (two-sided ``|T|`` when
    neither side is rejected), rejects every hypothesis whose statistic exceeds ``c_s``,
    and repeats until nothing new is rejected (Romano & Wolf 2005, "Exact and approximate
    stepdown methods for multiple hypothesis testing", JASA 100; the stepwise improvement
    of Mogstad et al. 2024). Once ``S_a > S_b`` is established the opposite one-sided
    hypothesis stays in the family, as the step-down requires. The same draws (the first
    step's, as many as it chose to meet the tolerance, made once and kept) are used at
    every step, so ``c_s`` is non-increasing and the result is contained in the single-step
    one.
    Returns ``(up, down, crit, mc_se, n_steps, n_draws)``.
    """
    a, b, group, n_groups = rows
    up, down = np.zeros(a.size, bool), np.zeros(a.size, bool)
    crit, mc_se = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    redo = np.ones(n_groups, bool)  # families whose hypothesis set changed
    gaussian = _GaussianDraws(F, mc.seed, mc.chunk_size, keep=stepdown)
    n_steps = 0
    while True:
        n_steps += 1
        sel = ~zero & ~(up & down) & redo[group]
        sign = np.where(up, -1.0, np.where(down, 1.0, 0.0))[sel]
        fams = np.flatnonzero(redo)
        code = np.searchsorted(fams, group[sel])
        fresh = _critical_values(gaussian, a[sel], b[sel], sign, code, fams.size, alpha, df,
                                 mc)
        # c >= 0: at alpha near 1 the quantile of a one-sided maximum can fall below 0,
        # and a negative c would reject both S_a <= S_b and S_a >= S_b (low > high)
        crit[fams], mc_se[fams] = np.maximum(fresh[0], 0.0), fresh[1]
        # later steps: the same draws (or Bonferroni again, if the first step used it)
        mc = replace(mc, n_draws=fresh[3] or mc.n_draws, tolerance=None,
                     analytic=fresh[3] == 0)
        c = crit[group]
        new_up = ~up & ((stat > c) | (zero & (stat > 0)))
        new_down = ~down & ((stat < -c) | (zero & (stat < 0)))
        up, down = up | new_up, down | new_down
        redo = np.bincount(group[new_up | new_down], minlength=n_groups) > 0
        if not stepdown or not redo.any():
            return up, down, crit, mc_se, n_steps, 0 if mc.analytic else mc.n_draws


def _rank_bounds(K, rows, up, down, method, size=None):
    """``low_j = 1 + #{k: S_k > S_j shown}``, ``high_j = n_j - #{k: S_k < S_j shown}``,
    ``n_j`` the models ranked with j (``size``; None: all K)."""
    a, b = rows[:2]
    wins = np.bincount(a[up], minlength=K)
    losses = np.bincount(a[down], minlength=K)
    if method == "simultaneous":
        wins = wins + np.bincount(b[down], minlength=K)
        losses = losses + np.bincount(b[up], minlength=K)
    return 1 + losses, (K if size is None else size) - wins


def rank_sets(
    estimate,
    cov,
    alpha: float = 0.05,
    df: float | None = None,
    *,
    method: str = "marginal",
    stepdown: bool = True,
    n_draws: int = DEFAULT_DRAWS,
    seed: int | None = 0,
    chunk_size: int | None = None,
    mc_tolerance: float | None = DEFAULT_MC_TOLERANCE,
    within=None,
) -> RankSets:
    """Confidence sets for ranks (Mogstad, Romano, Shaikh & Wilhelm 2024, "Inference for
    Ranks with Applications to Mobility across Neighbourhoods and Academic Achievement
    across Countries", Review of Economic Studies 91(1), 2024; doi:10.1093/restud/rdad006.
    Section names below, not numbers: they differ between working-paper and journal).

    Rank ``r_j = 1 + #{k: S_k > S_j}``. With ``T_jk = (S_j - S_k) / SE_jk``, a family of
    one-sided tests of ``S_j <= S_k`` / ``S_j >= S_k`` at familywise level alpha gives

        low_j  = 1 + #{k: S_k > S_j established},  high_j = K - #{k: S_k < S_j established}.

    * ``"marginal"`` (their marginal confidence sets): family j is the 2(K - 1) hypotheses about
      ``S_j - S_k``, k != j; single-step critical value = quantile of
      ``max_{k != j} |T_jk|``. ``P(r_j in [low_j, high_j]) >= 1 - alpha`` for each j.
    * ``"simultaneous"`` (their simultaneous confidence sets): one family of all K(K - 1)
      one-sided hypotheses, single-step critical value = quantile of
      ``max_{j<k} |T_jk|``; all sets hold jointly.

    ``stepdown=True`` applies their stepwise improvement (see ``_stepdown_rejections``).
    The rank of the point estimate always lies in its set.

    ``within`` (K,) labels each estimate's group (the category of a family of boards,
    :mod:`winrate.inference.family`): ranks are then within each group (``r_j = 1 + #{k in
    group(j): S_k > S_j}``) and only contrasts within a group enter the families; with
    ``"simultaneous"`` one maximum over the contrasts of every group, so all groups' sets
    hold jointly (the union of the groups' hypotheses is one family, Romano & Wolf 2005).
    """
    if method not in RANK_METHODS:
        raise WinrateInputError(f"method must be one of {one_of(RANK_METHODS)}, got {method!r}")
    est, V, F, alpha, df, mc = _setup(estimate, cov, alpha, df, n_draws, seed, chunk_size,
                                      mc_tolerance)
    size = None
    if within is not None:
        within = np.unique(np.asarray(within), return_inverse=True)[1].reshape(-1)
        size = np.bincount(within)[within]
    rows = _rank_rows(est.size, method, within)
    a, b = rows[:2]
    se = _pair_se(V, a, b)
    zero = _zero_pairs(V, se)
    _warn_zero(zero if method == "simultaneous" else zero & (a < b), "pairwise differences")
    stat = _pair_stat(est[a] - est[b], se, zero)
    up, down, crit, mc_se, n_steps, used = _stepdown_rejections(
        stat, zero, rows, alpha, df, F, mc, stepdown
    )
    low, high = _rank_bounds(est.size, rows, up, down, method, size)
    crit, mc_se = (np.broadcast_to(x, est.shape).copy() for x in (crit, mc_se))
    return RankSets(est, low, high, method, stepdown, crit, mc_se, n_steps, alpha, df, used,
                    mc.tolerance)


@dataclass(frozen=True, eq=False)
class TauBest:
    """Confidence set for the tau-best models: ``P({j: r_j <= tau} subset of selected)
    >= 1 - alpha``. ``selected`` is a boolean mask over models, ``indices`` its positions;
    ``rank_low`` the simultaneous lower rank bounds it was read from."""

    selected: np.ndarray
    indices: np.ndarray
    tau: int
    rank_low: np.ndarray
    alpha: float
    df: float | None


def tau_best(
    estimate,
    cov,
    tau: int,
    alpha: float = 0.05,
    df: float | None = None,
    *,
    stepdown: bool = True,
    n_draws: int = DEFAULT_DRAWS,
    seed: int | None = 0,
    chunk_size: int | None = None,
    mc_tolerance: float | None = DEFAULT_MC_TOLERANCE,
) -> TauBest:
    """Models that could be among the true top ``tau``: the projection confidence set for the
    tau-best of Mogstad et al. (2024).

    Rule: keep j unless at least ``tau`` models are shown to beat it, i.e. keep
    ``{j: low_j <= tau}`` with ``low_j`` the lower bounds of a simultaneous one-sided family
    testing ``S_k <= S_j`` for all ordered pairs ``k != j``. A true tau-best model is beaten
    by at most ``tau - 1`` others, so dropping it needs a false rejection: probability
    <= alpha. The one-sided family over all ordered pairs has the same statistics as the
    two-sided family over unordered pairs (``T_kj = -T_jk``), so the single-step critical
    value is the quantile of ``max_{j<k} |T_jk|`` and ``low_j`` equals the simultaneous
    ``rank_sets`` lower bound (with the same step-down refinement).
    """
    K = _check_inputs(estimate, cov)[0].size
    if int(tau) != tau or not 1 <= tau <= K:
        raise WinrateInputError(f"tau must be an integer in [1, {K}], got {tau}")
    sets = rank_sets(
        estimate,
        cov,
        alpha,
        df,
        method="simultaneous",
        stepdown=stepdown,
        n_draws=n_draws,
        seed=seed,
        chunk_size=chunk_size,
        mc_tolerance=mc_tolerance,
    )
    selected = sets.low <= tau
    return TauBest(selected, np.flatnonzero(selected), int(tau), sets.low, sets.alpha, sets.df)

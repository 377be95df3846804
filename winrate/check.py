"""The coverage of an analysis' intervals on the user's own design (``winrate check``).

``result.check_coverage(reps=200)`` (or ``winrate check LOG``) answers: on *this* log's
design -- its prompts, judges, model pairs and presentation order, row for row -- do the
intervals the analysis reported cover at their nominal level? It fits a simulation model to
the log, draws ``reps`` new outcome sets on the same rows, reruns the same analysis on each
and compares the intervals with the truth of the simulation model.

**Simulation model**: a crossed random-effects Bradley-Terry model with a tie threshold.
Row r compares models a (shown first) and b on prompt p by judge j::

    eta_r = theta_a - theta_b + (u_pa - u_pb) + (v_ja - v_jb)
    P(a wins) = expit(eta_r - kappa),  P(b wins) = expit(-eta_r - kappa),  a tie otherwise

with prompt x model effects ``u_pa ~ N(0, prompt_var)`` (model a's response to prompt p,
shared by all of its comparisons on p) and judge x model effects ``v_ja ~ N(0, judge_var)``
(judge j's taste for a), all independent; ``kappa`` is Rao and Kupper's (1967) tie
threshold (0 for a log without ties). In a *baseline design* (one model in every row,
as AlpacaEval's) each contestant answers a prompt once, so only the baseline's response is
shared by several rows and identified: the baseline's response alone carries the prompt x
model effect, the contestants' variation being part of the comparison noise (the same
variance for every response would cap the correlation of two contestants' outcomes on a
prompt at 1/2, below what AlpacaEval shows). A row of integer frequency f stands for f
comparisons with the row's prompt and judge: their wins, ties and losses are drawn
multinomially given the row's effects; a non-integer frequency is a weight and the row
gets one draw. Graded preferences are simulated as win / tie / loss (a note says so). Only
the prompt and judge axes carry effects; any other clustering axis is kept on the rows.

**Fit** (:func:`fit_simulation_model`), an indirect inference (Gourieroux, Monfort &
Renault 1993, J. Appl. Econometrics 8(S1)) with two auxiliary statistics:

1. *Abilities and tie threshold by maximum likelihood* of the marginal model (no random
   effects): Rao-Kupper's ``theta`` and ``kappa`` (``winrate.estimators.fit(log,
   "rao-kupper")``), or Bradley-Terry's ``theta`` (``fit(log, "bt")``) when the log has no
   ties, on the outcomes rounded to win / tie / loss. Where the MLE is not finite (a model
   never lost) a ridge prior of variance :data:`RIDGE_VARIANCE` keeps it finite (a note).
2. *Variance components by moments from the clustered meats.* With the half-tie residual
   ``e_r = s_r - h(eta_r)`` and slope ``h'_r`` at the marginal fit
   (``h(eta) = (1 + expit(eta - kappa) - expit(-eta - kappa)) / 2``) and
   ``z_r = e_a - e_b``, the score rows ``g_r = f_r e_r z_r`` have on axis X the cluster
   meat ``M_X = sum_c (sum_{r in c} g_r)(sum_{r in c} g_r)'`` and the row meat
   ``M_0 = sum_r g_r g_r'``. Their difference holds the cross-products of distinct rows
   of a cluster, and to first order (Price's theorem for the covariance of two functions of
   jointly normal effects) ``E[e_r e_r'] = h'_r h'_r' Cov(eta_r, eta_r')`` with
   ``Cov = prompt_var 1[same p] z_r'R z_r' + judge_var 1[same j] z_r'z_r'``
   (``R = diag`` of the responding models: ``I``, or the baseline alone). So::

       T_X = tr(M_X - M_0) = sum_{r != r' in one X cluster} f_r f_r' e_r e_r' z_r'z_r'
       E T_P = prompt_var A_P(R) + judge_var A_PJ(I)
       E T_J = prompt_var A_PJ(R) + judge_var A_J(I)
       A_X(R) = sum_{r != r' in one X cluster} f_r f_r' h'_r h'_r' (z_r'z_r') (z_r'R z_r')

   (``A_PJ`` over rows sharing prompt and judge), two linear equations solved for the two
   components and truncated at 0 -- the moment estimator of the two-way random-effects
   ANOVA (Searle, Casella & McCulloch 1992, "Variance Components", ch. 4) written on the
   score rows of winrate's meats (:mod:`winrate.variance.sandwich`). ``(z_r'z_r')^2`` is 4 for rows
   of one pair and 1 for rows sharing one model, so every sum is a ``bincount`` over
   (cluster, model) and (cluster, pair) keys (:meth:`_Keys.slope_moment`). A component
   whose axis is missing, has one cluster or has no two rows sharing a responding model
   within a cluster is not identified and is 0.
3. *Calibration.* The marginal fit is attenuated (a marginal logit slope is the
   conditional one shrunk by about ``(1 + c^2 V)^(-1/2)``, ``V = 2 prompt_var + 2
   judge_var``, ``c = 16 sqrt(3) / (15 pi)``; Zeger, Liang & Albert 1988, Biometrics
   44(4); ``V = prompt_var + 2 judge_var`` in a baseline design) and the first-order
   moments are biased down. Starting from that de-attenuation, the components, a common
   scale of ``theta`` and ``kappa`` are adjusted until steps 1-2 applied to
   :data:`CALIBRATION_DRAWS` logs drawn from the model on the same design (the same seeds
   every round) reproduce the log's own, on average: the moment estimates, the marginal
   ``theta' theta`` (which holds the estimates' noise as the log's does, so the simulated
   abilities are the log's shrunk towards their mean, as empirical Bayes would) and
   ``kappa``: a secant step on each log-component and multiplicative steps on the scale and
   on ``kappa``, at most :data:`CALIBRATION_ROUNDS` rounds, until every log-ratio is within
   :data:`CALIBRATION_TOLERANCE` or, for a moment, its difference within
   :data:`CALIBRATION_ABSOLUTE` (``SimulationModel.calibrated``; a note if not). A component
   driven below :data:`MIN_COMPONENT` while the log's moment is still below the
   simulated one is set to 0: the log shows less than a vanishing effect would give.

**Truth** (:func:`pseudo_truth`): the value the analysed estimator estimates under the
simulation model on this design -- the root of its expected estimating equations (White
1982, Econometrica 50(1)). Each row's outcome probabilities, averaged over the random
effects (``W = u_pa - u_pb + v_ja - v_jb ~ N(0, V_ab)``), are by adaptive quadrature
(``scipy.integrate.quad_vec`` over ``W`` to 1e-12); the estimator, with the analysis'
options, is fitted to the *expected log* (each row as a win, a tie and a loss weighted by
their probabilities), whose estimating equations are the expected ones. For the win rate
this is the expected half-tie win rate over the opponents met (``S_a = sum_b w_ab
psi_ab``, ``psi_ab = P(win) + P(tie) / 2``); for Bradley-Terry the pseudo-true ratings on
winrate's Elo scale (the same anchor or baseline); for Rao-Kupper its pseudo-true ratings.

**Replications**: replication i draws from ``SeedSequence([24, seed, i])`` and reruns the
analysis on the drawn log: the same estimator and options, clustering, variance method
(``auto`` chooses from the design, which is the log's), alpha, with simultaneous intervals
(Monte-Carlo draws capped at :data:`CHECK_DRAWS`, seeded per replication). Replications
run on every core (a process pool; numba single-threaded in each) and their results do not
depend on the number of workers. A model reported as not estimable counts as covered.

**Coverage**: marginal -- the mean over replications of the share of models whose interval
covers its truth, MC SE the SD of those shares / sqrt(reps); simultaneous -- the share of
replications whose simultaneous intervals cover every truth, MC SE ``sqrt(p (1 - p) /
reps)``. The verdict generalises issue 24's acceptance rule to any alpha: marginal coverage
*under-covers* when the upper end of its 99% MC interval (estimate + 2.576 MC SE) is below
``1 - alpha - 0.4 alpha`` (93% at alpha 0.05), *over-covers* when the lower end is above
``1 - alpha + 0.4 alpha`` (97%), *covers* when the estimate lies between, and is
inconclusive otherwise (outside, within MC error: "may under-cover", more replications
tell); simultaneous coverage the same with ``1 - 1.6 alpha`` (92%) as its lower limit. A
model under-covers when its coverage plus ``z sqrt(p0 (1 - p0) / reps)`` (``p0`` the
nominal level, ``z`` the 99% Bonferroni critical value over the K models) is below ``1 -
1.4 alpha``. When the chosen method does not cover (or may not), the same replications are
rerun with the other sandwich variants and the jackknife (not the bootstraps: too slow to
try) and the verdict says which covers.

**The narrowest method that covers** (``best=True``; ``winrate check --method best``): the
other methods run on the same replications whatever the chosen one gives, and the verdict
names the one with the smallest mean marginal interval width among those whose marginal
and simultaneous coverage are not below their band (:func:`narrowest_covering`), with the
flags to rerun with. The widths are compared on the same simulated logs of the user's
design, so the choice rests on checked coverage, never on the log's own outcomes.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.integrate import quad_vec
from scipy.special import expit
from scipy.stats import norm

from winrate import estimators, notes
from winrate.errors import WinrateInputError
from winrate.estimators.base import Scale
from winrate.estimators.rao_kupper import abilities_and_threshold
from winrate.io.logs import ClusterAxis, ComparisonLog
from winrate.notes import Note, Notes
from winrate.parallel import usable_cores
from winrate.progress import bar
from winrate.report.text import Summary, text_block
from winrate.settings import Joint, MonteCarlo, Variance

#: Monte-Carlo draws of each replication's simultaneous critical value (at most).
CHECK_DRAWS = 10_000
#: The first entry of every replication's seed sequence (issue 24).
SEED_TAG = 24
#: Ridge prior variance (natural units) of a marginal fit whose MLE is not finite.
RIDGE_VARIANCE = 4.0
#: Zeger, Liang & Albert's (1988) logit-normal attenuation constant.
ATTENUATION = 16 * np.sqrt(3) / (15 * np.pi)
#: Indirect-inference calibration: rounds, logs per round, their seed, tolerance on the
#: log-ratios of the auxiliary statistics, largest component.
CALIBRATION_ROUNDS = 10
CALIBRATION_DRAWS = 4
CALIBRATION_SEED = 20260024
CALIBRATION_TOLERANCE = 0.05
CALIBRATION_ABSOLUTE = 0.005
MAX_COMPONENT = 25.0
#: A component driven below this while its simulated moment is still too large is 0.
MIN_COMPONENT = 1e-3
#: The verdict's tolerances as shares of alpha (module doc) and its 99% MC critical value.
MARGINAL_TOLERANCE = 0.4
SIMULTANEOUS_TOLERANCE = 0.6
MC_Z = 2.576
#: A replication pool starts only when the replications would run longer than this serially.
POOL_MIN_SECONDS = 4.0
#: A check expected to run longer than this says so (``check-slow-method``).
SLOW_SECONDS = 60.0
_JOINT = Joint(simultaneous=True)
_Z_LIMIT = 12.0  # the quadrature's range of the standardised effect (tails < 1e-32)


# ---------------------------------------------------------------------- simulation model


def half_tie_score(eta, kappa):
    """``P(first wins) + P(tie) / 2 = (1 + expit(eta - kappa) - expit(-eta - kappa)) / 2``."""
    return 0.5 * (1.0 + expit(eta - kappa) - expit(-eta - kappa))


def half_tie_slope(eta, kappa):
    """``d/d eta`` of :func:`half_tie_score`: ``(s(eta - kappa) + s(-eta - kappa)) / 2``,
    ``s = expit (1 - expit)``."""
    first, second = expit(eta - kappa), expit(-eta - kappa)
    return 0.5 * (first * (1 - first) + second * (1 - second))


@dataclass(frozen=True)
class SimulationModel:
    """The fitted simulation model (module doc), on the conditional scale.

    ``theta`` (L,) abilities in natural (logit) units, centred; ``kappa`` the tie
    threshold; ``prompt_var`` and ``judge_var`` the variances of the prompt x model and
    judge x model effects; ``baseline``: in a baseline design (module doc), the code of the
    one model whose responses carry the prompt x model effect, else None (every model's).
    ``marginal`` is the marginal fit ``(theta, kappa)`` of step 1, ``moments`` the
    first-order component estimates of step 2 on the log, ``calibrated`` whether step 3
    converged, ``prior`` the ridge prior of the marginal fit (None: the MLE),
    ``discretised`` whether graded preferences were rounded to win / tie / loss.
    """

    theta: np.ndarray
    kappa: float
    prompt_var: float
    judge_var: float
    baseline: int | None = None
    marginal: tuple = ()
    moments: tuple = ()
    calibrated: bool = True
    prior: float | None = None
    discretised: bool = False

    @property
    def responders(self) -> np.ndarray:
        """(L,) 1 for the models whose responses carry a prompt x model effect, else 0."""
        return _responders(self.theta.size, self.baseline)

    def latent_var(self, first, second) -> np.ndarray:
        """``Var(u_pa - u_pb + v_ja - v_jb)`` of each pair: ``prompt_var`` for each of the
        two models that responds (both, or the baseline alone) plus ``2 judge_var``."""
        weight = self.responders
        return self.prompt_var * (weight[first] + weight[second]) + 2.0 * self.judge_var

    def outcome_probabilities(self, first, second) -> tuple[np.ndarray, np.ndarray]:
        """``P(first wins)`` and ``P(second wins)`` of pairs of model codes, averaged over
        ``W ~ N(0, latent_var)`` by adaptive quadrature over ``W / sd`` on [-12, 12]."""
        gap = self.theta[first] - self.theta[second]
        sd = np.sqrt(self.latent_var(first, second))

        def given(z):
            w = sd * z
            return np.stack([expit(gap + w - self.kappa), expit(-gap - w - self.kappa)])

        if not (sd > 0).any():
            return tuple(given(0.0))
        mean, _ = quad_vec(lambda z: norm.pdf(z) * given(z), -_Z_LIMIT, _Z_LIMIT,
                           epsabs=1e-12, epsrel=1e-10)
        return mean[0], mean[1]

    def to_dict(self) -> dict:
        return {"prompt_var": self.prompt_var, "judge_var": self.judge_var,
                "kappa": self.kappa, "theta": self.theta.tolist(),
                "baseline_responds_only": self.baseline is not None,
                "calibrated": self.calibrated, "prior": self.prior,
                "discretised": self.discretised,
                "moments": {"prompt_var": self.moments[0], "judge_var": self.moments[1]}
                if self.moments else None}


def _responders(k: int, baseline: int | None) -> np.ndarray:
    return np.ones(k) if baseline is None else (np.arange(k) == baseline).astype(float)


@dataclass(frozen=True, eq=False)
class _Keys:
    """Which rows share a cluster of one axis (or of two crossed axes): each row's
    (cluster, model_a) and (cluster, model_b) codes in one code space, and its
    (cluster, unordered pair) code."""

    side_a: np.ndarray
    side_b: np.ndarray
    side_model: np.ndarray  # the model of each (cluster, model) code
    pair: np.ndarray
    pair_models: np.ndarray  # (n_pairs, 2) the models of each (cluster, pair) code

    @classmethod
    def of(cls, cluster: np.ndarray, a: np.ndarray, b: np.ndarray, k: int) -> _Keys:
        cluster = cluster.astype(np.int64)
        sides, side = np.unique(np.concatenate([cluster * k + a, cluster * k + b]),
                                return_inverse=True)
        pairs, pair = np.unique(cluster * k * k + np.minimum(a, b) * k + np.maximum(a, b),
                                return_inverse=True)
        n = a.size
        return cls(side[:n], side[n:], sides % k, pair,
                   np.column_stack([pairs // k % k, pairs % k]))

    def _side_totals(self, rows, on_a, on_b) -> np.ndarray:
        """Per (cluster, model): the sum of its entries, row r entering its a-side code with
        ``on_a[r]`` and its b-side code with ``on_b[r]``."""
        return np.bincount(np.concatenate([self.side_a[rows], self.side_b[rows]]),
                           np.concatenate([on_a, on_b]), self.side_model.size)

    def score_moment(self, rows, fe) -> float:
        """``T = tr(M - M_0)`` of the score rows ``f e z`` (module doc, step 2)."""
        total = self._side_totals(rows, fe, -fe)
        return float(total @ total - 2.0 * fe @ fe)

    def slope_moment(self, rows, a, b, fh, weight: np.ndarray) -> float:
        """``sum_{r != r' in a cluster} c_r c_r' (z_r'z_r') (z_r' W z_r')`` with ``c = f h'``
        and ``W = diag(weight)`` (the models whose effects are shared; module doc, step 2,
        where ``W = I``). Per cluster it is ``sum_{m, m'} w_m' L_mm'^2`` for the Laplacian
        ``L = sum_r c_r z_r z_r'``, whose diagonal holds the (cluster, model) totals of c and
        whose off-diagonal the (cluster, pair) totals, less the terms ``r = r'``:
        ``2 (w_a + w_b) c_r^2``."""
        side = self._side_totals(rows, fh, fh)
        pair = np.bincount(self.pair[rows], fh, len(self.pair_models))
        pair_weight = weight[self.pair_models].sum(axis=1)
        own = 2.0 * (weight[a] + weight[b]) * fh**2
        return float(weight[self.side_model] @ side**2 + pair_weight @ pair**2 - own.sum())


def _axis_codes(log: ComparisonLog, name: str) -> np.ndarray | None:
    axis = log.axes.get(name)
    return None if axis is None or axis.n_clusters < 2 else axis.codes


@dataclass(frozen=True, eq=False)
class _Design:
    """A log's design (rows, models, frequencies, prompt and judge clusters) with the keys
    the draws and the moments use; every draw keeps these rows."""

    log: ComparisonLog
    counts: np.ndarray | None  # integer frequencies (drawn multinomially), else None
    prompt: _Keys | None
    judge: _Keys | None
    both: _Keys | None
    baseline: int | None  # the model in every row of a baseline design

    @classmethod
    def of(cls, log: ComparisonLog) -> _Design:
        a, b, k = log.model_a.astype(np.int64), log.model_b.astype(np.int64), log.n_models
        prompt, judge = _axis_codes(log, "prompt"), _axis_codes(log, "judge")
        keys = {name: None if codes is None else _Keys.of(codes, a, b, k)
                for name, codes in (("prompt", prompt), ("judge", judge))}
        both = None
        if prompt is not None and judge is not None:
            both = _Keys.of(prompt.astype(np.int64) * (int(judge.max()) + 1) + judge, a, b, k)
        freq = log.frequency
        counts = None
        if freq is not None and np.array_equal(freq, np.round(freq)):
            counts = freq.astype(np.int64)
        everywhere = np.flatnonzero(np.bincount(a, minlength=k) + np.bincount(b, minlength=k)
                                    == log.n_rows)
        baseline = int(everywhere[0]) if everywhere.size == 1 and k > 2 else None
        return cls(log, counts, keys["prompt"], keys["judge"], both, baseline)

    @property
    def responders(self) -> np.ndarray:
        return _responders(self.log.n_models, self.baseline)

    @property
    def responses_per_row(self) -> float:
        """The mean number of a row's two models that carry a prompt x model effect."""
        weight = self.responders
        return float(np.mean(weight[self.log.model_a] + weight[self.log.model_b]))

    @property
    def discretised(self) -> bool:
        return not np.isin(self.log.score, (0.0, 0.5, 1.0)).all()

    def observed(self):
        """``(rows, score, frequency)`` of the log, graded scores rounded to 1, 1/2, 0."""
        score = self.log.score
        rounded = np.where(score > 0.5, 1.0, np.where(score < 0.5, 0.0, 0.5))
        return np.arange(self.log.n_rows), rounded, self.log.frequency

    def draw(self, model: SimulationModel, rng: np.random.Generator):
        """One outcome set on these rows: ``(rows, score, frequency)``, ``rows`` indexing the
        log's rows (each row once, or up to three times -- win, tie, loss -- for integer
        frequencies, rows of frequency 0 left out)."""
        log = self.log
        eta = model.theta[log.model_a] - model.theta[log.model_b]
        for keys, variance in ((self.prompt, model.prompt_var * model.responders),
                               (self.judge, np.full(log.n_models, model.judge_var))):
            if keys is not None and variance.any():
                sd = np.sqrt(variance[keys.side_model])
                effect = sd * rng.standard_normal(keys.side_model.size)
                eta = eta + effect[keys.side_a] - effect[keys.side_b]
        first, second = expit(eta - model.kappa), expit(-eta - model.kappa)
        n = log.n_rows
        if self.counts is None:
            u = rng.random(n)
            score = np.where(u < first, 1.0, np.where(u >= 1.0 - second, 0.0, 0.5))
            return np.arange(n), score, log.frequency
        wins = rng.binomial(self.counts, first)
        rest = self.counts - wins
        share = np.divide(second, 1.0 - first, out=np.ones(n), where=first < 1.0)
        losses = rng.binomial(rest, np.clip(share, 0.0, 1.0))
        freq = np.concatenate([wins, rest - losses, losses]).astype(float)
        keep = freq > 0
        rows = np.tile(np.arange(n), 3)[keep]
        return rows, np.repeat([1.0, 0.5, 0.0], n)[keep], freq[keep]

    def log_of(self, rows, score, freq) -> ComparisonLog:
        """The drawn outcomes as a log with the design's axes and features."""
        log = self.log
        same = rows.size == log.n_rows
        axes = log.axes if same else {name: ClusterAxis(axis.codes[rows], axis.labels)
                                      for name, axis in log.axes.items()}
        features = log.features if same else {k: v[rows] for k, v in log.features.items()}
        return ComparisonLog(log.model_a[rows], log.model_b[rows], score, log.models, axes,
                             freq, features)

    def marginal_fit(self, rows, score, freq, prior: float | None):
        """Step 1: ``(theta, kappa)`` of the marginal model, and the prior used (a ridge
        prior when the MLE is not finite and none was given)."""
        log = self.log
        sub = ComparisonLog(log.model_a[rows], log.model_b[rows], score, log.models, {}, freq)
        with notes.gathered():  # a simulation model's fit: its notes are not the user's
            try:
                theta, kappa = abilities_and_threshold(sub, prior)
            except WinrateInputError:
                if prior is not None:
                    raise
                return self.marginal_fit(rows, score, freq, RIDGE_VARIANCE)
        return (theta - theta.mean(), kappa), prior

    def moment_components(self, rows, score, freq, theta, kappa) -> np.ndarray:
        """Step 2: the first-order moment estimates ``(prompt_var, judge_var)``."""
        log = self.log
        a, b = log.model_a[rows], log.model_b[rows]
        eta = theta[a] - theta[b]
        f = np.ones(rows.size) if freq is None else freq
        fe = f * (score - half_tie_score(eta, kappa))
        fh = f * half_tie_slope(eta, kappa)
        every, responders = np.ones(log.n_models), self.responders
        t, coefficients = np.zeros(2), np.zeros((2, 2))
        if self.prompt is not None:
            t[0] = self.prompt.score_moment(rows, fe)
            coefficients[0, 0] = self.prompt.slope_moment(rows, a, b, fh, responders)
        if self.judge is not None:
            t[1] = self.judge.score_moment(rows, fe)
            coefficients[1, 1] = self.judge.slope_moment(rows, a, b, fh, every)
        if self.both is not None:
            coefficients[0, 1] = self.both.slope_moment(rows, a, b, fh, every)
            coefficients[1, 0] = self.both.slope_moment(rows, a, b, fh, responders)
        return solve_components(t, coefficients)

    def auxiliary(self, rows, score, freq, prior) -> np.ndarray:
        """Steps 1-2 on one outcome set: ``(theta' theta, kappa, prompt moment, judge
        moment)``."""
        (theta, kappa), _ = self.marginal_fit(rows, score, freq, prior)
        return np.array([theta @ theta, kappa,
                         *self.moment_components(rows, score, freq, theta, kappa)])


def solve_components(t: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """``(prompt_var, judge_var)`` solving ``E T = coefficients @ components`` for the
    prompt and judge moments ``T`` (module doc, step 2), truncated at 0: a negative
    solution is replaced by the one-component fit of the other axis. An axis that is
    absent or has no shared effects (a zero coefficient) gives 0; two axes that cannot be
    told apart (each prompt on one judge and each judge on one prompt) give the prompt all."""
    own = np.diag(coefficients)
    alone = np.divide(t, own, out=np.zeros(2), where=own > 0).clip(0.0)
    if not (own > 0).all():
        return alone
    if np.linalg.det(coefficients) <= 1e-9 * own.prod():
        return np.array([alone[0], 0.0])
    both = np.linalg.solve(coefficients, t)
    if both[0] < 0:
        return np.array([0.0, alone[1]])
    if both[1] < 0:
        return np.array([alone[0], 0.0])
    return both


def _deattenuation(components: np.ndarray, responses: float) -> float:
    """Zeger, Liang & Albert's factor ``sqrt(1 + c^2 V)`` (module doc, step 3), with ``V``
    the latent variance of a row: ``responses`` (2, or 1 in a baseline design) times
    ``prompt_var`` plus ``2 judge_var``."""
    return float(np.sqrt(1.0 + ATTENUATION**2 * (responses * components[0]
                                                 + 2.0 * components[1])))


def fit_simulation_model(log: ComparisonLog, rounds: int = CALIBRATION_ROUNDS,
                         draws: int = CALIBRATION_DRAWS) -> SimulationModel:
    """The simulation model fitted to ``log`` (module doc, steps 1-3)."""
    return _fit(_Design.of(log), rounds, draws)


def _fit(design: _Design, rounds: int, draws: int) -> SimulationModel:
    """Steps 1-3 (module doc). The calibrated parameters are ``(scale of theta, kappa,
    prompt_var, judge_var)``; their auxiliary statistics ``(theta' theta, kappa, the two
    moment estimates)``. The round whose statistics come closest is kept."""
    rows, score, freq = design.observed()
    (theta_obs, kappa_obs), prior = design.marginal_fit(rows, score, freq, None)
    moments = design.moment_components(rows, score, freq, theta_obs, kappa_obs)
    target = np.array([theta_obs @ theta_obs, kappa_obs, *moments])
    responses = design.responses_per_row
    components = moments * _deattenuation(moments, responses) ** 2
    scale = _deattenuation(components, responses)
    params = np.array([scale, scale * kappa_obs, *components])
    slope, previous, best = np.array([2.0, 1.0, 1.0, 1.0]), None, (np.inf, params)
    for _ in range(rounds):
        simulated = _mean_auxiliary(design, _conditional(theta_obs, params, design.baseline),
                                    draws, prior)
        gaps = _gaps(target, simulated)
        # a component whose moment stays above the log's as it vanishes is 0
        vanishing = (params < MIN_COMPONENT) & (gaps < 0) & _COMPONENT
        params, gaps = np.where(vanishing, 0.0, params), np.where(vanishing, 0.0, gaps)
        if np.abs(gaps).max() < best[0]:
            best = (np.abs(gaps).max(), params)
        if best[0] < CALIBRATION_TOLERANCE:
            break
        logs = np.log(np.maximum(params, 1e-300)), np.log(np.maximum(simulated, 1e-300))
        if previous is not None:
            slope = _secant(slope, logs[0] - previous[0], logs[1] - previous[1])
        previous = logs
        moved = np.exp(logs[0] + np.clip(gaps / slope, -np.log(4), np.log(4)))
        params = np.where(params > 0, np.minimum(moved, np.where(_COMPONENT, MAX_COMPONENT,
                                                                 np.inf)), 0.0)
    worst, params = best
    return replace(_conditional(theta_obs, params, design.baseline),
                   marginal=(theta_obs, kappa_obs),
                   moments=tuple(moments), calibrated=bool(worst < CALIBRATION_TOLERANCE),
                   prior=prior, discretised=design.discretised)


_COMPONENT = np.array([False, False, True, True])  # which calibrated parameters are variances


def _conditional(theta_obs: np.ndarray, params: np.ndarray, baseline) -> SimulationModel:
    scale, kappa, prompt_var, judge_var = map(float, params)
    return SimulationModel(scale * theta_obs, kappa, prompt_var, judge_var, baseline)


def _gaps(target: np.ndarray, simulated: np.ndarray) -> np.ndarray:
    """Log-ratios of the log's auxiliary statistics to the simulated ones; 0 where the
    log's is 0 (nothing to match) and for moments within :data:`CALIBRATION_ABSOLUTE`."""
    gaps = np.log(np.maximum(target, 1e-300)) - np.log(np.maximum(simulated, 1e-300))
    close = _COMPONENT & (np.abs(target - simulated) < CALIBRATION_ABSOLUTE)
    return np.where((target > 1e-12) & ~close, gaps, 0.0)


def _secant(slope: np.ndarray, moved: np.ndarray, change: np.ndarray) -> np.ndarray:
    """Slopes of the log-statistics in the log-parameters from the last step, where a
    parameter moved enough to tell (by a tenth), kept within [1/4, 4]."""
    informative = np.abs(moved) > 0.1
    found = change / np.where(informative, moved, 1.0)
    return np.where(informative, np.clip(found, 0.25, 4.0), slope)


def _mean_auxiliary(design: _Design, model: SimulationModel, draws: int, prior) -> np.ndarray:
    """Steps 1-2 averaged over ``draws`` logs drawn from ``model`` with fixed seeds:
    ``(theta' theta, kappa, prompt moment, judge moment)``."""
    return np.mean([design.auxiliary(*design.draw(model, np.random.default_rng(
        [CALIBRATION_SEED, d])), prior) for d in range(draws)], axis=0)


def pseudo_truth(result, model: SimulationModel) -> np.ndarray:
    """The truth of ``model`` for the analysed estimator on the analysed log's design
    (module doc): the estimator with the analysis' options fitted to the expected log.
    Returns the (K,) scores on the scale the analysis reports."""
    log = result.log
    k, n = log.n_models, log.n_rows
    ordered, inverse = np.unique(log.model_a.astype(np.int64) * k + log.model_b,
                                 return_inverse=True)
    p_first, p_second = model.outcome_probabilities(*np.divmod(ordered, k))
    probs = np.stack([p_first, np.clip(1.0 - p_first - p_second, 0.0, 1.0), p_second])
    rows = np.tile(np.arange(n), 3)
    expected = ComparisonLog.from_arrays(
        log.model_a[rows], log.model_b[rows], np.repeat([1.0, 0.5, 0.0], n),
        models=log.models, frequency=log.weight[rows] * probs[:, inverse].ravel(),
        features={name: values[rows] for name, values in log.features.items()})
    board = result.leaderboard
    with notes.gathered():  # the pseudo-truth's fit: its notes are not the user's
        return estimators.fit(expected, board.estimator, **board.options).scores


# ---------------------------------------------------------------------- replications


@dataclass(frozen=True, eq=False)
class _Spec:
    """Everything a replication needs (sent once to each worker)."""

    design: _Design
    model: SimulationModel
    truth: np.ndarray
    estimator: str
    options: dict
    cluster: tuple
    variances: tuple
    alpha: float
    n_draws: int
    seed: int


@dataclass(frozen=True)
class _Outcome:
    """One replication under one variance method: per model whether its interval covers,
    its standardised error and whether it was not estimable; whether the simultaneous
    intervals cover every model."""

    covered: np.ndarray
    z: np.ndarray
    blank: np.ndarray
    simultaneous: bool
    #: the mean width of the marginal intervals of the estimable models (NaN: none)
    width: float = float("nan")


def _outcome(run, truth: np.ndarray) -> _Outcome:
    se = run.se
    blank = np.isnan(se)
    iv = run.intervals
    covered = blank | ((iv.low <= truth) & (truth <= iv.high))
    joint = run.joint
    simultaneous = True
    if joint is not None and joint.sim_low is not None:
        simultaneous = bool(np.all(blank | ((joint.sim_low <= truth) & (truth <= joint.sim_high))))
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (run.scores - truth) / se
    width = float(np.mean((iv.high - iv.low)[~blank])) if (~blank).any() else float("nan")
    return _Outcome(covered, z, blank, simultaneous, width)


def replicate(spec: _Spec, rep: int) -> list[_Outcome | None]:
    """Replication ``rep``: draw, analyse with each of ``spec.variances`` (the first by
    :func:`winrate.inference.analysis.run_analysis`, the numbers of :func:`winrate.analyze`;
    the others reusing its fit), compare with the truth. None for a method whose analysis
    raised an input error (every method, if the fit did)."""
    draw_seq, analysis_seq = np.random.SeedSequence([SEED_TAG, spec.seed, rep]).spawn(2)
    log = spec.design.log_of(*spec.design.draw(spec.model, np.random.default_rng(draw_seq)))
    monte_carlo = MonteCarlo(n_draws=spec.n_draws, seed=int(analysis_seq.generate_state(1)[0]))
    with notes.gathered():  # a replication's notes are not the user's: its outcome is kept
        return _outcomes(spec, log, monte_carlo)


def _outcomes(spec: _Spec, log, monte_carlo) -> list[_Outcome | None]:
    """Each of ``spec.variances``' outcome on the replicated ``log`` (:func:`replicate`)."""
    from winrate.inference.analysis import run_analysis

    found, run = [], None
    for variance in spec.variances:
        try:
            common = {"variance": variance, "joint": _JOINT, "monte_carlo": monte_carlo,
                      "alpha": spec.alpha, "progress": False}
            run = (run_analysis(log, spec.cluster, spec.estimator, **common, **spec.options)
                   if run is None else
                   run_analysis(run.log, spec.cluster, board=run.leaderboard, **common))
        except WinrateInputError:
            if run is None:
                return [None] * len(spec.variances)
            found.append(None)
            continue
        found.append(_outcome(run, spec.truth))
    return found


_WORKER_SPEC: _Spec | None = None


def _start_worker(spec: _Spec) -> None:
    """A pool worker: single-threaded numba, the spec kept."""
    global _WORKER_SPEC
    import numba

    numba.set_num_threads(1)
    _WORKER_SPEC = spec


def _replicate_chunk(reps: range) -> list[tuple[int, list]]:
    return [(rep, replicate(_WORKER_SPEC, rep)) for rep in reps]


@contextmanager
def _single_threaded():
    """numba single-threaded (as in the workers, so results do not depend on the number
    of workers)."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(threads)


def _pool(spec: _Spec, workers: int):
    """A process pool of ``workers`` holding ``spec``: forked on Linux (cheap; the workers
    never enter numba's threading layer, which is not fork-safe), the platform's default
    start method elsewhere."""
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    return context.Pool(workers, initializer=_start_worker, initargs=(spec,))


def _chunks(start: int, stop: int, workers: int) -> list[range]:
    size = max(1, (stop - start) // (8 * workers))
    return [range(s, min(s + size, stop)) for s in range(start, stop, size)]


def run_replications(spec: _Spec, reps: int, workers: int | None, progress, label: str):
    """Replications ``0..reps-1`` of ``spec``, in order: the first two in this process
    (the second's time, warm -- the first's includes compiling the kernels in a fresh
    process -- decides whether a pool of ``workers`` -- None: every usable core -- is
    worth starting, and a ``check-slow-method`` note is emitted at once when the whole run
    will take longer than :data:`SLOW_SECONDS`), the rest serially or in the pool.
    Returns ``(outcomes, workers used, the slow note or None)``."""
    found: list = [None] * reps
    with bar(desc=f"winrate check ({label})", total=reps, unit="rep",
             progress=progress) as shown:
        each = 0.0
        for rep in range(min(reps, 2)):
            start = time.perf_counter()
            with _single_threaded():
                found[rep] = replicate(spec, rep)
            each = time.perf_counter() - start
            shown.update()
        done = min(reps, 2)
        if workers is None:
            pooled = each * (reps - done) > POOL_MIN_SECONDS
            workers = min(usable_cores(), reps - done) if pooled else 1
        workers = max(1, min(int(workers), reps - done))
        slow = None
        if each * reps / workers > SLOW_SECONDS:
            slow = _slow_note(label, each, reps, workers)
            notes.emit(slow)
        if workers == 1:
            with _single_threaded():
                for rep in range(done, reps):
                    found[rep] = replicate(spec, rep)
                    shown.update()
        else:
            with _pool(spec, workers) as pool:
                for part in pool.imap_unordered(_replicate_chunk,
                                                _chunks(done, reps, workers)):
                    for rep, outcome in part:
                        found[rep] = outcome
                    shown.update(len(part))
    return found, workers, slow


# ---------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class Coverage:
    """Marginal and simultaneous coverage of one method with their Monte-Carlo SEs, per
    model coverage and standardised errors, and the verdict's status of each."""

    label: str
    reps: int
    failed: int
    marginal: float
    marginal_se: float
    simultaneous: float
    simultaneous_se: float
    per_model: np.ndarray
    mean_z: np.ndarray
    sd_z: np.ndarray
    not_estimable: np.ndarray
    status: str
    simultaneous_status: str
    under_covering: np.ndarray
    #: the mean marginal interval width over the replications (on the score's scale)
    width: float = float("nan")

    @property
    def under_covers(self) -> bool:
        """Marginal or simultaneous coverage below its band beyond MC error."""
        return "under-covers" in (self.status, self.simultaneous_status)

    @property
    def covers(self) -> bool:
        """Neither coverage below its band (beyond MC error or not)."""
        return not ({"under-covers", "inconclusive-low"}
                    & {self.status, self.simultaneous_status})

    def to_dict(self) -> dict:
        return {"method": self.label, "replications": self.reps, "failed": self.failed,
                "marginal": _number(self.marginal), "marginal_se": _number(self.marginal_se),
                "simultaneous": _number(self.simultaneous),
                "simultaneous_se": _number(self.simultaneous_se),
                "status": self.status, "simultaneous_status": self.simultaneous_status,
                "width": _number(self.width)}


def _status(estimate: float, se: float, nominal: float, below: float, above: float) -> str:
    """Where a coverage estimate stands against the band ``[nominal - below, nominal +
    above]`` (module doc): ``under-covers`` / ``over-covers`` when its 99% MC interval lies
    wholly outside, ``covers`` when the estimate lies inside, ``inconclusive-low`` /
    ``inconclusive-high`` when it lies outside but within MC error of the band."""
    if not np.isfinite(estimate):
        return "not run"
    if estimate + MC_Z * se < nominal - below:
        return "under-covers"
    if estimate - MC_Z * se > nominal + above:
        return "over-covers"
    if estimate < nominal - below:
        return "inconclusive-low"
    return "inconclusive-high" if estimate > nominal + above else "covers"


def summarise(outcomes: list, label: str, alpha: float) -> Coverage:
    """:class:`Coverage` of one method's outcomes (None: failed replications)."""
    ran = [o for o in outcomes if o is not None]
    failed, reps = len(outcomes) - len(ran), len(ran)
    nominal = 1.0 - alpha
    if not ran:
        nan = float("nan")
        return Coverage(label, 0, failed, nan, nan, nan, nan, np.array([]), np.array([]),
                        np.array([]), np.array([]), "not run", "not run", np.array([], bool))
    covered = np.array([o.covered for o in ran], float)
    z = np.array([o.z for o in ran])
    shares = covered.mean(axis=1)
    marginal = float(shares.mean())
    marginal_se = float(shares.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan")
    simultaneous = float(np.mean([o.simultaneous for o in ran]))
    simultaneous_se = float(np.sqrt(simultaneous * (1 - simultaneous) / reps))
    per_model = covered.mean(axis=0)
    k = per_model.size
    z_models = norm.isf(0.005 / max(k, 1))
    under = (per_model + z_models * np.sqrt(nominal * alpha / reps)
             < nominal - MARGINAL_TOLERANCE * alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model never estimable
        mean_z, sd_z = np.nanmean(z, axis=0), np.nanstd(z, axis=0, ddof=1)
    return Coverage(
        label, reps, failed, marginal, marginal_se, simultaneous, simultaneous_se, per_model,
        mean_z, sd_z, np.array([o.blank for o in ran]).mean(axis=0),
        _status(marginal, marginal_se, nominal, MARGINAL_TOLERANCE * alpha,
                MARGINAL_TOLERANCE * alpha),
        _status(simultaneous, simultaneous_se, nominal, SIMULTANEOUS_TOLERANCE * alpha,
                MARGINAL_TOLERANCE * alpha), under, float(np.nanmean([o.width for o in ran])))


def _number(value):
    return None if value is None or not np.isfinite(value) else float(value)


def method_label(method: str, correction: str, reference: str) -> str:
    """``"sandwich CR1, t"``, ``"jackknife"``, ``"pigeonhole bootstrap"``."""
    if method != "sandwich":
        return method
    return f"sandwich {correction.upper()}, {reference}"


#: The methods tried when the chosen one under-covers: (label, Variance, the CLI flags).
ALTERNATIVES = (
    (Variance("sandwich", "cr1", "normal"), "--method sandwich --correction cr1"),
    (Variance("sandwich", "cr1", "t"), "--method sandwich --correction cr1 --reference t"),
    (Variance("sandwich", "cr2", "t"), "--method sandwich --correction cr2 --reference t"),
    (Variance("jackknife"), "--method jackknife"),
)


def alternatives(result, every: bool = False) -> list[tuple[str, Variance, str]]:
    """The methods of :data:`ALTERNATIVES` other than the one ``result`` used (``every``:
    all of them, for a chosen method that differs from its namesake there, as auto's with
    df from the effective clusters) that its estimator supports and that apply to its
    clustering (none without one)."""
    if not result.clustering:
        return []
    chosen = None if every else method_label(result.method, result.settings["correction"],
                                             result.settings["reference"])
    found = []
    for variance, flags in ALTERNATIVES:
        label = method_label(variance.method, variance.correction or "", variance.reference
                             or "")
        if label == chosen or (variance.correction == "cr2"
                               and not estimators.of(result.leaderboard).supports("cr2")):
            continue
        found.append((label, variance, flags))
    return found


# ---------------------------------------------------------------------- the result


@dataclass(frozen=True, eq=False)
class CoverageCheck:
    """The coverage of an analysis' intervals on its own design (module doc).

    ``coverage``: the chosen method's :class:`Coverage`; ``alternatives``: the other
    methods tried when it under-covers (label -> (:class:`Coverage`, CLI flags));
    ``simulation``: the fitted :class:`SimulationModel`; ``truth``: each model's truth;
    ``verdict``: the finding in words; ``notes``: coded notes. ``summary()``,
    ``to_dict()`` (JSON) and ``to_frame()`` (per model) present it.
    """

    models: np.ndarray
    estimates: np.ndarray
    truth: np.ndarray
    simulation: SimulationModel
    coverage: Coverage
    alternatives: dict
    settings: dict
    verdict: str
    notes: Notes = field(default_factory=Notes)
    #: how the replications ran: worker processes and seconds (not in the report, which
    #: depends only on the log, the analysis and the seed)
    workers: int = 1
    seconds: float = 0.0
    #: with ``best=True``: the narrowest method whose checked coverage meets the level, as
    #: ``(label, Coverage, CLI flags or None for the method in use)``; None otherwise or
    #: when no method tried covers
    best: tuple | None = None

    @property
    def under_covering(self) -> list[str]:
        """The models whose intervals under-cover (module doc)."""
        return [str(m) for m in self.models[self.coverage.under_covering]]

    def to_frame(self) -> pd.DataFrame:
        """One row per model, in the analysis' order: its estimate on the log, the truth
        under the simulation model, the coverage of its interval with MC SE, the mean and
        SD of its standardised errors ``(estimate - truth) / SE``, the share of
        replications in which it was not estimable and whether it under-covers."""
        c = self.coverage
        se = np.sqrt(c.per_model * (1 - c.per_model) / max(c.reps, 1))
        return pd.DataFrame({"estimate": self.estimates, "truth": self.truth,
                             "coverage": c.per_model, "coverage_se": se, "mean_z": c.mean_z,
                             "sd_z": c.sd_z, "not_estimable": c.not_estimable,
                             "under_covers": c.under_covering},
                            index=pd.Index(self.models.astype(str), name="model"))

    def to_dict(self) -> dict:
        """The JSON document: ``settings``, ``simulation_model``, ``coverage`` (the chosen
        method), ``alternatives``, ``models`` (the rows of :meth:`to_frame`), ``verdict``,
        ``under_covering``, ``notes``."""
        frame = self.to_frame().reset_index()
        rows = [{key: (_number(value) if isinstance(value, float) else
                       bool(value) if isinstance(value, (bool, np.bool_)) else value)
                 for key, value in row.items()} for row in frame.to_dict("records")]
        return {"settings": self.settings, "simulation_model": self.simulation.to_dict(),
                "coverage": self.coverage.to_dict(),
                "alternatives": [{**cov.to_dict(), "flags": flags}
                                 for cov, flags in self.alternatives.values()],
                "models": rows, "verdict": self.verdict, "under_covering": self.under_covering,
                "best": None if self.best is None else {**self.best[1].to_dict(),
                                                        "flags": self.best[2]},
                "notes": self.notes.to_list()}

    def summary(self) -> Summary:
        """The report ``winrate check`` prints: the analysis and simulation model, the
        coverage with MC SEs (and of the other methods tried), the per-model table and
        the verdict, with the notes numbered below."""
        return text_block("Coverage check", [self._header(), self._coverage_table(),
                                             self._model_table(), "Verdict: " + self.verdict],
                          self.notes)

    def _header(self) -> str:
        s, m = self.settings, self.simulation
        ties = f"tie threshold {m.kappa:.3g}" if m.kappa > 0 else "no ties"
        return "\n".join([
            f"Analysis:      {s['estimator']}, cluster {s['cluster']}, {s['method']}, "
            f"alpha {s['alpha']:g}",
            f"Simulation:    crossed random-effects Bradley-Terry fitted to the log: "
            f"prompt x model variance {m.prompt_var:.3g}, judge x model {m.judge_var:.3g}, "
            f"{ties}",
            f"Replications:  {s['reps']} (seed {s['seed']}), simultaneous critical values "
            f"from {s['n_draws']:,} Monte-Carlo draws each"])

    def _coverage_table(self) -> str:
        nominal = 100 * (1 - self.settings["alpha"])
        lines = [f"{'coverage (nominal ' + format(nominal, 'g') + '%)':<34}"
                 f"{'marginal':>10}{'MC SE':>7}{'simult.':>10}{'MC SE':>7}{'width':>10}  "
                 "status (marginal / simult.)"]
        best = None if self.best is None else self.best[1]
        for cov in [self.coverage, *(c for c, _ in self.alternatives.values())]:
            mark = "chosen: " if cov is self.coverage else "other:  "
            lines.append(f"{(mark + cov.label)[:34]:<34}{_pct(cov.marginal):>10}"
                         f"{_pct(cov.marginal_se, 2):>7}{_pct(cov.simultaneous):>10}"
                         f"{_pct(cov.simultaneous_se, 2):>7}{cov.width:>10.4g}  {cov.status} / "
                         f"{cov.simultaneous_status}{'  <- best' if cov is best else ''}")
        return "\n".join(lines)

    def _model_table(self) -> str:
        frame = self.to_frame()
        width = max(5, *(len(m) for m in frame.index))
        lines = [f"{'model':<{width}} {'estimate':>9} {'truth':>9} {'coverage':>9} "
                 f"{'mean z':>7} {'sd z':>6}"]
        unit = Scale.of(self.settings["scale"])
        decimals = 1 + round(np.log10(unit.factor))  # a tenth of the printed unit
        for name, row in frame.iterrows():
            flag = "  under-covers" if row["under_covers"] else ""
            lines.append(f"{name:<{width}} {row['estimate']:>9.{decimals}f} "
                         f"{row['truth']:>9.{decimals}f} {_pct(row['coverage']):>9} "
                         f"{row['mean_z']:>7.2f} {row['sd_z']:>6.2f}{flag}")
        return "\n".join(lines)

    def __str__(self) -> str:
        """``print(check)`` shows :meth:`summary`; ``repr`` stays one line."""
        return str(self.summary())

    def __repr__(self) -> str:
        cov = self.coverage
        return (f"CoverageCheck(method={cov.label!r}, marginal={cov.marginal:.3f}, "
                f"simultaneous={cov.simultaneous:.3f}, reps={cov.reps})")


def _pct(value, decimals: int = 1) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{100 * value:.{decimals}f}"


def _verdict(coverage: Coverage, tried: dict, alpha: float, models) -> str:
    """The finding in words (module doc)."""
    if coverage.status == "not run":
        return "no replication could be analysed (see the notes)."
    nominal = f"{100 * (1 - alpha):g}%"
    head = (f"marginal {_pct(coverage.marginal)}% (MC SE {_pct(coverage.marginal_se, 2)}), "
            f"simultaneous {_pct(coverage.simultaneous)}% "
            f"(MC SE {_pct(coverage.simultaneous_se, 2)}) over {coverage.reps} replications")
    statuses = (coverage.status, coverage.simultaneous_status)
    if coverage.under_covers:
        which = {("under-covers", "under-covers"): "marginally and jointly"}.get(
            statuses, "marginally" if statuses[0] == "under-covers" else "jointly")
        text = (f"the {coverage.label} intervals under-cover {which} on this design: {head}, "
                f"against {nominal}.")
    elif not coverage.covers:
        text = (f"the {coverage.label} intervals may under-cover on this design: {head}, "
                f"below {nominal} but within Monte-Carlo error of it; more replications "
                "(--reps) would tell.")
    elif statuses[0] == "over-covers":
        text = (f"the {coverage.label} intervals over-cover (are conservative) on this "
                f"design: {head}, against {nominal}.")
    else:
        text = (f"the {coverage.label} intervals cover at their nominal {nominal} level on "
                f"this design: {head}.")
    flagged = [str(m) for m in models[coverage.under_covering]]
    if flagged:
        shown = ", ".join(flagged[:8]) + (", ..." if len(flagged) > 8 else "")
        text += f" {len(flagged)} model(s) under-cover: {shown}."
    if coverage.covers:
        return text
    covering = [(label, cov, flags) for label, (cov, flags) in tried.items() if cov.covers]
    possible = [(label, cov, flags) for label, (cov, flags) in tried.items()
                if not cov.under_covers]
    if covering or possible:
        label, cov, flags = (covering or possible)[0]
        how = "covers" if covering else ("may cover (within Monte-Carlo error of the rule; "
                                         "more replications would tell)")
        return (text + f" The {label} {how}: marginal {_pct(cov.marginal)}%, simultaneous "
                f"{_pct(cov.simultaneous)}%; rerun with {flags}.")
    if tried:
        return text + (f" None of the other methods tried ({', '.join(tried)}) covers "
                       "either: read the intervals as too narrow.")
    return text + " Read the intervals as too narrow."


def _require_rows(log) -> None:
    """An error for an analysis that ran on an engine: the check simulates the log's own
    design (each comparison's prompt, judge and pair), which only a log in memory has."""
    from winrate.io.scan import Scan

    if isinstance(log, Scan):
        raise WinrateInputError(
            f"the coverage check simulates each comparison of the log, and this analysis ran "
            f"on {log.mode} ({log.reason}) without the rows in memory: check a sample of the "
            "log's prompts in memory (a design of the same shape), or analyse with engine "
            "'memory'")


def check_coverage(result, reps: int = 200, seed: int = 0, *, workers: int | None = None,
                   progress: bool | None = None, best: bool = False) -> CoverageCheck:
    """The coverage of ``result``'s intervals on its own design (module doc).

    ``result``: a :class:`winrate.analysis.LeaderboardAnalysis`. ``reps`` replications
    (at least 20) from ``seed``; ``workers`` processes (None: every usable core when the
    replications take more than a few seconds); ``progress`` as in :mod:`winrate.progress`.
    ``best``: run every other method of :data:`ALTERNATIVES` on the same replications
    whatever the chosen one gives, and report the narrowest (smallest mean marginal width)
    whose checked coverage meets the level (:func:`narrowest_covering`).
    """
    _check_arguments(reps, seed, workers)
    _require_rows(result.log)
    started = time.perf_counter()
    spec = _spec_of(result, int(seed))
    label = method_label(result.method, result.settings["correction"],
                         result.settings["reference"])
    if best and result.settings.get("method") == "auto":
        label = f"auto: {label}"  # its df may differ from the named method's
    outcomes, used, slow = run_replications(spec, int(reps), workers, progress, label)
    coverage = summarise([o[0] for o in outcomes], label, result.alpha)
    found = [*_model_notes(spec.model), *([slow] if slow else [])]
    tried = {}
    others = (alternatives(result, every=best) if (best or not coverage.covers)
              and coverage.reps else [])
    if others:
        tried, slow = _try_others(spec, others, int(reps), workers, progress)
        found.extend([slow] if slow else [])
    verdict = _verdict(coverage, tried, result.alpha, result.models)
    narrowest = narrowest_covering(coverage, tried) if best else None
    if best:
        verdict += _best_sentence(narrowest, coverage)
    found.extend(_coverage_notes(coverage, verdict, result.models))
    for note in found:
        if note.code != "check-slow-method":  # emitted when measured
            notes.emit(note)
    settings = {"estimator": spec.estimator, "scale": result.leaderboard.scale.to_dict(),
                "cluster": "+".join(spec.cluster) or "none", "method": label,
                "alpha": spec.alpha, "reps": int(reps), "seed": spec.seed,
                "n_draws": spec.n_draws}
    return CoverageCheck(result.models, result.scores, spec.truth, spec.model, coverage, tried,
                         settings, verdict, Notes(found), used, time.perf_counter() - started,
                         narrowest)


def narrowest_covering(coverage: Coverage, tried: dict) -> tuple | None:
    """Among the chosen method (``coverage``) and the others ``tried`` (label ->
    (Coverage, flags)), those whose checked coverage meets the level (marginal and
    simultaneous, :attr:`Coverage.covers`), the one with the smallest mean marginal width,
    as ``(label, Coverage, flags)`` (flags None for the chosen method); None if none covers.
    Widths are compared on the same replicated logs, so the choice reads the design only
    through them."""
    candidates = [(coverage.label, coverage, None),
                  *((label, cov, flags) for label, (cov, flags) in tried.items())]
    covering = [c for c in candidates if c[1].covers and np.isfinite(c[1].width)]
    return min(covering, key=lambda c: c[1].width) if covering else None


def _best_sentence(narrowest: tuple | None, coverage: Coverage) -> str:
    """The verdict's sentence on the narrowest covering method."""
    if narrowest is None:
        return " No method tried covers on this design: read the intervals as too narrow."
    label, cov, flags = narrowest
    head = (f" Narrowest method that covers on this design: the {label} (mean width "
            f"{cov.width:.4g}, marginal {_pct(cov.marginal)}%, simultaneous "
            f"{_pct(cov.simultaneous)}%)")
    if flags is None:
        return head + ", the method in use."
    return head + (f", against {coverage.width:.4g} for the {coverage.label}; rerun with "
                   f"{flags}.")


def _check_arguments(reps, seed, workers) -> None:
    def whole(value) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

    if not whole(reps) or reps < 20:
        raise WinrateInputError(f"reps must be a whole number >= 20, got {reps!r}")
    if not whole(seed) or seed < 0:
        raise WinrateInputError(f"seed must be a whole number >= 0, got {seed!r}")
    if workers is not None and (not whole(workers) or workers < 1):
        raise WinrateInputError(f"workers must be a whole number >= 1, got {workers!r}")


def _spec_of(result, seed: int) -> _Spec:
    """The fitted simulation model, its truth and the analysis to rerun."""
    design = _Design.of(result.log)
    with notes.gathered():  # the simulation model's fit: its notes are not the user's
        model = _fit(design, CALIBRATION_ROUNDS, CALIBRATION_DRAWS)
    variance, _, monte_carlo = result.requested or (Variance(), None, MonteCarlo())
    board = result.leaderboard
    return _Spec(design, model, pseudo_truth(result, model), board.estimator,
                 dict(board.options), tuple(result.clustering), (variance,), result.alpha,
                 min(monte_carlo.n_draws, CHECK_DRAWS), seed)


def _try_others(spec: _Spec, others: list, reps: int, workers, progress):
    """The same replications under each of ``others`` (:func:`alternatives`): their
    coverage by label (with the flags to rerun with) and the slow note or None."""
    spec = replace(spec, variances=tuple(variance for _, variance, _ in others))
    outcomes, _, slow = run_replications(spec, reps, workers, progress, "other methods")
    tried = {name: (summarise([o[i] for o in outcomes], name, spec.alpha), flags)
             for i, (name, _, flags) in enumerate(others)}
    return tried, slow


def _coverage_notes(coverage: Coverage, verdict: str, models) -> list[Note]:
    found = []
    if coverage.failed:
        found.append(notes.check_failed_replications(coverage.failed,
                                                     coverage.failed + coverage.reps))
    if coverage.under_covers:
        found.append(notes.check_under_covers(verdict,
                                              [str(m) for m in models[coverage.under_covering]]))
    return found


def _model_notes(model: SimulationModel) -> list[Note]:
    """What the simulation model simplifies, as ``check-simulation-model`` notes."""
    return notes.check_simulation_model(model.discretised, model.prior, model.calibrated,
                                        CALIBRATION_ROUNDS)


def _slow_note(label: str, seconds: float, reps: int, workers: int) -> Note:
    return notes.check_slow_method(label, seconds, reps, workers)

"""Semi-synthetic held-out generator: the real designs of the bundled logs, new outcomes.

For each bundled log (PRD, PandaLM, LLMFAO, QLoRA, AlpacaEval, read with
:func:`winrate.read_dataset`) the design -- every row's prompt, judge, and models in their
presentation order -- is kept exactly; only the outcomes are drawn afresh, from a model
fitted to that log::

    eta_r = theta_a - theta_b + beta + (u_pa - u_pb) + (v_ja - v_jb)     (a shown first)
    P(a wins) = sigma(eta_r - kappa),  P(b wins) = sigma(-eta_r - kappa),  tie otherwise

with ``u_pa ~ N(0, prompt_var)`` (model a's response to prompt p, shared by its comparisons
on p) and ``v_ja ~ N(0, judge_var)`` (judge j's taste for a). Fitting, in four steps:

1. **Marginal ordered logit** (no random effects): theta, beta, kappa by maximum likelihood
   on the counts of wins, ties and losses of each ordered pair (outcomes above 1/2 count as
   wins, below as losses: AlpacaEval's graded preferences are discretised), with a ridge
   penalty ``theta' theta / (2 * 4)`` that keeps theta finite when a model never lost (it
   moves well-measured abilities by little). ``beta`` is fitted only where at least
   :data:`MIN_BOTH_ORDERS` of the observed pairs appear in both orders (PRD, QLoRA,
   LLMFAO); elsewhere the order is confounded with the models (AlpacaEval puts the
   contestant first, PandaLM's pairs come in one order each) and beta = 0.
2. **Variance components by moments** of the residuals ``e_r = s_r - h(eta_r)``
   (``h`` the half-tie score, :func:`heldout.numerics.half_tie_logit`). Model a's residual
   in row r is ``+e_r`` (a first) or ``-e_r``; to first order two rows that share model a
   have ``E[e_ra e_r'a] = h'_r h'_r' [prompt_var 1(same p) + judge_var 1(same j)] (1 + 1(same
   opponent))`` (a shared opponent shares its effect too). Summing the products over the
   rows that share (prompt, model) and over those that share (judge, model) gives two linear
   equations in the two components, solved and truncated at 0 (:func:`moment_components`).
   With one judge, judge_var is not identified (the judge is fixed) and is 0.
3. **De-attenuation**: a marginal logit coefficient is about the conditional one shrunk by
   ``(1 + c^2 V)^(-1/2)``, ``V = 2 prompt_var + 2 judge_var``, ``c = 16 sqrt(3) / (15 pi)``
   (Zeger, Liang & Albert 1988, Biometrics 44(4)); theta, beta and kappa are scaled up by
   that factor so the synthetic win rates are close to the real ones. (An approximation:
   it only decides which model is simulated; the truth below is exact for that model.)
4. **Calibration** (indirect inference; Gourieroux, Monfort & Renault 1993, J. Appl.
   Econometrics 8(S1)). The first-order moments of step 2 are biased down (the residual
   covariance uses the attenuated slope, and the link is not linear): on a synthetic
   crossed log with components (0.5, 0.2) they gave about (0.29, 0.13). So the components
   are rescaled until the same steps 1-2, applied to logs drawn from the model on the same
   design, reproduce the real log's moment estimates (the mean over
   :data:`CALIBRATION_DRAWS` logs drawn with the same seed each round, so the simulated
   moment is a deterministic function of the components): a secant step on the log of
   each component per round, at most :data:`CALIBRATION_ROUNDS` rounds, until the log
   moments agree to :data:`CALIBRATION_TOLERANCE`, components capped at
   :data:`MAX_COMPONENT` (``OutcomeModel.calibrated`` says whether it converged); a
   component estimated at 0 stays 0.

In a baseline design (AlpacaEval) each contestant answers a prompt once, in one comparison,
so only the baseline's response effect is shared and identified: the baseline's response
gets the prompt component and the contestants' responses none (their variation is part of
the comparison noise). Giving the contestants the same variance would cap the correlation
of two contestants' outcomes on a prompt at 1/2, below what AlpacaEval shows.

Truth (exact for the fitted model): ``W = u_pa - u_pb + v_ja - v_jb ~ N(0, V_ab)`` with
``V_ab`` the sum of the two response variances and twice the judge component, so
``P_first(a, b) = E h(theta_a - theta_b + beta + sqrt(V_ab) Z)`` (Gauss-Hermite,
:func:`heldout.numerics.normal_expectation`). The order of every row is part of the fixed
design, so a pair's ``psi_ab`` is the mean over its rows, ``f_ab P_first(a, b) + (1 - f_ab)
(1 - P_first(b, a))`` with ``f_ab`` the share of the pair's rows that show a first (1/2 in
the arena-like design, whose order is drawn at random). AlpacaEval's style covariate is
kept as it is; the outcomes do not depend on it, and in a baseline design Bradley-Terry is
saturated (one pair per contestant), so ``(theta, gamma = 0)`` solves the covariate fit's
expected equations (each pair's residual has mean zero whatever its rows' x) and the
``bt_style`` truth is the ``bt`` truth.

**Arena-like design** (:class:`ArenaLike`). Chatbot Arena's bundled counts have no prompt
(or voter) ids, so its design cannot be kept: the arena-like design *invents its prompts*.
Each replication draws ``n_prompts`` prompts of 1-5 distinct pairs among the
``n_models`` models with the most battles, pairs drawn with probability proportional to
their bundled battle counts (a thinning of the arena's pair distribution), in random order
and with one judge. The abilities and the tie threshold are fitted to all 1.67 million
bundled battles (frequency-weighted; the bundled order is canonical, so beta = 0); the
prompt component cannot be estimated without prompts and is *borrowed*: the median of the
prompt components fitted to the five logs above.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from heldout.design import Design
from heldout.numerics import half_tie_logit, half_tie_logit_slope, normal_expectation
from heldout.sample import Sample, log_frame, truths

#: Share of observed pairs seen in both orders from which the position bias is fitted.
MIN_BOTH_ORDERS = 0.25
#: Indirect-inference calibration of the components (step 4): at most this many rounds,
#: logs per round, their seed, the tolerance on log moments and the largest component.
CALIBRATION_ROUNDS = 12
CALIBRATION_DRAWS = 4
CALIBRATION_SEED = 20260024
CALIBRATION_TOLERANCE = 0.02
MAX_COMPONENT = 25.0
RIDGE_VARIANCE = 4.0
ATTENUATION = 16 * np.sqrt(3) / (15 * np.pi)
#: Bundled logs whose designs are kept, with their read_dataset options and baseline.
DATASETS = {"prd": {}, "pandalm": {}, "llmfao": {}, "qlora": {},
            "alpaca_eval": {"baseline": "gpt4_1106_preview"}}
ARENA = "chatbot_arena"


@dataclass(frozen=True)
class OutcomeModel:
    """The fitted outcome model (module doc), on the conditional (de-attenuated) scale, and
    the marginal fit it came from. ``baseline``: the code of a baseline whose response is
    the only one with a variance (baseline designs, module doc), or None."""

    theta: np.ndarray
    beta: float
    kappa: float
    prompt_var: float
    judge_var: float
    marginal: tuple[np.ndarray, float, float]
    baseline: int | None = None
    calibrated: bool = True

    @property
    def response_var(self) -> np.ndarray:
        """Per model, the variance of its response effect."""
        if self.baseline is None:
            return np.full(self.theta.size, self.prompt_var)
        return np.where(np.arange(self.theta.size) == self.baseline, self.prompt_var, 0.0)

    @property
    def latent_var(self) -> np.ndarray:
        """(K, K) variance of ``W = u_pa - u_pb + v_ja - v_jb`` for each pair."""
        r = self.response_var
        return r[:, None] + r[None, :] + 2 * self.judge_var

    def first_win(self) -> np.ndarray:
        """``P_first(a, b)``: a's expected half-tie score when shown first (module doc)."""
        gap = self.theta[:, None] - self.theta[None, :] + self.beta
        return normal_expectation(lambda e: half_tie_logit(e, self.kappa), gap,
                                  np.sqrt(self.latent_var))

    def outcomes(self, rng, rows: dict[str, np.ndarray], n_prompts: int, n_judges: int):
        """Outcome codes (0 second wins, 1 tie, 2 first wins) of ``rows``."""
        k = self.theta.size
        u = np.sqrt(self.response_var) * rng.standard_normal((n_prompts, k))
        v = rng.normal(0.0, np.sqrt(self.judge_var), (n_judges, k))
        p, j, a, b = rows["prompt"], rows["judge"], rows["first"], rows["second"]
        eta = self.theta[a] - self.theta[b] + self.beta + u[p, a] - u[p, b] + v[j, a] - v[j, b]
        draw = rng.random(p.size)
        return np.where(draw < expit(eta - self.kappa), 2,
                        np.where(draw > 1 - expit(-eta - self.kappa), 0, 1))


def outcome_counts(first, second, score, weight, k: int) -> np.ndarray:
    """(3, K * K) weighted counts of wins, ties and losses of each ordered pair."""
    key = first * k + second
    return np.stack([np.bincount(key, weight * mask, k * k)
                     for mask in (score > 0.5, score == 0.5, score < 0.5)])


def fit_marginal(counts: np.ndarray, k: int, with_bias: bool):
    """Step 1 (module doc): ``(theta, beta, kappa)`` of the marginal ordered logit."""
    wins, ties, losses = counts
    seen = counts.sum(0) > 0
    first, second = np.divmod(np.flatnonzero(seen), k)
    wins, ties, losses = wins[seen], ties[seen], losses[seen]
    has_ties = ties.sum() > 0

    def loss(params):
        theta, beta, kappa = params[:k], params[k] * with_bias, params[k + 1] * has_ties
        eta = theta[first] - theta[second] + beta
        pa, pb = expit(eta - kappa), expit(-eta - kappa)
        tie = np.clip(expit(kappa - eta) - pb, 1e-300, None)
        value = (wins @ log_expit(eta - kappa) + losses @ log_expit(-eta - kappa)
                 + (ties @ np.log(tie) if has_ties else 0.0))
        d_eta = wins * (1 - pa) - losses * (1 - pb) + ties * (pb * (1 - pb) - pa * (1 - pa)) / tie
        d_kappa = (-wins * (1 - pa) - losses * (1 - pb)
                   + ties * (pa * (1 - pa) + pb * (1 - pb)) / tie) * has_ties
        grad = np.zeros(k + 2)
        grad[:k] = np.bincount(first, d_eta, k) - np.bincount(second, d_eta, k)
        grad[k], grad[k + 1] = d_eta.sum() * with_bias, d_kappa.sum()
        penalty = theta @ theta / (2 * RIDGE_VARIANCE)
        grad[:k] -= theta / RIDGE_VARIANCE
        return -(value - penalty), -grad

    start = np.r_[np.zeros(k + 1), 0.5]
    bounds = [(None, None)] * (k + 1) + [(1e-8, None)]
    result = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": 5000, "gtol": 1e-9})
    theta = result.x[:k]
    return theta - theta.mean(), float(result.x[k] * with_bias), float(result.x[k + 1] * has_ties)


def _product_sums(keys: list[np.ndarray], values: np.ndarray) -> float:
    """``sum over groups of (sum values)^2 - sum values^2``: the sum of products of values
    over the distinct ordered pairs of rows that share every one of ``keys`` (codes)."""
    code = np.zeros(values.size, np.int64)
    for key in keys:
        code = code * (int(key.max()) + 1) + key
    _, code = np.unique(code, return_inverse=True)
    total = np.bincount(code.ravel(), values)
    return float((total**2).sum() - (values**2).sum())


def moment_components(rows: dict[str, np.ndarray], residual, slope, judged: bool):
    """Step 2 (module doc): ``(prompt_var, judge_var)`` from residuals and slopes ``h'``."""
    model = np.r_[rows["first"], rows["second"]]
    other = np.r_[rows["second"], rows["first"]]
    p, j = np.tile(rows["prompt"], 2), np.tile(rows["judge"], 2)
    e, d = np.r_[residual, -residual], np.tile(slope, 2)

    def moments(keys):
        """(sum of e e', sum of h' h' (1 + same opponent)) over rows sharing ``keys``."""
        return (_product_sums([*keys, model], e),
                _product_sums([*keys, model], d) + _product_sums([*keys, model, other], d))

    e_p, a_pp = moments([p])
    if not judged:
        return max(e_p / a_pp, 0.0), 0.0
    e_j, a_jj = moments([j])
    _, a_pj = moments([p, j])
    matrix = np.array([[a_pp, a_pj], [a_pj, a_jj]])
    prompt_var, judge_var = np.linalg.solve(matrix, [e_p, e_j])
    if prompt_var < 0:
        return 0.0, max(e_j / a_jj, 0.0)
    if judge_var < 0:
        return max(e_p / a_pp, 0.0), 0.0
    return float(prompt_var), float(judge_var)


def _position_identified(rows) -> bool:
    """Whether at least :data:`MIN_BOTH_ORDERS` of the observed pairs come in both orders."""
    low = np.minimum(rows["first"], rows["second"])
    high = np.maximum(rows["first"], rows["second"])
    first_is_low = pd.Series(rows["first"] == low).groupby([low, high]).mean()
    return bool(((first_is_low > 0) & (first_is_low < 1)).mean() >= MIN_BOTH_ORDERS)


def raw_fit(rows, score, weight, k: int, judged: bool, with_bias: bool):
    """Steps 1-2 (module doc): the marginal ``(theta, beta, kappa)`` and the first-order
    moment estimates of the two components."""
    theta, beta, kappa = fit_marginal(
        outcome_counts(rows["first"], rows["second"], score, weight, k), k, with_bias)
    eta = theta[rows["first"]] - theta[rows["second"]] + beta
    discrete = np.where(score > 0.5, 1.0, np.where(score < 0.5, 0.0, 0.5))
    moments = moment_components(rows, discrete - half_tie_logit(eta, kappa),
                                half_tie_logit_slope(eta, kappa), judged)
    return (theta, beta, kappa), moments


def conditional_model(marginal, components, baseline: int | None = None,
                      calibrated: bool = True) -> OutcomeModel:
    """Step 3 (module doc): the marginal fit de-attenuated for these components."""
    theta, beta, kappa = marginal
    prompt_var, judge_var = components
    responses = prompt_var * (1 if baseline is not None else 2)
    scale = np.sqrt(1 + ATTENUATION**2 * (responses + 2 * judge_var))
    return OutcomeModel(scale * theta, scale * beta, scale * kappa, float(prompt_var),
                        float(judge_var), marginal, baseline, calibrated)


def fit_outcome_model(rows, score, weight, k: int, n_judges: int,
                      borrowed_prompt_var: float | None = None,
                      baseline: int | None = None) -> OutcomeModel:
    """Steps 1-4 (module doc) on a log's rows (codes), scores and frequency weights; with
    ``borrowed_prompt_var`` (a log without prompts) that prompt component and no judge
    component; ``baseline``: the baseline's code in a baseline design."""
    judged, with_bias = n_judges > 1, _position_identified(rows)
    marginal, raw = raw_fit(rows, score, weight, k, judged, with_bias)
    if borrowed_prompt_var is not None:
        return conditional_model(marginal, (borrowed_prompt_var, 0.0))
    n_prompts, ones = int(rows["prompt"].max()) + 1, np.ones(score.size)
    target = np.log(np.maximum(raw, 1e-300))
    active = np.asarray(raw) > 0
    log_c, previous, slope = target.copy(), None, np.ones(2)

    def simulated(log_components):
        """Steps 1-2 on logs drawn from the model (common random numbers)."""
        model = conditional_model(marginal, np.where(active, np.exp(log_components), 0.0),
                                  baseline)
        rng = np.random.default_rng(CALIBRATION_SEED)
        moments = np.mean([raw_fit(rows, model.outcomes(rng, rows, n_prompts, n_judges) / 2,
                                   ones, k, judged, with_bias)[1]
                           for _ in range(CALIBRATION_DRAWS)], axis=0)
        return np.log(np.maximum(moments, 1e-300))

    converged = not active.any()
    for _ in range(CALIBRATION_ROUNDS):
        if converged:
            break
        current = simulated(log_c)
        gap = np.where(active, target - current, 0.0)
        if np.abs(gap).max() < CALIBRATION_TOLERANCE:
            converged = True
            break
        if previous is not None:
            moved = log_c - previous[0]
            slope = np.where(np.abs(moved) > 1e-9, (current - previous[1])
                             / np.where(np.abs(moved) > 1e-9, moved, 1.0), slope)
            slope = np.clip(slope, 0.1, 1.0)
        previous = (log_c.copy(), current)
        log_c = np.minimum(log_c + np.clip(gap / slope, -np.log(4), np.log(4)),
                           np.log(MAX_COMPONENT))
    components = np.where(active, np.exp(log_c), 0.0)
    return conditional_model(marginal, components, baseline, converged)


def _log_rows(log) -> dict[str, np.ndarray]:
    n = log.n_rows
    axis = log.axes.get
    return {"prompt": axis("prompt").codes if axis("prompt") else np.zeros(n, int),
            "judge": axis("judge").codes if axis("judge") else np.zeros(n, int),
            "first": log.model_a, "second": log.model_b}


@cache
def _read(dataset: str):
    import warnings

    from winrate.io.datasets import read_dataset

    with warnings.catch_warnings():  # readers' notes about rows they dropped
        warnings.simplefilter("ignore")
        return read_dataset(dataset)


@dataclass(frozen=True)
class RealDesign:
    """A bundled log's design with outcomes from its fitted model (module doc)."""

    dataset: str

    @cached_property
    def log(self):
        return _read(self.dataset)

    @cached_property
    def rows(self) -> dict[str, np.ndarray]:
        return _log_rows(self.log)

    @property
    def baseline(self) -> str | None:
        return DATASETS[self.dataset].get("baseline")

    @cached_property
    def model(self) -> OutcomeModel:
        log = self.log
        base = (None if self.baseline is None
                else int(np.flatnonzero(log.models.astype(str) == self.baseline)[0]))
        return fit_outcome_model(self.rows, log.score, log.weight, log.n_models,
                                 _n_clusters(log, "judge"), baseline=base)

    @cached_property
    def psi(self) -> np.ndarray:
        """Design-order-weighted ``psi_ab`` (module doc)."""
        first, second = self.rows["first"], self.rows["second"]
        k = self.log.n_models
        shown_first = np.bincount(first * k + second, minlength=k * k).reshape(k, k)
        total = shown_first + shown_first.T
        share = np.divide(shown_first, total, out=np.full((k, k), 0.5), where=total > 0)
        p_first = self.model.first_win()
        return share * p_first + (1 - share) * (1 - p_first.T)

    @cached_property
    def _truth(self):
        names = self.log.models.astype(object)
        base = None if self.baseline is None else int(np.flatnonzero(names == self.baseline)[0])
        out = truths(self.psi, self.rows, names, base)
        if "style_length" in self.log.features:
            out["bt_style"] = out["bt"]  # saturated baseline design (module doc)
        return out

    @cached_property
    def rare(self) -> tuple[str, ...]:
        """The four models with the fewest comparisons."""
        log = self.log
        n = np.bincount(log.model_a, minlength=log.n_models) + np.bincount(
            log.model_b, minlength=log.n_models)
        if self.baseline is not None:
            n[log.models.astype(str) == self.baseline] = np.iinfo(int).max
        return tuple(str(m) for m in log.models[np.argsort(n, kind="stable")[:4]])

    def draw(self, seed) -> Sample:
        rng = np.random.default_rng(seed)
        log = self.log
        outcome = self.model.outcomes(rng, self.rows, max(_n_clusters(log, "prompt"), 1),
                                      max(_n_clusters(log, "judge"), 1))
        features = {name: values for name, values in log.features.items()}
        frame = log_frame(self.rows, outcome, log.models.astype(object), features)
        frame["prompt_id"] = _labels(log, "prompt", self.rows["prompt"])
        frame["judge_id"] = _labels(log, "judge", self.rows["judge"])
        return Sample(frame, self._truth, rare=self.rare, baseline=self.baseline,
                      covariates=tuple(features))


def _n_clusters(log, axis: str) -> int:
    return log.axes[axis].n_clusters if axis in log.axes else 1


def _labels(log, axis: str, codes) -> np.ndarray:
    if axis not in log.axes:
        return np.full(codes.size, f"{axis}-0", dtype=object)
    return np.asarray(log.axes[axis].labels, dtype=object)[codes]


@cache
def borrowed_prompt_var() -> float:
    """The median prompt component of the five kept designs (module doc)."""
    return float(np.median([RealDesign(name).model.prompt_var for name in DATASETS]))


@dataclass(frozen=True)
class ArenaLike:
    """The arena-like thinning of Chatbot Arena with invented prompts (module doc)."""

    n_models: int = 30
    n_prompts: int = 1000
    pairs_per_prompt: tuple[int, int] = (1, 5)

    @cached_property
    def _fit(self):
        log = _read(ARENA)
        rows = _log_rows(log)
        full = fit_outcome_model(rows, log.score, log.weight, log.n_models, 1,
                                 borrowed_prompt_var=borrowed_prompt_var())
        battles = np.bincount(log.model_a, log.weight, log.n_models) + np.bincount(
            log.model_b, log.weight, log.n_models)
        keep = np.sort(np.argsort(-battles, kind="stable")[:self.n_models])
        counts = np.zeros((log.n_models, log.n_models))
        np.add.at(counts, (log.model_a, log.model_b), log.weight)
        counts = (counts + counts.T)[np.ix_(keep, keep)]
        theta = full.theta[keep]
        model = OutcomeModel(theta - theta.mean(), 0.0, full.kappa, full.prompt_var, 0.0,
                             full.marginal)
        return model, counts, log.models[keep].astype(object)

    @property
    def model(self) -> OutcomeModel:
        return self._fit[0]

    @property
    def design(self) -> Design:
        return Design(self.n_models, self.n_prompts, self.pairs_per_prompt)

    @cached_property
    def psi(self) -> np.ndarray:
        p_first = self.model.first_win()
        return 0.5 * (p_first + 1 - p_first.T)

    @cached_property
    def rare(self) -> tuple[str, ...]:
        """The four models with the smallest share of the thinned battles."""
        _, counts, names = self._fit
        return tuple(str(m) for m in names[np.argsort(counts.sum(1), kind="stable")[:4]])

    def draw(self, seed) -> Sample:
        rng = np.random.default_rng(seed)
        model, counts, names = self._fit
        rows = self.design.draw(rng, pair_weights=counts)
        outcome = model.outcomes(rng, rows, self.n_prompts, 1)
        return Sample(log_frame(rows, outcome, names), truths(self.psi, rows, names),
                      rare=self.rare)

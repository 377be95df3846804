"""Bradley-Terry oracles (issue 8 acceptance): every number is checked against an independent
computation -- statsmodels GLM fits and cluster-robust covariances, direct scipy.optimize
maximisations, hand-written sandwiches, finite differences of refits, brute-force
delete-one-cluster and bootstrap refit loops -- on random unbalanced logs with ties, graded
outcomes, missing pairs, frequency weights, covariates and skewed clusters.

Conventions the oracles translate to:

* statsmodels fits the reference parameterisation (model 0's theta fixed at 0, its column
  dropped from the difference design ``e_a - e_b``); winrate centres theta and reports
  ``400 / ln 10 * theta + 1000``. The map ``A = 400 / ln 10 (I - 11'/K) E`` (``E`` puts back
  the zero of the reference model) carries statsmodels' covariance to winrate's, and
  covariate coefficients pass through unchanged.
* A tie (or a graded outcome s) is two rows of the binomial GLM: y = 1 with frequency
  weight ``f s`` and y = 0 with weight ``f (1 - s)``. Both halves share their prompt and
  judge, so cluster sums are unchanged; the row-independent (naive) covariance, which
  treats a row of frequency f as f independent comparisons, is instead compared with
  statsmodels' HC0 on the one-row-per-comparison fractional-outcome GLM with
  ``freq_weights`` (statsmodels divides each score by sqrt(f) there, so HC0 is exactly the
  expanded log's).
* Clustered CR1: winrate multiplies each inclusion-exclusion term by ``G / (G - 1)`` and
  omits statsmodels' regression factor ``(N - 1) / (N - K)`` (``use_correction=True`` in
  ``cov_cluster``), which counts design rows and has no meaning for a plug-in estimator
  (here it would even count the split tie rows). The oracle divides that factor out using
  statsmodels' own N (exog rows) and K (parameters). Two-way: ``V_p + V_j - V_pj`` on
  statsmodels' one-way pieces, each with its own G.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize as opt
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, log_expit, logsumexp

import winrate
from tests.note_codes import codes_of, warns_code
from winrate.analysis import analyze
from winrate.errors import WinrateInputError, WinrateWarning
from winrate.estimators import bradley_terry_kernels as bradley_terry
from winrate.io.logs import ComparisonLog
from winrate.settings import Variance
from winrate.variance import resampling
from winrate.variance.sandwich import cluster_cov, multiway_cluster_cov, naive_cov

ELO = 400 / np.log(10)
NAMES = np.array([f"m{i}" for i in range(8)])
FEATURES = ("length", "markdown")
RTOL = 1e-8


# ------------------------------------------------------------------ random logs


def bt_log(seed: int, n: int = 400, k: int = 6, *, n_cov: int = 0, drop_pair=(0, 4),
           tie_rate: float = 0.2, graded: float = 0.1, whole: bool = True,
           n_prompts: int = 30, n_judges: int = 5) -> ComparisonLog:
    """Unbalanced log drawn from a BT model: skewed model frequencies, ties, some graded
    outcomes in (0, 1), one pair never compared, frequency weights, raw (unstandardised)
    covariates, skewed prompt and judge clusters."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 0.7, k)
    popularity = 0.5 / k + 0.5 * rng.dirichlet(np.full(k, 2.0))
    a, b = rng.choice(k, (2, 4 * n), p=popularity)
    keep = a != b
    if drop_pair is not None:
        keep &= ~((np.minimum(a, b) == drop_pair[0]) & (np.maximum(a, b) == drop_pair[1]))
    a, b = a[keep][:n], b[keep][:n]
    x = rng.normal(size=(n, n_cov)) * rng.uniform(0.5, 3, n_cov) + rng.normal(0, 1, n_cov)
    beta = rng.normal(0, 0.5, n_cov)
    eta = theta[a] - theta[b] + (x - x.mean(0)) / x.std(0) @ beta
    score = (rng.random(n) < expit(eta)).astype(float)
    score[rng.random(n) < tie_rate] = 0.5
    grade = rng.random(n) < graded
    score[grade] = rng.random(grade.sum())
    freq = rng.integers(1, 4, n).astype(float) if whole else rng.uniform(0.3, 3, n)
    prompt = np.minimum(rng.geometric(1 / 6, n), n_prompts) - 1 + rng.integers(0, 3, n)
    judge_p = np.linspace(1, 3, n_judges)
    judge = rng.choice(n_judges, n, p=judge_p / judge_p.sum())
    return ComparisonLog.from_arrays(
        a, b, score, models=NAMES[:k], frequency=freq,
        features={FEATURES[j]: x[:, j] for j in range(n_cov)}, prompt=prompt, judge=judge)


def standardised(log: ComparisonLog, covariates) -> np.ndarray:
    """(x - mean) / sd with frequency-weighted mean and population sd (LMArena's style
    control, computed here independently of the module)."""
    f = log.weight
    cols = []
    for name in covariates:
        x = log.features[name]
        mean = (f * x).sum() / f.sum()
        cols.append((x - mean) / np.sqrt((f * (x - mean) ** 2).sum() / f.sum()))
    return np.column_stack(cols) if cols else np.empty((log.n_rows, 0))


def difference_design(log: ComparisonLog, covariates=()) -> np.ndarray:
    """Dense (n, K + C) rows ``(e_a - e_b, x_std)``."""
    z = np.zeros((log.n_rows, log.n_models))
    z[np.arange(log.n_rows), log.model_a] += 1.0
    z[np.arange(log.n_rows), log.model_b] -= 1.0
    return np.hstack([z, standardised(log, covariates)])


# ------------------------------------------------------------------ statsmodels oracle


class StatsmodelsBT:
    """BT as a binomial GLM on the difference design with model 0 as reference; ties and
    graded outcomes as two frequency-weighted rows (module doc)."""

    def __init__(self, log: ComparisonLog, covariates=(), frequency=None):
        self.k, self.c = log.n_models, len(covariates)
        z = difference_design(log, covariates)
        f = log.weight if frequency is None else frequency
        s = log.score
        exog = np.vstack([z, z])[:, 1:]
        weight = np.concatenate([f * s, f * (1 - s)])
        self.keep = weight > 0
        self.row = np.tile(np.arange(log.n_rows), 2)[self.keep]
        self.model = sm.GLM(np.repeat([1.0, 0.0], log.n_rows)[self.keep], exog[self.keep],
                            family=sm.families.Binomial(), freq_weights=weight[self.keep])

    def fit(self, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "cov_type not fully supported with freq_weights"
            return self.model.fit(tol=1e-14, tol_criterion="params", maxiter=200, **kw)

    def elo_map(self) -> np.ndarray:
        """``A``: reference-parameterised (params) -> centred Elo ratings and coefficients."""
        k, c = self.k, self.c
        embed = np.zeros((k, k - 1))
        embed[1:] = np.eye(k - 1)
        out = np.zeros((k + c, k - 1 + c))
        out[:k, :k - 1] = ELO * (np.eye(k) - 1.0 / k) @ embed
        out[k:, k - 1:] = np.eye(c)
        return out

    def estimates(self, params) -> np.ndarray:
        """Centred Elo ratings (mean 1000) then coefficients."""
        est = self.elo_map() @ params
        est[:self.k] += 1000.0
        return est

    def cluster(self, codes, correction: str) -> np.ndarray:
        """One-way cluster covariance on winrate's scale: CR0 (``use_correction=False``) or
        winrate's CR1 (statsmodels' CR1 with its ``(N - 1) / (N - K)`` divided out)."""
        res = self.fit(cov_type="cluster", cov_kwds={
            "groups": np.asarray(codes)[self.row], "use_correction": correction == "cr1"})
        cov = np.asarray(res.cov_params())
        if correction == "cr1":
            nobs, k_params = self.model.exog.shape
            cov *= (nobs - k_params) / (nobs - 1.0)
        a = self.elo_map()
        return a @ cov @ a.T

    def twoway(self, prompt, judge, correction: str) -> np.ndarray:
        """``V_p + V_j - V_pj`` on statsmodels' one-way pieces."""
        both = np.asarray(prompt) * (np.max(judge) + 1) + np.asarray(judge)
        return (self.cluster(prompt, correction) + self.cluster(judge, correction)
                - self.cluster(both, correction))


def assert_cov_close(actual, expected, rtol=RTOL):
    np.testing.assert_allclose(actual, expected, rtol=rtol,
                               atol=rtol * np.abs(expected).max())


def full_influence(board) -> np.ndarray:
    """(n, K + C) influence of every reported parameter: score rows times the bread."""
    return np.asarray(board.influence @ board.bread.T)


LOG_CASES = [  # (seed, covariates, whole frequencies)
    (1, (), True),
    (2, (), False),
    (3, ("length",), True),
    (4, ("length", "markdown"), False),
]


@pytest.fixture(params=LOG_CASES, ids=lambda c: f"seed{c[0]}-cov{len(c[1])}")
def case(request):
    seed, covariates, whole = request.param
    log = bt_log(seed, n_cov=2, whole=whole)
    return log, covariates, bradley_terry.fit(log, covariates=covariates)


# ------------------------------------------------------------------ 1. the MLE


def test_mle_equals_statsmodels_glm(case):
    log, covariates, board = case
    oracle = StatsmodelsBT(log, covariates)
    res = oracle.fit()
    expected = oracle.estimates(res.params)
    k = log.n_models
    np.testing.assert_allclose(board.scores, expected[:k], rtol=0, atol=1e-8)
    np.testing.assert_allclose(board.coef, expected[k:], rtol=0, atol=1e-8)
    theta = np.concatenate([[0.0], res.params[:k - 1]])
    np.testing.assert_allclose(board.fitted["theta"], theta - theta.mean(), atol=1e-10)
    np.testing.assert_allclose(board.scores, ELO * board.fitted["theta"] + 1000, atol=1e-10)
    assert board.unobserved_pairs == [("m0", "m4")]


def test_covariates_are_standardised_with_weighted_moments():
    log = bt_log(4, n_cov=2, whole=False)
    board = bradley_terry.fit(log, covariates=FEATURES)
    f = log.weight
    for name in FEATURES:
        x = log.features[name]
        mean = np.sum(f * x) / np.sum(f)
        moments = board.fitted["standardisation"][name]
        assert moments["mean"] == pytest.approx(mean, rel=1e-12)
        assert moments["sd"] == pytest.approx(np.sqrt(np.sum(f * (x - mean) ** 2) / np.sum(f)),
                                              rel=1e-12)
    # a coefficient on the standardised scale is sd times the raw-scale coefficient
    z = difference_design(log)[:, 1:]
    x_raw = np.column_stack([log.features[c] for c in FEATURES])
    x_centred = x_raw - (f[:, None] * x_raw).sum(0) / f.sum()
    exog = np.vstack([np.hstack([z, x_centred])] * 2)
    weight = np.concatenate([f * log.score, f * (1 - log.score)])
    fit = sm.GLM(np.repeat([1.0, 0.0], log.n_rows), exog, family=sm.families.Binomial(),
                 freq_weights=weight).fit(tol=1e-14, tol_criterion="params")
    sds = [board.fitted["standardisation"][c]["sd"] for c in FEATURES]
    np.testing.assert_allclose(board.coef, fit.params[-2:] * sds, atol=1e-8)


# ------------------------------------------------------------------ 2. covariances


@pytest.mark.parametrize("correction", ["none", "cr1"])
def test_clustered_covariance_equals_statsmodels(case, correction):
    log, covariates, board = case
    oracle = StatsmodelsBT(log, covariates)
    prompt, judge = log.axes["prompt"].codes, log.axes["judge"].codes
    one_way = cluster_cov(board.influence, prompt, correction, bread=board.bread)
    assert_cov_close(one_way, oracle.cluster(prompt, correction))
    two_way = multiway_cluster_cov(board.influence, [prompt, judge], correction,
                                   bread=board.bread)
    expected = oracle.twoway(prompt, judge, correction)
    signed = sum(sign * term for (_, _, sign), term in zip(two_way.terms, two_way.term_covs,
                                                            strict=True))
    assert_cov_close(signed, expected)
    if not two_way.psd_repaired:
        assert_cov_close(two_way.cov, expected)
    # the end-to-end analysis reports the same ratings block and coefficient block
    result = analyze(log, "prompt", model="bt", covariates=covariates,
                     variance=Variance(method="sandwich", correction=correction))
    k = log.n_models
    assert_cov_close(result.cov, oracle.cluster(prompt, correction)[:k, :k])
    if covariates:
        assert_cov_close(result.coefficients.cov, oracle.cluster(prompt, correction)[k:, k:])


@pytest.mark.parametrize("correction", ["none", "cr1"])
def test_naive_covariance_equals_statsmodels_hc0(case, correction):
    """Rows of frequency f are f independent comparisons: statsmodels' HC0 of the
    fractional-outcome GLM with freq_weights (one row per comparison). winrate's CR1 here is
    n / (n - 1) with n = sum f (statsmodels' HC1 would use n / (n - K))."""
    log, covariates, board = case
    z = difference_design(log, covariates)[:, 1:]
    oracle = StatsmodelsBT(log, covariates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.GLM(log.score, z, family=sm.families.Binomial(),
                     freq_weights=log.weight).fit(tol=1e-14, tol_criterion="params",
                                                  cov_type="HC0")
    a = oracle.elo_map()
    expected = a @ np.asarray(res.cov_params()) @ a.T
    n = log.weight.sum()
    if correction == "cr1":
        expected *= n / (n - 1)
    assert_cov_close(naive_cov(board.influence, correction, log.frequency, bread=board.bread),
                     expected)
    result = analyze(log, "none", model="bt", covariates=covariates,
                     variance=Variance(correction=correction))
    assert_cov_close(result.cov_naive, expected[:log.n_models, :log.n_models])


# ------------------------------------------------------------------ ridge prior


def penalised_fit(log: ComparisonLog, var: float, covariates=()) -> np.ndarray:
    """Direct maximisation of the penalised row log-likelihood over all K ratings (no
    constraint: the prior identifies them) and the coefficients."""
    z = difference_design(log, covariates)
    f, s, k = log.weight, log.score, log.n_models
    ridge = np.r_[np.full(k, 1 / var), np.zeros(len(covariates))]

    def loss(p):
        eta = z @ p
        return -(f * (s * log_expit(eta) + (1 - s) * log_expit(-eta))).sum() + (
            ridge * p * p).sum() / 2

    def grad(p):
        return -z.T @ (f * (s - expit(z @ p))) + ridge * p

    def hess(p):
        pi = expit(z @ p)
        return (z * (f * pi * (1 - pi))[:, None]).T @ z + np.diag(ridge)

    out = opt.minimize(loss, np.zeros(z.shape[1]), jac=grad, hess=hess, method="trust-exact",
                       options={"gtol": 1e-12})
    assert np.abs(grad(out.x)).max() < 1e-9
    return out.x


@pytest.mark.parametrize("covariates", [(), ("length",)])
def test_prior_fit_and_sandwich_equal_direct_computation(covariates):
    log = bt_log(5, n_cov=1)
    var = 0.3
    board = bradley_terry.fit(log, prior=var, covariates=covariates)
    params = penalised_fit(log, var, covariates)
    k = log.n_models
    np.testing.assert_allclose(board.fitted["theta"], params[:k], atol=1e-9)
    np.testing.assert_allclose(board.coef, params[k:], atol=1e-9)
    report = ELO * (np.eye(k) - 1 / k)
    np.testing.assert_allclose(board.scores, report @ params[:k] + 1000, atol=1e-7)
    # hand sandwich: R H^-1 M H^-1 R' with H including I / VAR and M from the data scores
    z = difference_design(log, covariates)
    f, s = log.weight, log.score
    pi = expit(z @ params)
    ridge = np.r_[np.full(k, 1 / var), np.zeros(len(covariates))]
    bread = np.linalg.inv((z * (f * pi * (1 - pi))[:, None]).T @ z + np.diag(ridge))
    full_map = np.eye(k + len(covariates))
    full_map[:k, :k] = report
    scores = z * (f * (s - pi))[:, None]
    prompt = log.axes["prompt"].codes
    totals = np.zeros((prompt.max() + 1, z.shape[1]))
    np.add.at(totals, prompt, scores)
    g = log.axes["prompt"].n_clusters
    expected = g / (g - 1) * full_map @ bread @ totals.T @ totals @ bread @ full_map.T
    assert_cov_close(cluster_cov(board.influence, prompt, "cr1", bread=board.bread), expected)
    naive = full_map @ bread @ (scores / f[:, None]).T @ scores @ bread @ full_map.T
    assert_cov_close(naive_cov(board.influence, "none", log.frequency, bread=board.bread),
                     naive)


# ------------------------------------------------------------------ 3. influence = FD


def _with_frequency(log: ComparisonLog, freq: np.ndarray) -> ComparisonLog:
    return ComparisonLog(log.model_a, log.model_b, log.score, log.models, log.axes, freq,
                         log.features)


def _estimates(board) -> np.ndarray:
    return np.concatenate([board.scores, board.coef])


def _central_difference(refit, freq: np.ndarray, row: int, step: float) -> np.ndarray:
    """``f_r d(estimate)/d f_r``: row r's influence is the push of its f_r comparisons."""
    up, down = freq.copy(), freq.copy()
    up[row] += step
    down[row] -= step
    return freq[row] * (refit(up) - refit(down)) / (2 * step)


FD_ROWS = (0, 7, 58, 211, 399)


@pytest.mark.parametrize("options", [{"ties": "half"}, {"ties": "davidson"},
                                     {"prior": 0.5}, {"ties": "davidson", "prior": 2.0},
                                     {"anchor": "m3=1200"}],
                         ids=["half", "davidson", "prior", "davidson-prior", "anchor"])
def test_influence_matches_finite_differences_of_refit(options):
    log = bt_log(6, tie_rate=0.25, graded=0.0 if options.get("ties") == "davidson" else 0.1,
                 whole=False)
    board = bradley_terry.fit(log, **options)
    influence = full_influence(board)

    def refit(freq):
        return _estimates(bradley_terry.fit(_with_frequency(log, freq), **options))

    for row in FD_ROWS:
        step = 1e-4 * log.weight[row]
        fd = _central_difference(refit, log.weight, row, step)
        np.testing.assert_allclose(influence[row], fd, rtol=0,
                                   atol=1e-6 * np.abs(influence).max())


def test_influence_with_covariates_matches_finite_differences_at_fixed_standardisation():
    """The influence holds the standardisation moments fixed: inference is conditional on
    the covariate scaling, as for any standardised regressor treated as fixed. winrate's own
    refit would re-standardise with the perturbed weights (a first-order change through the
    mean shift, which acts like an offset in the a-vs-b orientation), so the refit
    differentiated here is statsmodels' GLM on the design standardised once with the
    original moments (:class:`StatsmodelsBT` with perturbed frequencies)."""
    log = bt_log(7, n_cov=2, whole=False)
    board = bradley_terry.fit(log, covariates=FEATURES)
    influence = full_influence(board)

    def refit(freq):
        oracle = StatsmodelsBT(log, FEATURES, frequency=freq)
        return oracle.estimates(oracle.fit().params)

    for row in FD_ROWS[:3]:
        step = 1e-4 * log.weight[row]
        fd = _central_difference(refit, log.weight, row, step)
        np.testing.assert_allclose(influence[row], fd, rtol=0,
                                   atol=1e-6 * np.abs(influence).max())


# ------------------------------------------------------------------ 4. Davidson, anchors


def davidson_fit(log: ComparisonLog) -> np.ndarray:
    """Direct maximisation of Davidson's likelihood: outcomes (a, b, tie) are a softmax of
    logits ``(x, -x, delta)`` with ``x = (theta_a - theta_b) / 2`` (so ``P(tie) = nu / D``,
    ``D = e^x + e^-x + nu``); model 0 is the reference. Returns centred theta and delta."""
    k = log.n_models
    f, s = log.weight, log.score
    outcome = np.select([s == 1.0, s == 0.0], [0, 1], 2)
    onehot = np.eye(3)[outcome]
    z = difference_design(log)[:, 1:]

    def loss_grad(p):
        x = z @ p[:k - 1] / 2
        logits = np.column_stack([x, -x, np.full_like(x, p[-1])])
        logp = logits - logsumexp(logits, axis=1, keepdims=True)
        resid = f[:, None] * (onehot - np.exp(logp))
        d_x = resid[:, 0] - resid[:, 1]
        return -(f * logp[np.arange(len(x)), outcome]).sum(), -np.r_[z.T @ d_x / 2,
                                                                      resid[:, 2].sum()]

    start = opt.minimize(loss_grad, np.zeros(k), jac=True, method="BFGS").x
    # polish: solve the score equations (MINPACK hybrid method, to machine precision)
    root = opt.root(lambda p: loss_grad(p)[1], start, method="hybr", options={"xtol": 1e-15})
    assert np.abs(loss_grad(root.x)[1]).max() < 1e-9
    theta = np.r_[0.0, root.x[:k - 1]]
    return np.r_[theta - theta.mean(), root.x[-1]]


@pytest.mark.parametrize("seed", [8, 9])
def test_davidson_mle_equals_direct_maximisation(seed):
    log = bt_log(seed, tie_rate=0.3, graded=0.0, whole=bool(seed % 2))
    board = bradley_terry.fit(log, ties="davidson")
    expected = davidson_fit(log)
    np.testing.assert_allclose(board.fitted["theta"], expected[:-1], atol=1e-8)
    np.testing.assert_allclose(board.coef, expected[-1:], atol=1e-8)
    assert board.coef_names == ("tie: log nu (Davidson)",)


def test_davidson_rejects_graded_outcomes():
    with pytest.raises(WinrateInputError, match="graded"):
        bradley_terry.fit(bt_log(1, graded=0.2), ties="davidson")


def _contrast_variances(models, cov, all_models) -> np.ndarray:
    """Var(r_a - r_b) for every pair of the log's models; a model not reported (the
    baseline, whose rating is the fixed anchor) has variance 0."""
    index = {str(m): i for i, m in enumerate(models)}
    k = len(all_models)
    embed = np.zeros((k, len(models)))
    for j, name in enumerate(all_models):
        if str(name) in index:
            embed[j, index[str(name)]] = 1.0
    full = embed @ cov @ embed.T
    d = np.diag(full)
    return d[:, None] + d[None, :] - 2 * full


@pytest.mark.parametrize(("ties", "method"), [("half", "sandwich"), ("davidson", "sandwich"),
                                              ("half", "jackknife")])
def test_contrast_covariance_does_not_depend_on_anchor_or_baseline(ties, method):
    """Also for the two-way jackknife, whose inclusion-exclusion needs PSD repair on this
    log: it is combined and repaired in the canonical (centred) ratings, then mapped."""
    log = bt_log(10, graded=0.0)
    settings_list = [{}] + [{"anchor": f"{m}=1234.5"} for m in ("m0", "m3", "m5")] + [
        {"baseline": m} for m in ("m1", "m2")]
    reference = None
    for options in settings_list:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WinrateWarning)
            result = analyze(log, "prompt+judge", model="bt", ties=ties, variance=Variance(method),
                             **options)
        assert result.psd_repaired
        contrasts = _contrast_variances(result.models, result.cov, log.models)
        ratings = dict(zip(map(str, result.models), result.scores, strict=True))
        base = options.get("baseline")
        if base is not None:
            ratings[base] = 1000.0
        diffs = np.subtract.outer(*[np.array([ratings[str(m)] for m in log.models])] * 2)
        if reference is None:
            reference = contrasts, diffs
            assert np.all(np.diag(contrasts) == 0) and contrasts.max() > 0
            continue
        assert_cov_close(contrasts, reference[0], rtol=1e-9)
        np.testing.assert_allclose(diffs, reference[1], atol=1e-8)


def test_psd_repair_transforms_with_the_bread():
    """Regression: the two-way sum V_p + V_j - V_pj of this log is not PSD. Clipping the
    reported covariance made contrast variances depend on the anchor (up to 270 Elo^2 here);
    the meat is now repaired before the bread, so any reporting map T gives T V T'."""
    log = bt_log(10, graded=0.0)
    board = bradley_terry.fit(log)
    groups = [log.axes["prompt"].codes, log.axes["judge"].codes]
    with warns_code("psd-repaired"):
        base = multiway_cluster_cov(board.influence, groups, bread=board.bread)
    assert base.psd_repaired
    T = np.random.default_rng(0).normal(size=(3, board.bread.shape[0]))
    with warns_code("psd-repaired"):
        mapped = multiway_cluster_cov(board.influence, groups, bread=T @ board.bread)
    assert_cov_close(mapped.cov, T @ base.cov @ T.T, rtol=1e-10)
    for term, term_mapped in zip(base.term_covs, mapped.term_covs, strict=True):
        assert_cov_close(term_mapped, T @ term @ T.T, rtol=1e-10)


def test_anchored_model_has_zero_se_and_no_warning():
    log = bt_log(11)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", WinrateWarning)
        result = analyze(log, "prompt+judge", model="bt", anchor="m2=1200")
    assert "not-estimable" not in codes_of(caught)
    m2 = list(result.models).index("m2")
    assert result.scores[m2] == 1200.0
    assert result.se[m2] == 0.0 and result.se_naive[m2] == 0.0
    assert (np.delete(result.se, m2) > 0).all()
    assert "not-estimable" not in result.notes.codes and "m2" not in result.not_estimable
    assert result.settings["anchor"] == {"model": "m2", "rating": 1200.0}


# ------------------------------------------------------------------ 5. identification


def _log(pairs_scores, **kw):
    a, b, s = np.array(pairs_scores, dtype=float).T
    return ComparisonLog.from_arrays(a.astype(int), b.astype(int), s,
                                     models=np.array(["alpha", "beta", "gamma", "delta",
                                                      "eps"])[:int(max(a.max(), b.max())) + 1],
                                     **kw)


def test_disconnected_graph_names_components_even_with_prior():
    log = _log([(0, 1, 1), (1, 0, 1), (0, 1, 0.5), (2, 3, 1), (3, 2, 1), (3, 4, 0.5),
                (4, 2, 1), (2, 4, 0)])
    for prior in (None, 1.0):
        with pytest.raises(WinrateInputError,
                           match=r"2 disconnected components.*\{alpha, beta\}; "
                                 r"\{gamma, delta, eps\}"):
            bradley_terry.fit(log, prior=prior)


NEVER_LOST = [(0, 1, 1), (2, 0, 0), (0, 3, 1),  # alpha beats everyone, on either side
              (1, 2, 1), (2, 1, 1), (1, 2, 0.5), (2, 3, 1), (3, 1, 1), (1, 3, 0.5), (3, 2, 1)]
NEVER_WON = [(3, 1, 0), (2, 3, 1), (3, 0, 0),  # delta loses to everyone, on either side
             (0, 1, 0.5), (0, 2, 1), (2, 0, 1), (1, 2, 1), (2, 1, 1), (1, 2, 0.5)]


@pytest.mark.parametrize("rows, who, direction", [(NEVER_LOST, 0, "never lost"),
                                                   (NEVER_WON, 3, "never won")])
def test_infinite_mle_names_the_model_and_prior_rescues_it(rows, who, direction):
    log = _log(rows)
    name = log.models[who]
    with pytest.raises(WinrateInputError, match=rf"MLE is not finite: .*model {name} {direction}"):
        bradley_terry.fit(log)
    with warns_code("prior-dominates") as found:
        board = bradley_terry.fit(log, prior=1.0)
    assert f"model {name} {direction}" in found[0]  # the model whose rating the prior holds
    assert np.isfinite(board.scores).all()
    order = np.argsort(board.scores)
    assert order[-1 if direction == "never lost" else 0] == who


# ------------------------------------------------------------------ 6. resampling


def _refit_scores(log: ComparisonLog, freq: np.ndarray) -> np.ndarray:
    keep = freq > 0
    sub = ComparisonLog.from_arrays(log.model_a[keep], log.model_b[keep], log.score[keep],
                                    models=log.models, frequency=freq[keep])
    return bradley_terry.fit(sub).scores


@pytest.mark.parametrize("axis", ["prompt", "judge"])
def test_jackknife_equals_brute_force_delete_one_cluster(axis):
    log = bt_log(12, n=500, graded=0.0, n_prompts=20)
    board = bradley_terry.fit(log)
    codes = log.axes[axis].codes
    g = log.axes[axis].n_clusters
    reps = np.array([_refit_scores(log, log.weight * (codes != c)) for c in range(g)])
    centred = reps - reps.mean(axis=0)
    expected = (g - 1) / g * centred.T @ centred
    got = resampling.jackknife_cov(log, codes, board=board)
    assert got.undefined_replicates == 0
    assert_cov_close(got.cov, expected)
    result = analyze(log, axis, model="bt", variance=Variance("jackknife"))
    assert_cov_close(result.cov, expected)


def test_cluster_bootstrap_replicates_equal_brute_force_refits():
    log = bt_log(13, n=500, graded=0.05, whole=False, n_prompts=20)
    board = bradley_terry.fit(log)
    codes = log.axes["prompt"].codes
    g = log.axes["prompt"].n_clusters
    reps, seed = 4, 17
    draws = np.random.default_rng(seed).multinomial(g, np.full(g, 1 / g), size=reps)
    expected = np.array([_refit_scores(log, log.weight * draw[codes]) for draw in draws])
    got = resampling.cluster_bootstrap(log, [codes], reps=reps, seed=seed, board=board)
    assert got.n_dropped == 0
    np.testing.assert_allclose(got.replicates, expected, rtol=0, atol=1e-8)


# ------------------------------------------------------------------ 7. invariances


def _by_name(models, values) -> dict:
    return {str(m): v for m, v in zip(models, values, strict=True)}


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), perm_seed=st.integers(0, 2**31),
       with_covariate=st.booleans())
def test_ratings_and_covariance_invariant_to_order_labels_and_sides(seed, perm_seed,
                                                                    with_covariate):
    log = bt_log(seed, n=250, k=5, n_cov=1, n_prompts=15)
    covariates = ("length",) if with_covariate else ()
    rng = np.random.default_rng(perm_seed)
    rows = rng.permutation(log.n_rows)
    relabel = rng.permutation(log.n_models)  # old code -> new code
    names = np.empty(log.n_models, dtype=object)
    names[relabel] = log.models
    # swap a and b (score 1 - s, covariate difference -x): rows at random without
    # covariates; with them, every row, because the standardisation subtracts the mean of
    # the a-minus-b difference, which a partial swap changes (see the report to the lead)
    flip = rng.random(log.n_rows) < 0.5 if not with_covariate else np.ones(log.n_rows, bool)
    a, b = log.model_a[rows], log.model_b[rows]
    s, x = log.score[rows], log.features["length"][rows]
    transformed = ComparisonLog.from_arrays(
        relabel[np.where(flip, b, a)], relabel[np.where(flip, a, b)], np.where(flip, 1 - s, s),
        models=names.astype(str), frequency=log.weight[rows],
        features={"length": np.where(flip, -x, x)},
        prompt=log.axes["prompt"].codes[rows], judge=log.axes["judge"].codes[rows])
    results = [analyze(g, "prompt+judge", model="bt", covariates=covariates)
               for g in (log, transformed)]
    first, second = (_by_name(r.models, r.scores) for r in results)
    assert first.keys() == second.keys()
    for name in first:
        assert second[name] == pytest.approx(first[name], abs=1e-9)
    order = [list(map(str, results[1].models)).index(str(m)) for m in results[0].models]
    assert_cov_close(results[1].cov[np.ix_(order, order)], results[0].cov, rtol=1e-9)
    assert_cov_close(results[1].cov_naive[np.ix_(order, order)], results[0].cov_naive,
                     rtol=1e-9)
    if with_covariate:
        np.testing.assert_allclose(results[1].coefficients.estimate,
                                   results[0].coefficients.estimate, atol=1e-9)
        np.testing.assert_allclose(results[1].coefficients.se, results[0].coefficients.se,
                                   rtol=1e-9)


@pytest.mark.parametrize("extra, named", [
    (lambda x, rng: {"len2": x.copy()}, "'len2' is a linear combination of 'len'"),
    (lambda x, rng: {"len2": 3 * x - 1}, "'len2' is a linear combination of 'len'"),
    (lambda x, rng: {"noise": rng.normal(size=x.size), "len2": 2 * x + 0.5},
     "'len2' is a linear combination of 'len';"),
    (lambda x, rng: {"other": (o := rng.normal(size=x.size)), "sum": x - 2 * o},
     "'sum' is a linear combination of 'len' and 'other'"),
    (lambda x, rng: {"flat": np.full(x.size, 0.3)}, "'flat' is constant"),
])
def test_collinear_or_constant_covariates_are_a_one_line_error_naming_them(extra, named):
    """Equal columns, an affine copy, a copy beside an independent column, a sum of two and
    a constant column: a one-line input error naming the columns, before the Newton step
    (which otherwise stops on a singular information matrix)."""
    rng = np.random.default_rng(4)
    n = 400
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    x = rng.normal(size=n)
    features = {"len": x, **extra(x, rng)}
    log = ComparisonLog.from_arrays(a, b, (rng.random(n) < 0.5).astype(float),
                                    features=features, prompt=np.arange(n))
    with pytest.raises(WinrateInputError, match=named) as caught:
        winrate.fit(log, "bt", covariates=tuple(features))
    message = str(caught.value)
    assert "\n" not in message and "[" not in message and "{" not in message

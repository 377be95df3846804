"""Bradley-Terry with Rao and Kupper's tie threshold, on the Elo scale.

Model (Rao & Kupper 1967, "Ties in paired-comparison experiments: a generalization of the
Bradley-Terry model", JASA 62(317)). With ``eta = theta_a - theta_b`` and a threshold
``kappa > 0`` (their ``log theta``)::

    P(a wins) = expit(eta - kappa),   P(b wins) = expit(-eta - kappa),
    P(tie)    = 1 - P(a wins) - P(b wins)

It is the cumulative-logit model of three ordered outcomes with cut points ``-kappa`` and
``kappa`` (McCullagh 1980, JRSS B 42(2)), whose log-likelihood is concave in
``(theta, kappa)`` (Pratt 1981, JASA 76(373)), so Newton's method with step halving
(:func:`winrate.estimators.bradley_terry_kernels.newton_maximise`) finds the MLE from pair counts
of wins, losses and
ties. With ``u = kappa - eta``, ``v = -kappa - eta``, ``F = expit``, ``f = F (1 - F)`` and
``D = F(u) - F(v)`` the per-comparison derivatives are::

    d log P(a) / d(eta, kappa) = ( F(u),          -F(u) )
    d log P(b) / d(eta, kappa) = ( -(1 - F(v)),   -(1 - F(v)) )
    d log P(tie) / d(eta, kappa) = ( (f(v) - f(u)) / D,  (f(u) + f(v)) / D )

and the second derivatives follow from those in ``(u, v)`` by the chain rule
(``d2/d eta2 = h_uu + 2 h_uv + h_vv``, ``d2/d kappa2 = h_uu - 2 h_uv + h_vv``,
``d2/d eta d kappa = h_vv - h_uu``). Ratings are centred and reported as Bradley-Terry's
(``400 / ln 10 theta``, mean 1000 or the anchor); ``kappa`` is reported as a coefficient.
The score rows and the bread feed the same sandwich as every estimator; resampling refits
the rows. A log without ties has ``kappa = 0`` on the boundary and a log of ties only an
infinite one: both are errors that say to use ``bt``.
"""

from __future__ import annotations

from winrate.estimators.base import ELO, Estimator
from winrate.estimators.bradley_terry import ANCHOR, PRIOR, anchored, elo_description
from winrate.estimators.win_rate import BASELINE

COEFFICIENT = "tie threshold kappa (Rao-Kupper)"
_START_KAPPA = 1.0  # P(tie) = 0.46 between equal models: inside the domain kappa > 0


def _derivatives(eta, kappa):
    """Per comparison: first derivatives of log P(a), log P(b), log P(tie) in
    (eta, kappa), and second derivatives of each in (u, v) (module doc)."""
    import numpy as np
    from scipy.special import expit

    u, v = kappa - eta, -kappa - eta
    Fu, Fv = expit(u), expit(v)
    fu, fv = Fu * (1 - Fu), Fv * (1 - Fv)
    with np.errstate(divide="ignore", invalid="ignore"):
        D = Fu - Fv
        first = {"a": (Fu, -Fu), "b": (-(1 - Fv), -(1 - Fv)),
                 "tie": ((fv - fu) / D, (fu + fv) / D)}
        h_tie = ((fu * (1 - 2 * Fu)) / D - fu**2 / D**2,       # uu
                 -(fv * (1 - 2 * Fv)) / D - fv**2 / D**2,      # vv
                 fu * fv / D**2)                               # uv
    return D, first, (-fu, -fv, h_tie)


def _loglik(params, lo, hi, counts, k: int, prior: float):
    """Log-likelihood, gradient and information of pair counts ``(wins, losses, ties)`` of
    the lower-coded model (module doc), with the ridge prior of
    :func:`winrate.estimators.bradley_terry_kernels.ridge_penalised`."""
    import numpy as np
    from scipy.special import expit

    from winrate.estimators import bradley_terry_kernels as bt

    wins, losses, ties = counts
    theta, kappa = params[:k], params[k]
    eta = theta[lo] - theta[hi]
    D, first, (h_a, h_b, (t_uu, t_vv, t_uv)) = _derivatives(eta, kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = (wins * np.log(expit(eta - kappa))
                  + losses * np.log(expit(-eta - kappa))
                  + np.where(ties > 0, ties * np.log(D), 0.0)).sum()
    if not (kappa > 0 and np.isfinite(loglik)):
        return -np.inf, np.zeros(k + 1), np.eye(k + 1)
    g_eta = wins * first["a"][0] + losses * first["b"][0] + ties * first["tie"][0]
    g_kappa = wins * first["a"][1] + losses * first["b"][1] + ties * first["tie"][1]
    h_uu = wins * h_a + ties * t_uu
    h_vv = losses * h_b + ties * t_vv
    h_uv = ties * t_uv
    i_ee, i_kk, i_ek = -(h_uu + 2 * h_uv + h_vv), -(h_uu - 2 * h_uv + h_vv), -(h_vv - h_uu)
    grad = np.append(bt.incidence_sum(lo, hi, g_eta, k), g_kappa.sum())
    info = np.zeros((k + 1, k + 1))
    info[:k, :k] = bt.incidence_laplacian(lo, hi, i_ee, k)
    info[:k, k] = info[k, :k] = bt.incidence_sum(lo, hi, i_ek, k)
    info[k, k] = i_kk.sum()
    return bt.ridge_penalised(loglik, grad, info, params, prior, k)


def _score_rows(log, params, k: int):
    """(n, K + 1) CSR score rows ``f_r d log P(outcome_r) / d(theta, kappa)``."""
    import numpy as np

    from winrate.estimators import bradley_terry_kernels as bt

    lo, hi, s_lo = bt.low_orientation(log)
    eta = params[lo] - params[hi]
    _, first, _ = _derivatives(eta, params[k])
    outcome = {"a": s_lo == 1.0, "b": s_lo == 0.0, "tie": s_lo == 0.5}
    g_eta = sum(np.where(mask, first[name][0], 0.0) for name, mask in outcome.items())
    g_kappa = sum(np.where(mask, first[name][1], 0.0) for name, mask in outcome.items())
    f = log.weight
    return bt.rows_csr([lo, hi, np.full(lo.shape, k)],
                        [f * g_eta, -f * g_eta, f * g_kappa], k + 1)


def _check_ties(wins, losses, ties) -> None:
    from winrate.errors import WinrateInputError

    if not ties.sum() > 0:
        raise WinrateInputError("model 'rao-kupper' needs ties to estimate its tie threshold "
                                "and this log has none (the MLE is kappa = 0): use model 'bt'")
    if not (wins.sum() + losses.sum()) > 0:
        raise WinrateInputError("every comparison is a tie, so Rao-Kupper's tie threshold "
                                "is infinite and no rating is estimable")


class RaoKupper(Estimator):
    name = "rao-kupper"
    title = "Rao-Kupper"
    scale = ELO
    options = (BASELINE, ANCHOR, PRIOR)

    def fixed_models(self, board):
        return anchored(board)

    def fit(self, data, options: dict):
        import numpy as np

        from winrate.estimators import bradley_terry_kernels as bt
        from winrate.estimators import win_rate_kernels as kernels

        log = data.rows
        table = data.pair_table()
        psi, counts, _, pairs = table
        counts_wlt = data.outcome_counts("model 'rao-kupper'")
        _check_ties(*counts_wlt)
        k, names = log.n_models, log.models
        keep, anchor = np.arange(k), bt.parse_anchor(options["anchor"])
        if options["baseline"] is not None:
            base = kernels.baseline_code(log, options["baseline"], counts)
            anchor = anchor or (str(names[base]), bt.DEFAULT_RATING)
            keep = keep[keep != base]
        prior = options["prior"]
        precision = 0.0 if prior is None else 1.0 / prior
        bt.check_identified(log, counts, psi, precision, names)
        centred = precision == 0
        lo, hi = pairs[:, 0], pairs[:, 1]
        start = np.append(np.zeros(k), _START_KAPPA)
        params = bt.newton_maximise(lambda p: _loglik(p, lo, hi, counts_wlt, k, precision),
                                    k + 1, k, centred, "Rao-Kupper", start)
        if params[k] > bt.DIVERGED:
            _check_ties(np.zeros(1), np.zeros(1), np.ones(1))
        info = _loglik(params, lo, hi, counts_wlt, k, precision)[2]
        C, A, offset = bt.elo_maps(log, anchor, keep)
        full_map = np.zeros((len(keep) + 1, k + 1))
        full_map[:len(keep), :k] = A @ C
        full_map[len(keep), k] = 1.0
        pair, centered = bt.data_centred(log, table, *bt.low_orientation(log))
        return kernels.Leaderboard(
            models=names[keep], scores=A @ C @ params[:k] + offset, psi=psi, counts=counts,
            weights=None, influence=_score_rows(log, params, k), pair=pair, pairs=pairs,
            centered=centered, bread=full_map @ bt.inverse_information(info, k, centred),
            estimator=self.name, scale=self.scale, log_models=names, contestants=keep,
            canonical_map=C, reported_map=A, report_offset=offset,
            coef_names=(COEFFICIENT,), coef=params[k:],
            options={**options, "anchor": None if anchor is None else
                     {"model": anchor[0], "rating": anchor[1]}},
            fitted={"theta": params[:k], "kappa": params[k]})

    def describe(self, options: dict) -> str:
        head, _, rest = elo_description(options).partition(";")
        return f"Rao-Kupper, {head}; ties by a fitted threshold" + (f";{rest}" if rest else "")

    def settings(self, options: dict) -> dict:
        return {"baseline": options["baseline"], "anchor": options["anchor"],
                "prior": options["prior"]}


ESTIMATOR = RaoKupper()


def abilities_and_threshold(log, prior: float | None = None) -> tuple:
    """``(theta, kappa)``: abilities (L,) in natural units and the tie threshold of Rao and
    Kupper's model fitted to ``log`` with an optional ridge ``prior`` (module doc); where
    the threshold is not estimable (no ties: kappa = 0; only ties: infinite), Bradley-Terry's
    half-tie abilities and kappa = 0. An error when the abilities are not finite."""
    from winrate.estimators import bradley_terry
    from winrate.estimators.base import SufficientData

    weight = log.weight
    tied = float(weight[log.score == 0.5].sum())
    if 0 < tied < weight.sum():
        board = ESTIMATOR.fit(SufficientData(log), ESTIMATOR.settle({"prior": prior}))
        return board.fitted["theta"], float(board.fitted["kappa"])
    half_tie = bradley_terry.ESTIMATOR
    board = half_tie.fit(SufficientData(log), half_tie.settle({"prior": prior}))
    return board.fitted["theta"], 0.0

"""Real use: accuracy of the 29 MMLU-Pro models with naive and clustered SEs.

Reads the per-question correctness matrix through :func:`winrate.io.datasets.read_mmlu_pro`
and evaluates every model three times: questions independent (naive SE), clustered by the
original source subject ``src`` (91 clusters) and by ``category`` (14 clusters, so t with
13 df). Neighbouring models in the accuracy ranking are compared with paired SEs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from winrate import notes
from winrate.evals.frame import EvalReport, evaluate, question_scores_from_wide
from winrate.evals.report import number_cell, pct, render

CLUSTERINGS = ("src", "category")


@dataclass(frozen=True)
class ClusteringComparison:
    """One :class:`EvalReport` per clustering: ``reports["naive"]`` (no clusters) and one
    per cluster column, all on the same question-level scores; neighbour comparisons are in
    every report."""

    reports: dict[str, EvalReport]

    def score_rows(self, digits: int = 2) -> list[dict]:
        """Accuracy with the naive SE and the SE under each clustering."""
        naive = self.reports["naive"].models
        rows = []
        for model in sorted(naive, key=lambda m: -naive[m].summary.mean):
            s = naive[model].summary
            row = {"Model": model, "Accuracy": pct(s.mean, digits), "Questions": f"{s.n:,}",
                   "Naive SE": pct(s.se, digits)}
            for label, report in self.reports.items():
                if label != "naive":
                    c = report.models[model].summary
                    row[f"SE by {label} (G={c.n_clusters[0]})"] = pct(c.se, digits)
                    row[f"DEFF {label}"] = number_cell(c.deff, 1)
            rows.append(row)
        return rows

    def pair_rows(self, digits: int = 2) -> list[dict]:
        """Neighbouring models: difference, naive paired SE and clustered paired SEs."""
        first = next(iter(self.reports.values())).comparisons
        rows = []
        for i, comp in enumerate(first):
            p = comp.paired
            row = {"Model": comp.model_a, "Baseline": comp.model_b,
                   "Difference": pct(p.test.estimate, digits, sign=True),
                   "Paired SE": pct(p.se_paired, digits)}
            for label, report in self.reports.items():
                if label != "naive":
                    c = report.comparisons[i].paired
                    row[f"SE by {label}"] = pct(c.se, digits)
                    row[f"95% CI by {label}"] = (f"({pct(c.test.ci_low, digits, True)}, "
                                                 f"{pct(c.test.ci_high, digits, True)})")
            row["Correlation"] = f"{p.correlation:.2f}"
            row["Questions"] = f"{p.n:,}"
            rows.append(row)
        return rows

    def tables(self, fmt: str = "markdown", digits: int = 2) -> tuple[str, str]:
        return render(self.score_rows(digits), fmt), render(self.pair_rows(digits), fmt)


def mmlu_pro_clustered(
    data_dir=None, models=None, *, correction: str = "cr1", alpha: float = 0.05,
    quiet: bool = True, **fetch_options,
) -> ClusteringComparison:
    """Evaluate the MMLU-Pro correctness matrix naive, by ``src`` and by ``category``.

    Each report keeps its notes (14 categories are few clusters; one model did not answer
    every question, so its comparisons use the common questions); ``quiet=False`` also
    gives them as Python warnings (:func:`winrate.notes.give`).
    """
    from winrate.io.datasets import read_mmlu_pro

    data = read_mmlu_pro(data_dir, models, **fetch_options)
    qs = question_scores_from_wide(data.correctness, data.questions, list(CLUSTERINGS))
    variants = {"naive": replace(qs, clusters=qs.clusters[[]])}
    variants.update({col: replace(qs, clusters=qs.clusters[[col]]) for col in CLUSTERINGS})
    with notes.gathered() as found:
        naive = evaluate(variants["naive"], correction=correction, alpha=alpha, neighbours=True)
        pairs = [(c.model_a, c.model_b) for c in naive.comparisons]
        reports = {"naive": naive}
        for col in CLUSTERINGS:
            reports[col] = evaluate(variants[col], correction=correction, alpha=alpha,
                                    pairs=pairs)
    if not quiet:
        notes.give(found)
    return ClusteringComparison(reports)

"""The option values of winrate's estimators, variance methods, readers and eval statistics.

Plain tuples in a module that imports nothing, so that the command line can offer them as
``choices`` without loading numpy, pandas, scipy or numba (``winrate --help`` stays
instant). The module that implements an option imports its tuple from here under the same
name (``winrate.variance.sandwich.CORRECTIONS``, ``winrate.io.formats.LOG_FORMATS``, ...).
"""

#: Bradley-Terry tie models: ties as half wins, or Davidson's tie parameter.
TIE_MODELS = ("half", "davidson")
#: Small-sample corrections of clustered covariances: CR0, G/(G-1) per term, or CR2 (the
#: win rate's leverage correction, which needs the rows' strata).
CORRECTIONS = ("none", "cr1", "cr2")
#: The corrections that need no strata (per-question eval scores have none).
SCALAR_CORRECTIONS = ("none", "cr1")
DEFAULT_CORRECTION = "cr1"
#: Variance methods of :func:`winrate.analysis.analyze`; ``auto`` chooses from the design.
VARIANCE_METHODS = ("auto", "sandwich", "jackknife", "bootstrap")
#: Clusters on an axis below which a clustered SE is called rough (Cameron & Miller 2015,
#: sec. VI: with fewer, the sandwich's own noise matters).
FEW_CLUSTERS = 30
#: Monte-Carlo draws of the joint critical values (:mod:`winrate.inference`).
DEFAULT_DRAWS = 200_000
#: Rank confidence sets: each covers its model's rank, or all cover jointly.
RANK_METHODS = ("marginal", "simultaneous")
#: Default column of each role in a comparison log.
DEFAULT_COLUMNS = {
    "prompt": "prompt_id",
    "judge": "judge_id",
    "model_a": "model_a",
    "model_b": "model_b",
    "outcome": "outcome",
}
#: Bundled datasets of :func:`winrate.io.datasets.load`.
DATASET_NAMES = ("mmlu_pro", "llmfao", "pandalm", "chatbot_arena", "alpaca_eval", "qlora",
                 "prd")
#: The bundled datasets that are per-question evals (:data:`winrate.io.datasets.SCORE_DATASETS`).
SCORE_DATASET_NAMES = ("mmlu_pro",)
#: Published leaderboard formats of :func:`winrate.io.formats.read_log`.
LOG_FORMATS = ("alpaca_eval", "qlora", "prd", "clean_battle", "arena_hard", "arena",
               "mt_bench", "lm_eval", "inspect", "eee", "helm", "lighteval")
#: ``--format`` of per-question scores (one row per question and model), read as the
#: comparison log of every two models on every question (:func:`winrate.io.scores.scores_log`).
SCORES_FORMAT = "scores"
#: Per-question formats of ``winrate compare`` and ``winrate eval --format``
#: (:data:`winrate.io.runs.RUN_FORMATS`): the harness logs and plain score tables.
RUN_FORMATS = ("lm_eval", "inspect", "eee", "helm", "lighteval", SCORES_FORMAT)
#: Default columns of a per-question score table.
SCORE_COLUMNS = {"question": "question_id", "model": "model", "score": "score"}
#: Score scales of :func:`winrate.evals.question_scores`.
SCALES = ("auto", "binary", "unit", "other")
#: Interval methods for a binomial proportion (:func:`winrate.evals.binomial_interval`).
BINOMIAL_METHODS = ("wald", "wilson", "clopper-pearson", "jeffreys", "bayes")
#: Interval choices of :func:`winrate.evals.summarize_scores`.
INTERVALS = ("auto", *BINOMIAL_METHODS)
#: Printed table formats (:mod:`winrate.report.tables`): aligned text, a Markdown pipe table, or
#: a LaTeX booktabs tabular.
TABLE_FORMATS = ("text", "markdown", "latex")
#: Table formats of the eval-statistics reports (:mod:`winrate.evals.report`): also raw CSV.
EVAL_FORMATS = (*TABLE_FORMATS, "csv")

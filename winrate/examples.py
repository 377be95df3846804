"""``winrate example [DIR]``: write the small example inputs the README's commands use.

Every file is generated from a fixed seed, so the same bytes come out on every run (the
README's outputs depend on it):

* ``example.csv``: a comparison log simulated by :func:`winrate.io.simulate.simulate_comparisons`
  (5 models, 120 prompts, 30 judges, seed 7): ``prompt_id, judge_id, model_a, model_b,
  outcome``.
* ``scores.csv``: per-question 0/1 scores of three models on 400 questions, one row per
  answer (``question_id, src, category, model, correct``). Questions lie in 20 subjects
  (``src``), four to each of 5 categories. The score follows a logistic item-response
  model with clustered difficulty::

      P(correct) = expit(ability_m - b_q),  b_q = u_category + v_src + w_q,
      u ~ N(0, 0.5^2), v ~ N(0, 0.8^2), w ~ N(0, 1)

  (the Rasch model of item-response theory, with difficulties nested in subjects; abilities
  0.6, 0.3 and -0.2 for ``model-a``, ``model-b``, ``model-c``).
* ``pilot.csv``: a pilot of two models answering 150 questions four times each
  (``q, topic, m, s``), for ``winrate power --pilot``: per question a latent mean
  ``expit(ability_m - b_q)`` with ``b_q = v_topic + w_q`` (10 topics), and each of the four
  answers a Bernoulli draw from it, so the answers carry within-question variance
  ``sigma^2`` as well as the between-question ``omega^2`` (Miller 2024, sec. 4).
"""

from __future__ import annotations

import argparse
from pathlib import Path

WORKED_SEED = 7
_SCORES_SEED = 11
_PILOT_SEED = 13


def _comparisons():
    """The worked example's comparison log (module docstring) and a one-line description."""
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    design = SimulationDesign(n_models=5, n_prompts=120, n_judges=30)
    frame = simulate_comparisons(design, seed=WORKED_SEED).frame()
    return frame, (f"{len(frame):,} comparisons of {design.n_models} models on "
                   f"{design.n_prompts} prompts by {design.n_judges} judges (simulated, "
                   f"seed {WORKED_SEED})")


def _rasch(abilities, difficulty):
    """(models, questions) success probabilities ``expit(ability - difficulty)``."""
    from scipy.special import expit

    return expit(abilities[:, None] - difficulty[None, :])


def _scores():
    """Per-question scores of three models (module docstring) and a description."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(_SCORES_SEED)
    n_questions, n_src, n_category = 400, 20, 5
    src = rng.integers(0, n_src, n_questions)
    category = src % n_category  # every subject lies in one category
    difficulty = (rng.normal(0, 0.5, n_category)[category] + rng.normal(0, 0.8, n_src)[src]
                  + rng.normal(0, 1.0, n_questions))
    models = np.array(["model-a", "model-b", "model-c"])
    p = _rasch(np.array([0.6, 0.3, -0.2]), difficulty)
    correct = (rng.random(p.shape) < p).astype(int)
    frame = pd.DataFrame({
        "question_id": np.tile(np.arange(n_questions), len(models)),
        "src": np.tile([f"src-{s:02d}" for s in src], len(models)),
        "category": np.tile([f"category-{c}" for c in category], len(models)),
        "model": np.repeat(models, n_questions),
        "correct": correct.ravel(),
    })
    return frame, (f"{len(frame):,} answers (0/1) of {len(models)} models to {n_questions} "
                   f"questions in {n_src} subjects (src) and {n_category} categories")


def _pilot():
    """A pilot with four answers per question (module docstring) and a description."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(_PILOT_SEED)
    n_questions, n_topics, k = 150, 10, 4
    topic = rng.integers(0, n_topics, n_questions)
    difficulty = rng.normal(0, 0.7, n_topics)[topic] + rng.normal(0, 1.0, n_questions)
    models = np.array(["A", "B"])
    p = _rasch(np.array([0.4, 0.1]), difficulty)  # (models, questions)
    answers = (rng.random((*p.shape, k)) < p[..., None]).astype(int)  # (models, q, k)
    frame = pd.DataFrame({
        "q": np.tile(np.repeat(np.arange(n_questions), k), len(models)),
        "topic": np.tile(np.repeat([f"topic-{t}" for t in topic], k), len(models)),
        "m": np.repeat(models, n_questions * k),
        "s": answers.ravel(),
    })
    return frame, (f"{len(frame):,} answers of models A and B, {k} to each of {n_questions} "
                   f"questions in {n_topics} topics")


#: File name -> generator of (frame, description).
EXAMPLES = {"example.csv": _comparisons, "scores.csv": _scores, "pilot.csv": _pilot}


def write_examples(folder=".", force: bool = False) -> dict[Path, str]:
    """Write every example file into ``folder`` (created if missing); returns each path
    with its description. A different file already there is an error unless ``force``."""
    from winrate.errors import WinrateInputError

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise WinrateInputError(f"{folder} is not a folder")
    texts = {}
    for name, make in EXAMPLES.items():
        frame, description = make()
        texts[folder / name] = (frame.to_csv(index=False, lineterminator="\n"), description)
    clashes = [str(p) for p, (text, _) in texts.items()
               if p.exists() and p.read_text(encoding="utf-8") != text]
    if clashes and not force:
        raise WinrateInputError(f"{', '.join(clashes)} already exist(s) with other content; "
                                "give another folder, or force=True to overwrite")
    from winrate.report.output import write_text

    folder.mkdir(parents=True, exist_ok=True)
    for path, (text, _) in texts.items():
        write_text(path, text)
    return {path: description for path, (_, description) in texts.items()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument("folder", nargs="?", default=".", metavar="DIR",
                       help="where to write the files (default: here)")
    group.add_argument("--force", action="store_true",
                       help="overwrite example files that differ from the generated ones")


def run(args: argparse.Namespace) -> int:
    """Write the README's example inputs (example.csv, scores.csv, pilot.csv) into DIR."""
    for path, description in write_examples(args.folder, args.force).items():
        print(f"wrote {path}: {description}")
    return 0


COMMANDS = {"example": (add_arguments, run)}

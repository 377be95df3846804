"""Held-out coverage study: generators that share no code with :mod:`winrate.io.simulate`.

The project's own grid (:mod:`winrate.io.simulate`, ``scripts/coverage.py``'s grid and design
cells) tuned ``method="auto"``; this package is the held-out set pre-registered in
``docs/coverage.md``:

* :mod:`heldout.thurstone`: a probit (Thurstone) latent with judge-specific tie margins and
  noise, and a heavy-tailed (t with 3 df) prompt difficulty that loads on each model;
* :mod:`heldout.shared`: a logistic latent with one response per model and prompt reused by
  every comparison of that prompt (a skewed, model-specific response effect), a style
  covariate, judge x model interactions and position bias;
* :mod:`heldout.semi`: the real designs of the bundled logs (and an arena-like thinning of
  Chatbot Arena's counts, with invented prompts) with outcomes from a model fitted to each;
* :mod:`heldout.design` draws designs, :mod:`heldout.truth` computes the estimands
  (win rate over the opponents met, Bradley-Terry pseudo-true ratings), :mod:`heldout.numerics`
  the expectations they need, :mod:`heldout.cells` lists the cells and :mod:`heldout.study`
  runs them (``python scripts/coverage.py --held-out``).

Nothing here imports :mod:`winrate.io.simulate`; the study imports winrate only to analyse.
"""

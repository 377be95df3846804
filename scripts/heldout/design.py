"""Comparison designs: which models meet on which prompt, judged by whom, in which order.

A :class:`Design` draws, for each prompt, a number of *distinct* model pairs (fixed, uniform
on a range, or every pair), each compared once, by a judge drawn uniformly, with the first
position given to either model with probability 1/2. Pairs are drawn without replacement
with probability proportional to ``pop_a pop_b`` (``pop = rare_weight`` for a rare model, 1
otherwise) or to a given pair-weight matrix, by Gumbel top-k sampling: the m largest of
``log w_pair + G``, ``G`` standard Gumbel, are a weighted draw of m pairs without
replacement (successive sampling; Efraimidis & Spirakis 2006, Inf. Process. Lett. 97(5)).
In a baseline design the last model is the baseline and each prompt compares that many
distinct contestants (drawn the same way, weights ``pop_a``) with it.

Rare models are spread over the ability order (:func:`rare_indices`), not all at one end.

Heavy-tailed prompt sizes (issue 37, :class:`Sizes`): a prompt's number of comparisons is
``max(1, round(mean X / E X))`` with ``X`` Pareto (type I, ``x_m = 1``, shape alpha:
``E X = alpha / (alpha - 1)``) or lognormal (``exp(sigma Z)``, ``E X = exp(sigma^2 / 2)``),
so a few prompts carry most rows; ``dominant = s`` then resizes prompt 0 to carry the
share s of all rows (``n_0 = round(s / (1 - s) sum_{p > 0} n_p)``). Such designs draw a
prompt's pairs independently (``distinct=False``), so a large prompt repeats pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def rare_indices(n_models: int, n_rare: int) -> np.ndarray:
    """``floor((i + 1/2) K / r)`` for ``i < r``: rare models spread evenly over the K
    ability ranks (model 0 the strongest)."""
    return ((np.arange(n_rare) + 0.5) * n_models / max(n_rare, 1)).astype(int)


@dataclass(frozen=True)
class Sizes:
    """Heavy-tailed prompt sizes (module doc): ``law`` ``"pareto"`` (``shape`` alpha) or
    ``"lognormal"`` (``shape`` sigma), mean ``mean`` comparisons per prompt, and the
    ``dominant`` share of all rows given to prompt 0 (0: none)."""

    law: str
    shape: float
    mean: float
    dominant: float = 0.0

    def draw(self, rng, n_prompts: int) -> np.ndarray:
        if self.law == "pareto":
            x = (1.0 - rng.random(n_prompts)) ** (-1.0 / self.shape)  # inverse CDF
            expected = self.shape / (self.shape - 1.0)
        elif self.law == "lognormal":
            x = np.exp(self.shape * rng.standard_normal(n_prompts))
            expected = np.exp(self.shape**2 / 2)
        else:
            raise ValueError(f"unknown size law {self.law!r}")
        sizes = np.maximum(1, np.rint(self.mean * x / expected)).astype(np.int64)
        if self.dominant > 0:
            sizes[0] = max(1, round(self.dominant / (1 - self.dominant) * sizes[1:].sum()))
        return sizes


@dataclass(frozen=True)
class Design:
    """``n_models`` contestants (plus a baseline when ``baseline``), ``n_prompts`` prompts,
    ``pairs_per_prompt`` comparisons per prompt (an int, an inclusive ``(low, high)`` range
    drawn uniformly per prompt, heavy-tailed :class:`Sizes`, or None for every pair),
    ``n_judges`` judges, ``rare_models`` rare models drawn ``rare_weight`` times as often;
    ``distinct=False`` draws a prompt's pairs independently (with replacement), so a pair
    can recur on it."""

    n_models: int
    n_prompts: int
    pairs_per_prompt: int | tuple[int, int] | Sizes | None
    n_judges: int = 1
    rare_models: int = 0
    rare_weight: float = 0.2
    baseline: bool = False
    distinct: bool = True

    @property
    def n_total(self) -> int:
        """Models in the log: the contestants and the baseline."""
        return self.n_models + int(self.baseline)

    def popularity(self) -> np.ndarray:
        pop = np.ones(self.n_models)
        pop[rare_indices(self.n_models, self.rare_models)] = self.rare_weight
        return pop

    def candidate_pairs(self, pair_weights: np.ndarray | None = None):
        """The (C, 2) candidate pairs (low, high) and their draw weights."""
        if self.baseline:
            contestants = np.arange(self.n_models)
            pairs = np.column_stack([contestants, np.full(self.n_models, self.n_models)])
            return pairs, self.popularity()
        low, high = np.triu_indices(self.n_models, k=1)
        if pair_weights is None:
            pop = self.popularity()
            weights = pop[low] * pop[high]
        else:
            weights = np.asarray(pair_weights, float)[low, high]
        keep = weights > 0
        return np.column_stack([low[keep], high[keep]]), weights[keep]

    def prompt_sizes(self, rng, n_candidates: int) -> np.ndarray:
        if self.pairs_per_prompt is None:
            return np.full(self.n_prompts, n_candidates)
        if isinstance(self.pairs_per_prompt, Sizes):
            return self.pairs_per_prompt.draw(rng, self.n_prompts)
        if isinstance(self.pairs_per_prompt, tuple):
            low, high = self.pairs_per_prompt
            return rng.integers(low, high + 1, self.n_prompts)
        return np.full(self.n_prompts, self.pairs_per_prompt)

    def draw(self, rng, pair_weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """``prompt``, ``judge``, ``first``, ``second`` codes of every comparison."""
        pairs, weights = self.candidate_pairs(pair_weights)
        if self.distinct:
            sizes = np.minimum(self.prompt_sizes(rng, len(pairs)), len(pairs))
            keys = np.log(weights)[None, :] + rng.gumbel(size=(self.n_prompts, len(pairs)))
            rank = np.argsort(np.argsort(-keys, axis=1, kind="stable"), axis=1, kind="stable")
            prompt, chosen = np.nonzero(rank < sizes[:, None])
        else:
            prompt = np.repeat(np.arange(self.n_prompts), self.prompt_sizes(rng, len(pairs)))
            chosen = rng.choice(len(pairs), prompt.size, p=weights / weights.sum())
        n = prompt.size
        swap = rng.random(n) < 0.5
        low, high = pairs[chosen, 0], pairs[chosen, 1]
        return {"prompt": prompt, "judge": rng.integers(0, self.n_judges, n),
                "first": np.where(swap, high, low), "second": np.where(swap, low, high)}

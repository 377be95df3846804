"""The pre-registered held-out cells (``docs/coverage.md``): generator, design, estimators.

Each :class:`Cell` names a generator instance and the estimators analysed on its logs
(``winrate``: the half-tie win rate; ``bt``: Bradley-Terry ratings; ``bt_style``:
Bradley-Terry with the log's style covariate), every one by ``winrate.analyze``'s defaults.
``acceptance`` is False for the cells whose default clustering has an axis with fewer than
30 clusters (reported; there the output must say the intervals are rough).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from heldout.design import Design, Sizes
from heldout.semi import ArenaLike, RealDesign
from heldout.shared import SharedResponses
from heldout.thurstone import Thurstone

BOTH = ("winrate", "bt")
ALL = ("winrate", "bt", "bt_style")
#: The seed base of the issue-24 cells, and of the heavy-tailed cells of issue 37 (a new
#: pre-registration, ``docs/coverage.md``, "Issue 37"): their replications draw from
#: ``SeedSequence([base, crc32(key), r])``.
HELD_OUT_SEED = 20260024
HEAVY_SEED = 20260037
#: The methods each heavy-tailed cell also runs, for their widths and marginal coverage:
#: the old default (CR1 with a normal reference) and CR2 with its small-sample t (Pan-Wall
#: df, winrate's Bell-McCaffrey-type Satterthwaite df; the win rate only).
COMPARE = ("cr1_normal", "cr2_t")


@dataclass(frozen=True)
class Cell:
    key: str
    kind: str
    label: str
    generator: object
    estimators: tuple[str, ...]
    acceptance: bool = True
    seed: int = HELD_OUT_SEED
    compare: tuple[str, ...] = ()
    #: the acceptance rule's simultaneous limit (percent): 92 (issue 24), 90 (issue 37)
    rule_simultaneous: float = 92.0


@cache
def held_out_cells() -> tuple[Cell, ...]:
    """Every held-out cell, in the order of ``docs/coverage.md``."""
    return (
        Cell("T-thin-3", "thurstone", "20 models, 3 pairs/prompt, 300 prompts, 4 rare, 1 judge",
             Thurstone(Design(20, 300, 3, 1, 4)), BOTH),
        Cell("T-thin-1", "thurstone", "20 models, 1 pair/prompt, 600 prompts, 4 rare, 1 judge",
             Thurstone(Design(20, 600, 1, 1, 4)), BOTH),
        Cell("T-thin-mixed", "thurstone",
             "20 models, 1-5 pairs/prompt, 300 prompts, 4 rare, 1 judge",
             Thurstone(Design(20, 300, (1, 5), 1, 4)), BOTH),
        Cell("T-thin-50", "thurstone",
             "50 models, 5 pairs/prompt, 1000 prompts, 10 rare, 1 judge",
             Thurstone(Design(50, 1000, 5, 1, 10)), BOTH),
        Cell("T-crossed", "thurstone", "8 models, 20 pairs/prompt, 100 prompts x 30 judges",
             Thurstone(Design(8, 100, 20, 30)), BOTH),
        Cell("T-crossed-thin", "thurstone",
             "20 models, 3 pairs/prompt, 300 prompts x 30 judges, 4 rare",
             Thurstone(Design(20, 300, 3, 30, 4)), BOTH),
        Cell("S-thin-3", "shared", "20 models, 3 pairs/prompt, 300 prompts, 4 rare, 1 judge",
             SharedResponses(Design(20, 300, 3, 1, 4)), ALL),
        Cell("S-thin-mixed", "shared",
             "20 models, 1-5 pairs/prompt, 600 prompts, 4 rare, 1 judge",
             SharedResponses(Design(20, 600, (1, 5), 1, 4)), ALL),
        Cell("S-dense", "shared", "8 models, every pair on each of 100 prompts x 30 judges",
             SharedResponses(Design(8, 100, None, 30)), ALL),
        Cell("S-small", "shared", "8 models, every pair on each of 30 prompts x 30 judges",
             SharedResponses(Design(8, 30, None, 30)), ALL),
        Cell("S-crossed-thin", "shared",
             "20 models, 3 pairs/prompt, 300 prompts x 30 judges, 4 rare",
             SharedResponses(Design(20, 300, 3, 30, 4)), ALL),
        Cell("S-baseline-thin", "shared",
             "20 contestants vs a baseline, 3 per prompt, 300 prompts x 30 judges, 4 rare",
             SharedResponses(Design(20, 300, 3, 30, 4, baseline=True)), ALL),
        Cell("S-baseline-full", "shared",
             "10 contestants vs a baseline, all on each of 200 prompts, 1 judge",
             SharedResponses(Design(10, 200, None, 1, baseline=True)), ALL),
        Cell("R-prd", "semi-synthetic", "PRD design (80 prompts x 6 judges, 9 models)",
             RealDesign("prd"), BOTH, acceptance=False),
        Cell("R-pandalm", "semi-synthetic", "PandaLM design (170 prompts x 5 judges, 5 models)",
             RealDesign("pandalm"), BOTH, acceptance=False),
        Cell("R-llmfao", "semi-synthetic",
             "LLMFAO design (13 prompts x 126 judges, 59 models)",
             RealDesign("llmfao"), BOTH, acceptance=False),
        Cell("R-qlora", "semi-synthetic", "QLoRA design (80 prompts, 1 judge, 8 models)",
             RealDesign("qlora"), BOTH),
        Cell("R-alpaca", "semi-synthetic",
             "AlpacaEval design (805 prompts, 1 judge, 58 models vs a baseline)",
             RealDesign("alpaca_eval"), ALL),
        Cell("R-arena", "semi-synthetic",
             "arena-like: 30 models, 1-5 pairs on each of 1000 invented prompts, 1 judge",
             ArenaLike(), BOTH),
    )


@cache
def heavy_tailed_cells() -> tuple[Cell, ...]:
    """The heavy-tailed cells of issue 37 (``docs/coverage.md``, "Issue 37"): one judge
    unless said, prompts' pairs drawn with replacement (a large prompt repeats pairs)."""
    pareto = Sizes("pareto", 1.5, 20.0)

    def heavy(key, kind, label, generator):
        return Cell(key, kind, label, generator, BOTH, seed=HEAVY_SEED, compare=COMPARE,
                    rule_simultaneous=90.0)

    return (
        heavy("H-pareto-60", "thurstone",
              "8 models, 60 prompts, Pareto(1.5) sizes (mean 20), 1 judge",
              Thurstone(Design(8, 60, pareto, 1, distinct=False))),
        heavy("H-pareto-30", "shared",
              "8 models, 30 prompts, Pareto(1.5) sizes (mean 20), 1 judge",
              SharedResponses(Design(8, 30, pareto, 1, distinct=False))),
        heavy("H-lognormal-100", "thurstone",
              "10 models, 100 prompts, lognormal(1.5) sizes (mean 15), 1 judge",
              Thurstone(Design(10, 100, Sizes("lognormal", 1.5, 15.0), 1, distinct=False))),
        heavy("H-dominant-40", "shared",
              "8 models, 40 prompts, lognormal(0.5) sizes (mean 15), one prompt 30% of rows",
              SharedResponses(Design(8, 40, Sizes("lognormal", 0.5, 15.0, dominant=0.3), 1,
                                     distinct=False))),
        heavy("H-pareto-thin", "thurstone",
              "20 models, 80 prompts, Pareto(1.5) sizes (mean 8), 4 rare, 1 judge",
              Thurstone(Design(20, 80, Sizes("pareto", 1.5, 8.0), 1, 4, distinct=False))),
        heavy("H-pareto-crossed", "shared",
              "8 models, 60 prompts with Pareto(1.5) sizes (mean 20) x 10 judges",
              SharedResponses(Design(8, 60, pareto, 10, distinct=False))),
    )


def cell_by_key(key: str) -> Cell:
    for cell in (*held_out_cells(), *heavy_tailed_cells()):
        if cell.key == key:
            return cell
    raise KeyError(f"no held-out cell {key!r}; cells: "
                   f"{', '.join(c.key for c in (*held_out_cells(), *heavy_tailed_cells()))}")

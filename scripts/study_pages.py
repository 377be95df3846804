"""What the seeded studies that write a block of a docs page share (``judges_study.py``,
``plan_study.py``, ``diff_study.py``): the Monte-Carlo SE of a proportion, a simulation
design in one line, and the block between two markers of a page rewritten."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from winrate.io.simulate import SimulationDesign


def mc_se(p: float, reps: int) -> float:
    """Monte-Carlo SE of a proportion ``p`` over ``reps`` replications,
    ``sqrt(p (1 - p) / reps)``."""
    return float(np.sqrt(p * (1 - p) / reps))


def short_design(design: SimulationDesign) -> str:
    """The fields of ``design`` that differ from the defaults."""
    default = SimulationDesign().__dict__
    return ", ".join(f"{k}={v}" for k, v in design.__dict__.items() if default[k] != v)


def write_block(page: Path, markers: tuple[str, str], text: str) -> None:
    """``page`` with ``text`` between its ``markers`` (the markers kept)."""
    content = page.read_text()
    begin = content.index(markers[0]) + len(markers[0])
    page.write_text(content[:begin] + "\n" + text + "\n" + content[content.index(markers[1]):])

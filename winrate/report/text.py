"""Text blocks of the reports: statsmodels-style ``summary()`` layout and plain words.

:class:`~winrate.analysis.LeaderboardAnalysis`, :class:`~winrate.eda.EdaReport` and
:class:`~winrate.evals.frame.EvalReport` each print their ``summary()`` with
:func:`text_block`, notes numbered below with their codes.
"""

from __future__ import annotations


class Summary(str):
    """A text report that shows as itself at the prompt (``result.summary()``), like
    statsmodels' ``Summary``, and is a plain ``str`` everywhere else."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


#: The longest rule of a text block: wide tables run past it rather than stretch it.
RULE_WIDTH = 100


def text_block(title: str, parts, notes=()) -> Summary:
    """``parts`` (blocks of text) under a centred ``title`` between rules, as statsmodels'
    ``summary()`` lays them out; ``notes`` (warnings) numbered below."""
    parts = [part for part in parts if part]
    width = min(RULE_WIDTH, max(len(line) for part in [title, *parts]
                                for line in part.splitlines()))
    lines = ["=" * width, title.center(width).rstrip(), "=" * width]
    for i, part in enumerate(parts):
        if i:
            lines.append("-" * width)
        lines.extend(part.splitlines())
    lines.append("=" * width)
    if notes:
        lines.append("Warnings:")
        lines.extend(f"[{i}] {_coded(note)}" for i, note in enumerate(notes, 1))
    return Summary("\n".join(lines))


def _coded(note) -> str:
    """A note with its code in front (:class:`winrate.notes.Note`); other text as it is."""
    code = getattr(note, "code", None)
    return f"({code}) {note}" if code else str(note)


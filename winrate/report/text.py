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


def listed(names, limit: int | None = None, quote: bool = True, last: str = "and") -> str:
    """Names as text for a message: ``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'`` (each
    quoted unless ``quote`` is False; ``last`` joins the last two), the first ``limit``
    then ``and N more``; ``none`` for no name. Never a Python literal (a list's or set's
    repr)."""
    shown = [repr(str(n)) if quote else str(n) for n in names]
    if not shown:
        return "none"
    if limit is not None and len(shown) > limit:
        return f"{', '.join(shown[:limit])} and {len(shown) - limit} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} {last} {shown[-1]}"


def one_of(choices) -> str:
    """The allowed values of an option as text: ``'a', 'b' or 'c'``."""
    return listed(choices, last="or")

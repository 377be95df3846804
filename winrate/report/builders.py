"""Reports of the leaderboard builder's applications (:mod:`winrate.judges`,
:mod:`winrate.diff`, :mod:`winrate.planning`): their tables as text or Markdown, and a
report's parts as a Markdown section (their text form is
:func:`winrate.report.text.text_block`)."""

from __future__ import annotations

import pandas as pd

from winrate.notes import Notes
from winrate.report.tables import markdown_table


def frame_table(frame: pd.DataFrame, fmt: str, index: bool = False) -> str:
    """A table as a report prints it: the frame's text (``"text"``) or a Markdown pipe
    table (``"markdown"``, :func:`winrate.report.tables.markdown_table`)."""
    if fmt == "text":
        return frame.to_string(index=index)
    shown = frame.reset_index() if index else frame
    return markdown_table([str(c) for c in shown.columns], shown.astype(str).values.tolist())


def markdown_document(title: str, parts: list[str], found: Notes | tuple = ()) -> str:
    """A report's ``parts`` as a Markdown section: ``## title``, each part a paragraph (an
    indented line a list item), and the notes as a list with their codes."""
    shown = [part.replace("\n  ", "\n- ") for part in parts if part]
    listed = [f"- ({note.code}) {note}" for note in found]
    return "\n\n".join([f"## {title}", *shown, *(["Notes:\n\n" + "\n".join(listed)]
                                                  if listed else [])])

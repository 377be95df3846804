"""Reports of the leaderboard builder's applications (:mod:`winrate.judges`,
:mod:`winrate.diff`, :mod:`winrate.planning`): their tables as text or Markdown, a
report's parts as a Markdown section (their text form is
:func:`winrate.report.text.text_block`), and the leaderboard document their web page is
rendered from (:func:`page_document`)."""

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


def page_document(board, key: str, part: dict) -> dict:
    """The leaderboard document of ``board`` (an analysis,
    :func:`winrate.report.leaderboard.to_dict`) carrying an application's JSON document
    ``part`` under ``key`` (one of :data:`winrate.report.html_page.BUILDER_PARTS`), which
    the page shows as its judges section, plan table or changes column."""
    from winrate.report.html_page import BUILDER_PARTS
    from winrate.report.leaderboard import to_dict

    if key not in BUILDER_PARTS:
        raise ValueError(f"key must be one of {BUILDER_PARTS}, got {key!r}")
    return {**to_dict(board), key: part}


def publish_page(board, key: str, part: dict, path=None, title: str | None = None) -> str:
    """The web page of :func:`page_document` (:func:`winrate.report.html_page.publish`),
    also written to ``path`` when given."""
    from winrate.report.html_page import publish

    return publish(page_document(board, key, part), path, title)

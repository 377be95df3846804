"""LMArena's public battle tables and MT-Bench's pairwise judgments, as comparison frames.

:func:`arena_parts` reads the three layouts LMArena (formerly LMSYS) published its human
votes in, each a table (CSV, Parquet or JSON Lines; one row per vote), and
:func:`mt_bench_parts` reads FastChat's MT-Bench pairwise judgment files. Both return one
frame per file with the columns of :mod:`winrate.io.formats` (``model_a, model_b,
outcome`` and, where the layout has them, ``prompt_id`` and ``judge_id``) and the
layout's per-vote categories as text columns (``language``, ``is_code``,
``category_<name>``), which become further clustering axes and ``by`` columns.

Layouts (:data:`ARENA_LAYOUTS`), told apart by their columns
-------------------------------------------------------------
``55k``
    ``lmarena-ai/arena-human-preference-55k`` (formerly ``lmsys/lmsys-arena-human-
    preference-55k``, the Kaggle competition's ``train.csv``): ``id, model_a, model_b,
    prompt, response_a, response_b, winner_model_a, winner_model_b, winner_tie``, the
    verdict one-hot (exactly one of the three is 1; the dataset card: "prefer model A,
    prefer model B, tie, or tie (both bad)", both ties in ``winner_tie``). No judge column
    and no prompt id: ``prompt_id`` is a hash of the ``prompt`` text, so that battles on
    one prompt (the same text) are one cluster.
``100k``
    ``lmarena-ai/arena-human-preference-100k``: ``question_id, model_a, model_b, winner,
    judge_hash, conversation_a, conversation_b, turn, anony, language, tstamp,
    conv_metadata, is_code, is_refusal, dedup_tag, category_tag``; ``winner`` is
    ``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)``. ``prompt_id`` = question_id,
    ``judge_id`` = judge_hash (the voter).
``140k``
    ``lmarena-ai/arena-human-preference-140k``: ``id, model_a, model_b, winner,
    evaluation_session_id, evaluation_order, conversation_a, conversation_b,
    full_conversation, conv_metadata, category_tag, language, is_code, timestamp``;
    ``winner`` is ``model_a``, ``model_b``, ``tie`` or ``both_bad``; no judge column.
    ``prompt_id`` = evaluation_session_id: the votes of one session follow one user's
    conversation (the dataset card: "an evaluation session ... can contain multiple
    separate votes"), so they are clustered together.

Ties: both kinds count as a tie (0.5), as FastChat's rating code counts them
(``fastchat/serve/monitor/elo_analysis.py``, ``compute_mle_elo``: ``tie_idx =
(df["winner"] == "tie") | (df["winner"] == "tie (bothbad)")``); ``both_bad="drop"``
leaves the both-bad votes out. Where a table has ``anony`` or ``dedup_tag`` (100k), only
anonymous votes with ``dedup_tag["sampled"]`` true are kept, as LMArena's leaderboard
(see :class:`winrate.io.formats._BattleFilter`), with a note counting what was left out.

``category_tag`` (100k, 140k) holds LMArena's classifier tags (FastChat
``fastchat/serve/monitor/classify/category.py``: ``criteria_v0.1`` with seven criteria,
``math_v0.1.math``, ``if_v0.1.if``, ``creative_writing_v0.1.creative_writing``, ...).
Each tag with a true/false flag of its own name becomes ``category_<name>`` (``"true"`` /
``"false"``), and ``criteria_v0.1`` becomes ``category_hard_prompt``, true when at least
6 of the 7 criteria hold (lmsys.org/blog/2024-05-17-category-hard, "Hard Prompts").

MT-Bench pairwise judgments
---------------------------
FastChat ``fastchat/llm_judge/data/mt_bench/model_judgment/<judge>_pair.jsonl``, written
by ``fastchat/llm_judge/common.py`` ``play_a_match_pair``: records ``question_id,
model_1, model_2, g1_winner, g2_winner, judge, turn, ...``. Game 1 shows model_1's answer
as A, game 2 swaps them, and both winners are already mapped back to ``model_1`` /
``model_2`` / ``tie`` (or ``error`` when the verdict could not be parsed); ``judge`` is
``[judge model, prompt name]``. Two ways to read a record (``games=``):

``"combined"`` (default)
    FastChat's own count (``fastchat/llm_judge/show_result.py``,
    ``display_result_pairwise``): records with an ``error`` in either game are dropped
    (a note counts them), a record is a win only when both games name the same winner,
    and a tie otherwise (``g1_winner == "tie" or g1_winner != g2_winner``). One row
    per record.
``"both"``
    each game is a row (the two position-swapped verdicts), an ``error`` game dropped.
    The two rows share their prompt and judge, so clustering by prompt keeps them
    together (they are not independent comparisons).

``prompt_id`` = question_id (both turns of a question are one cluster), ``judge_id`` =
the judge model; the prompt template (FastChat picks ``pair-v2``, ``pair-v2-multi-turn``
or ``pair-math-v1`` by turn and category, one judge throughout) is kept as
``judge_prompt`` and ``turn`` as text columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from winrate import notes
from winrate.errors import WinrateInputError, first_rows
from winrate.io.logs import (
    data_columns,
    file_positions,
    id_text,
    read_table,
    table_format,
    value_counts,
)

__all__ = ["ARENA_LAYOUTS", "ARENA_MARKS", "HARD_PROMPT_CRITERIA", "arena_parts", "detect_layout",
           "mt_bench_parts"]

#: The public LMArena layouts, by the size of the release.
ARENA_LAYOUTS = ("55k", "100k", "140k")
#: LMArena's "Hard Prompts" category: at least this many of the 7 criteria of
#: ``criteria_v0.1`` (lmsys.org/blog/2024-05-17-category-hard).
HARD_PROMPT_CRITERIA = 6

_ONE_HOT = ("winner_model_a", "winner_model_b", "winner_tie")
#: The columns each layout must have.
_REQUIRED = {
    "55k": ("model_a", "model_b", "prompt", *_ONE_HOT),
    "100k": ("model_a", "model_b", "winner", "question_id", "judge_hash"),
    "140k": ("model_a", "model_b", "winner", "evaluation_session_id"),
}
#: The column that tells each layout apart.
ARENA_MARKS = {"55k": "winner_tie", "100k": "judge_hash", "140k": "evaluation_session_id"}
#: Score of model_a for each ``winner`` label; the second item: a both-bad tie.
_WINNER = {"model_a": (1.0, False), "model_b": (0.0, False), "tie": (0.5, False),
           "tie (bothbad)": (0.5, True), "both_bad": (0.5, True)}
_CATEGORIES = ("language", "is_code")
#: The id and name columns, read as text.
_TEXT = ("model_a", "model_b", "question_id", "judge_hash", "evaluation_session_id")
#: The columns the layouts' readers use; no other column is read from a Parquet file.
_USED = frozenset({*_TEXT, "winner", *_ONE_HOT, "prompt", "anony", "dedup_tag",
                   "category_tag", *_CATEGORIES})


def detect_layout(columns: Sequence[str], path) -> str:
    """The layout whose distinguishing column the table has (:data:`ARENA_MARKS`); none or
    several is an error naming the file and what was expected."""
    found = [layout for layout, mark in ARENA_MARKS.items() if mark in columns]
    if len(found) == 1:
        return found[0]
    marks = ", ".join(f"{mark!r} ({layout})" for layout, mark in ARENA_MARKS.items())
    if not found:
        raise WinrateInputError(f"{path}: not an LMArena battle table: it has none of the "
                                f"columns {marks}; it has {list(columns)[:20]}")
    raise WinrateInputError(f"{path}: the columns fit several LMArena layouts {found}; "
                            "name one (layout=)")


def arena_parts(files: Sequence[Path], *, layout: str | None = None,
                both_bad: str = "tie", include_named: bool = False,
                dedup: bool = True) -> list[pd.DataFrame]:
    """One comparison frame per LMArena table (module docstring); ``layout`` None
    detects each file's layout from its columns."""
    if layout is not None and layout not in ARENA_LAYOUTS:
        raise WinrateInputError(f"arena: layout must be one of {list(ARENA_LAYOUTS)}, got "
                                f"{layout!r}")
    if both_bad not in ("tie", "drop"):
        raise WinrateInputError(f"arena: both_bad must be 'tie' or 'drop', got {both_bad!r}")
    counts = {"total": 0, "named": 0, "duplicates": 0}
    parts = []
    for path in files:
        frame, columns = _read_votes(path)
        found = layout or detect_layout(columns, path)
        missing = [c for c in _REQUIRED[found] if c not in columns]
        if missing:
            raise WinrateInputError(f"{path}: column(s) {missing} missing for the LMArena "
                                    f"{found} layout; it has {columns[:20]}")
        frame = _leaderboard_votes(frame, path, include_named, dedup, counts)
        parts.append(_arena_frame(frame, found, path, both_bad))
    if counts["named"] or counts["duplicates"]:
        notes.emit(notes.battles_dropped(counts["total"], counts["named"],
                                         counts["duplicates"], "arena", "vote"))
    return parts


def _read_votes(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """The columns of one table the readers use (:data:`_USED`), objects flattened to
    dotted columns (``dedup_tag.sampled``, ``category_tag.math_v0.1.math``), rows labelled
    by their place in the file; and all the table's column names. A Parquet file's other
    columns (the conversations, most of its bytes) are never read."""
    if table_format(path) == "parquet":
        frame, columns = _read_parquet_votes(path)
    else:
        frame = read_table(path, text_cols=_TEXT)
        columns = [str(c) for c in frame.columns]
        frame = _flatten_objects(frame[[c for c in frame.columns if c in _USED]], path)
    frame.index = file_positions(path, len(frame))
    return frame, columns


def _read_parquet_votes(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """:func:`_read_votes` of a Parquet file, through Arrow (structs flattened there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        columns = data_columns(pq.read_schema(path))
        table = pq.read_table(path, columns=[c for c in columns if c in _USED])
        while any(pa.types.is_struct(field.type) for field in table.schema):
            table = table.flatten()
        return table.to_pandas(), columns
    except (OSError, ValueError, pa.ArrowException) as error:
        raise WinrateInputError(f"{path}: cannot read it as Parquet: {error}") from None


def _flatten_objects(frame: pd.DataFrame, path) -> pd.DataFrame:
    """The object columns of a CSV / JSON table (``dedup_tag``, ``category_tag``) as
    dotted columns, as Arrow flattens a Parquet struct; a value that is not an object
    is an error naming the rows."""
    for column in ("dedup_tag", "category_tag"):
        if column not in frame.columns:
            continue
        values = frame[column]
        bad = ~values.map(lambda v: isinstance(v, dict)).to_numpy(bool)
        if bad.any():
            raise WinrateInputError(f"{path}: column {column!r} is not an object in row(s) "
                                    f"{first_rows(bad, file_positions(path, len(frame)))}")
        flat = pd.json_normalize(values.tolist(), sep=".").add_prefix(f"{column}.")
        frame = pd.concat([frame.drop(columns=column).reset_index(drop=True), flat], axis=1)
    return frame


def _arena_frame(frame: pd.DataFrame, layout: str, path, both_bad: str) -> pd.DataFrame:
    """The comparison columns of one table in ``layout``."""
    rows = frame.index
    if layout == "55k":
        outcome, bad_tie = _one_hot_outcome(frame, path), np.zeros(len(frame), bool)
    else:
        outcome, bad_tie = _winner_outcome(frame["winner"], path, rows)
    part = pd.DataFrame({"model_a": _ids(frame, "model_a", path),
                         "model_b": _ids(frame, "model_b", path),
                         "outcome": outcome}, index=rows)
    if layout == "55k":
        part["prompt_id"] = _text_hash(frame["prompt"], path)
    elif layout == "100k":
        part["prompt_id"] = _ids(frame, "question_id", path)
        part["judge_id"] = _ids(frame, "judge_hash", path)
    else:
        part["prompt_id"] = _ids(frame, "evaluation_session_id", path)
    part = part.assign(**_categories(frame))
    keep = ~bad_tie if both_bad == "drop" else np.ones(len(part), bool)
    return part.loc[keep].reset_index(drop=True)


def _ids(frame: pd.DataFrame, column: str, path) -> pd.Series:
    """A column of ids or names as text; a missing value is an error naming the rows."""
    text = id_text(frame[column])
    missing = text.isna().to_numpy()
    if missing.any():
        raise WinrateInputError(f"{path}: column {column!r} is missing in row(s) "
                                f"{first_rows(missing, frame.index)} "
                                f"({frame.index.name})")
    return text


def _one_hot_outcome(frame: pd.DataFrame, path) -> np.ndarray:
    """model_a's score from the 55k one-hot columns; each row must hold exactly one 1
    (and two 0s)."""
    flags = np.column_stack([pd.to_numeric(frame[c], errors="coerce").to_numpy(float)
                             for c in _ONE_HOT])
    binary = np.isin(flags, (0.0, 1.0)).all(axis=1)
    bad = ~binary | (np.nansum(flags, axis=1) != 1)
    if bad.any():
        raise WinrateInputError(f"{path}: columns {list(_ONE_HOT)} must hold exactly one 1 "
                                f"and two 0s per row; {int(bad.sum())} row(s) do not, first "
                                f"rows ({frame.index.name}): {first_rows(bad, frame.index)}")
    return flags @ np.array([1.0, 0.0, 0.5])


def _winner_outcome(winner: pd.Series, path, rows) -> tuple[np.ndarray, np.ndarray]:
    """model_a's score and the both-bad flag of each ``winner`` label (:data:`_WINNER`);
    an unknown label is an error with its count and first rows."""
    codes, uniques = pd.factorize(winner, use_na_sentinel=True)
    labels = np.array([v.strip().lower() if isinstance(v, str) else "" for v in uniques]
                      + [""], dtype=object)
    label = pd.Series(labels[codes], index=winner.index)
    score = label.map({k: v[0] for k, v in _WINNER.items()}).to_numpy(float)
    unknown = np.isnan(score)
    if unknown.any():
        raise WinrateInputError(
            f"{path}: column 'winner': unknown value in {int(unknown.sum())} row(s): "
            f"{value_counts(winner.to_numpy(), unknown)}, first rows ({rows.name}): "
            f"{first_rows(unknown, rows)} (expected {', '.join(_WINNER)})")
    bad_tie = label.map({k: v[1] for k, v in _WINNER.items()}).to_numpy(bool)
    return score, bad_tie


def _text_hash(texts: pd.Series, path) -> pd.Series:
    """A short stable id of each text (pandas' 64-bit hash as 16 hex digits): one prompt
    text, one id."""
    missing = texts.isna().to_numpy()
    if missing.any():
        raise WinrateInputError(f"{path}: column 'prompt' is missing in row(s) "
                                f"{first_rows(missing, texts.index)} ({texts.index.name})")
    hashed = pd.util.hash_array(texts.astype(str).to_numpy(object), categorize=True)
    return pd.Series(np.char.mod("%016x", hashed).astype(object), index=texts.index)


def _categories(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """The per-vote categories as text columns: ``language``, ``is_code`` and the
    ``category_<name>`` flags of ``category_tag`` (module docstring)."""
    out = {c: _as_text(frame[c]) for c in _CATEGORIES if c in frame.columns}
    return out | _tag_flags(frame)


def _as_text(values: pd.Series) -> pd.Series:
    """Category values as text, each distinct value converted once; booleans as ``true``
    / ``false`` (JSON's spelling), a missing value as the empty text."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    text = np.array([_flag_text(v) for v in uniques] + [""], dtype=object)
    return pd.Series(text[codes], index=values.index, dtype=object)


def _flag_text(value) -> str:
    """A category value as text; booleans as ``true`` / ``false`` (JSON's spelling)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return "" if value is None else str(value)


_TAG = re.compile(r"^category_tag\.(?P<tag>(?P<name>.+?)_v\d+(?:\.\d+)*)\.(?P<flag>[^.]+)$")


def _tag_flags(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """``category_<name>`` for each tag ``<name>_v<version>`` holding a flag ``<name>``,
    and ``category_hard_prompt`` from ``criteria_v0.1`` (at least
    :data:`HARD_PROMPT_CRITERIA` of its criteria true), from the flattened columns
    ``category_tag.<tag>.<flag>``; a missing flag is false."""
    found = {column: _TAG.match(str(column)) for column in frame.columns}
    found = {column: match for column, match in found.items() if match}
    out = {}
    criteria = [c for c, m in found.items() if m["name"] == "criteria"]
    if criteria:
        met = frame[criteria].fillna(False).astype(bool).sum(axis=1)
        out["category_hard_prompt"] = _as_text(met >= HARD_PROMPT_CRITERIA)
    for column, match in found.items():
        if match["flag"] == match["name"] and match["name"] != "criteria":
            out[f"category_{match['name']}"] = _as_text(
                frame[column].fillna(False).astype(bool))
    return dict(sorted(out.items()))


def _leaderboard_votes(frame: pd.DataFrame, path, include_named: bool, dedup: bool,
                       counts: dict) -> pd.DataFrame:
    """The votes LMArena's leaderboard counts: anonymous ones (``anony``) and, with
    ``dedup``, those whose ``dedup_tag["sampled"]`` is true; ``counts`` adds up what was
    left out for one note."""
    keep = np.ones(len(frame), bool)
    counts["total"] += len(frame)
    if "anony" in frame.columns and not include_named:
        anony = frame["anony"]
        bad = ~anony.isin([True, False]).to_numpy(bool) | anony.isna().to_numpy()
        if bad.any():
            raise WinrateInputError(f"{path}: column 'anony' is not true/false in row(s) "
                                    f"{first_rows(bad, frame.index)} ({frame.index.name})")
        named = ~anony.to_numpy(bool)
        counts["named"] += int(named.sum())
        keep &= ~named
    if dedup and "dedup_tag.sampled" in frame.columns:
        sampled = (frame["dedup_tag.sampled"] == True).to_numpy(bool)  # noqa: E712 (None)
        counts["duplicates"] += int((keep & ~sampled).sum())
        keep &= sampled
    return frame.loc[keep]


# --------------------------------------------------------------------------- MT-Bench

_MT_WINNERS = ("model_1", "model_2", "tie")


def mt_bench_parts(files: Sequence[Path], *, games: str = "combined") -> list[pd.DataFrame]:
    """One comparison frame per MT-Bench ``*_pair.jsonl`` file (module docstring)."""
    if games not in ("combined", "both"):
        raise WinrateInputError(f"mt_bench: games must be 'combined' or 'both', got "
                                f"{games!r}")
    parts, dropped = [], []
    for path in files:
        frame = read_table(path, text_cols=("question_id", "model_1", "model_2"))
        frame.index = file_positions(path, len(frame))
        required = ["question_id", "model_1", "model_2", "g1_winner", "g2_winner", "judge"]
        missing = [c for c in required if c not in frame.columns]
        if missing:
            raise WinrateInputError(f"{path}: field(s) {missing} missing: not an MT-Bench "
                                    "pairwise judgment file (model_judgment/*_pair.jsonl)")
        g1, g2 = (_mt_winner(frame, column, path) for column in ("g1_winner", "g2_winner"))
        base = pd.DataFrame({"model_a": _ids(frame, "model_1", path),
                             "model_b": _ids(frame, "model_2", path),
                             "prompt_id": _ids(frame, "question_id", path),
                             "judge_id": frame["judge"].map(_judge_model),
                             "judge_prompt": frame["judge"].map(_judge_prompt)},
                            index=frame.index)
        if "turn" in frame.columns:
            base["turn"] = frame["turn"].map(_flag_text)
        part, lost = _mt_games(base, g1, g2, games)
        dropped.append((path.name, lost, len(frame) * (2 if games == "both" else 1)))
        parts.append(part.reset_index(drop=True))
    dropped = [d for d in dropped if d[1]]
    for name, lost, total in dropped:
        notes.emit(notes.labelled_verdicts_dropped("mt_bench", lost, total, "judge",
                                                   ["error"], name))
    return parts


def _mt_winner(frame: pd.DataFrame, column: str, path) -> np.ndarray:
    """model_1's score in one game (1, 0, 0.5; NaN for ``error``); any other value is an
    error naming the rows."""
    text = frame[column].map(lambda v: v if isinstance(v, str) else repr(v))
    score = text.map({"model_1": 1.0, "model_2": 0.0, "tie": 0.5}).to_numpy(float)
    unknown = np.isnan(score) & (text != "error").to_numpy()
    if unknown.any():
        raise WinrateInputError(
            f"{path}: field {column!r}: unknown value in {int(unknown.sum())} line(s): "
            f"{value_counts(text.to_numpy(), unknown, unit='line')}, first lines "
            f"{first_rows(unknown, frame.index)} (expected {', '.join(_MT_WINNERS)} or error)")
    return score


def _judge_model(judge) -> str:
    """The judge model of FastChat's ``judge`` pair ``[model, prompt name]``."""
    if isinstance(judge, (list, tuple, np.ndarray)):
        return str(judge[0]) if len(judge) else ""
    return str(judge)


def _judge_prompt(judge) -> str:
    """The prompt template of FastChat's ``judge`` pair (``pair-v2``,
    ``pair-v2-multi-turn``, ``pair-math-v1``, ...); empty when not given."""
    if isinstance(judge, (list, tuple, np.ndarray)) and len(judge) > 1:
        return str(judge[1])
    return ""


def _mt_games(base: pd.DataFrame, g1: np.ndarray, g2: np.ndarray,
              games: str) -> tuple[pd.DataFrame, int]:
    """The rows of one file and how many records (``combined``) or games (``both``)
    with an ``error`` verdict were dropped.

    combined (FastChat ``show_result.py``): outcome = g1 when the two games agree (a win,
    a loss, or a tie), else 0.5: a win needs both position orders to name the winner.
    """
    if games == "both":
        both = pd.concat([base.assign(outcome=g1), base.assign(outcome=g2)])
        valid = ~np.isnan(both["outcome"].to_numpy())
        return both.loc[valid], int((~valid).sum())
    valid = ~np.isnan(g1) & ~np.isnan(g2)
    outcome = np.where(g1 == g2, g1, 0.5)
    return base.assign(outcome=outcome).loc[valid], int((~valid).sum())

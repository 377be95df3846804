"""Real evaluation data as pairwise comparison logs.

:func:`load` returns a :class:`pandas.DataFrame` with one row per comparison (or, with a
``count`` column, per group of identical comparisons):

========== ================================================================================
column     meaning
========== ================================================================================
prompt_id  the prompt (question) compared on; absent for ``chatbot_arena``
judge_id   who decided; absent for ``chatbot_arena``
model_a    first model (both model columns share one category list: the models used)
model_b    second model
outcome    ``"a"`` (model_a won), ``"b"`` (model_b won) or ``"tie"``; categories in that order.
           ``alpaca_eval``, ``qlora``, ``prd``: the float score of model_a in [0, 1]
           (read by :mod:`winrate.io.formats`)
count      ``chatbot_arena`` only: the row stands for that many identical comparisons
style_*    ``alpaca_eval`` only: per-row style features (:mod:`winrate.io.formats`)
...        dataset-specific cluster axes (``category``, ``src``, ``item_id``)
========== ================================================================================

Every string column is a pandas ``Categorical`` built from integer codes, so the 4.9
million rows of ``mmlu_pro`` take about 40 MB. ``prompt_id`` and ``item_id`` categories are
strings even where the upstream id is a number (``"70"`` for MMLU-Pro question 70).
Categories are the values the rows use (after a ``models=`` selection too), except that
``outcome`` always has all three.

Files are found and downloaded by :mod:`winrate.io.download` (``data_dir`` argument, then
``$WINRATE_DATA``, then the user cache; missing files are fetched from pinned upstream
addresses, SHA-256 checked). ``alpaca_eval``, ``qlora`` and ``prd`` are folders of many
files read by :mod:`winrate.io.formats`; they are found the same way but not downloaded (the
error says where to get them). :func:`describe` says where each dataset comes from.
"""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from winrate import notes
from winrate.constants import DATASET_NAMES, DEFAULT_COLUMNS
from winrate.errors import WinrateInputError, first_rows
from winrate.io.download import (
    MMLU_PRO_MODELS,
    ChecksumError,
    DataFile,
    DataUnavailableError,
    DownloadError,
    ensure_files,
    file_entry,
    mmlu_pro_slim_name,
    mmlu_pro_zip_name,
    search_dirs,
)
from winrate.io.formats import natural_key, read_format
from winrate.io.logs import ComparisonLog, ScoreTable, columns_not_found, read_comparisons
from winrate.io.scores import score_table

__all__ = [
    "DATASET_NAMES",
    "OUTCOMES",
    "ChecksumError",
    "DataUnavailableError",
    "DownloadError",
    "MMLUPro",
    "describe",
    "load",
    "mmlu_pro_correctness",
    "mmlu_pro_questions",
    "mmlu_pro_scores",
    "read_dataset",
    "read_mmlu_pro",
    "read_scores",
]

#: Categories of the ``outcome`` column, in code order (0 = a, 1 = b, 2 = tie).
OUTCOMES: tuple[str, ...] = ("a", "b", "tie")
_A, _B, _TIE = 0, 1, 2
_SHOW = 5

_DESCRIPTIONS = {
    "mmlu_pro": (
        "MMLU-Pro (TIGER-AI-Lab/MMLU-Pro, eval_results/model_outputs_<model>_5shots.zip at "
        "commit f418b116db00; license Apache-2.0): 5-shot answers of 29 models to 12,032 "
        "multiple-choice questions in 14 categories. Pairwise log: on every question both "
        "models answered, a correct answer beats a wrong one, both right or both wrong is a "
        "tie; a null pred counts as wrong. prompt_id = question_id, judge_id = 'exact_match' "
        "(each record graded against its own 'answer' field, as upstream did). Extra axes: "
        "category, src (original source subject). Options: models=[...]."
    ),
    "llmfao": (
        "LLMFAO (dustalov/llmfao, commit 9e224e94a401; data license CC BY 4.0): pairwise "
        "comparisons of 59 models on 13 prompts by 124 crowd workers (judge_id "
        "'crowd:<worker>') and by GPT-3.5 and GPT-4 (judge_id 'gpt-3.5', 'gpt-4') on the "
        "same pairs. model_a = left, model_b = right. prompt_id = prompt id. Extra axes: "
        "category (prompt type), item_id (upstream pair id, shared by every judge of a "
        "pair). Options: judges=('crowd', 'gpt-3.5', 'gpt-4'), gpt_pairs='crowd' (only the "
        "pairs the crowd judged) or 'all' (every GPT verdict: 3,236 pairs, 19 prompts, 70 "
        "models), models=[...]."
    ),
    "pandalm": (
        "PandaLM human test set (WeOpenML/PandaLM data/*.json, commit 3871806e72b4; "
        "license Apache-2.0): 999 response pairs of 5 models on 170 prompts, judged by three "
        "human annotators (judge_id 'annotator1'..'annotator3'), GPT-3.5 ('gpt-3.5') and "
        "PandaLM-7B ('pandalm-7b'). prompt_id = one id per (instruction, input); model_a = "
        "the model of response1. Extra axes: category (motivation_app), item_id (upstream "
        "idx, shared by every judge of an item). GPT-3.5 verdicts 'garbage' (unparseable "
        "upstream) are dropped with a warning. Options: judges=(...), models=[...]."
    ),
    "chatbot_arena": (
        "Chatbot Arena battle counts up to 2024-08-14 as shipped in the PyPI package "
        "leaderbot 0.4.3 (package license BSD-3-Clause): 129 models, 3,460 model pairs, "
        "1,670,250 battles. "
        "Aggregated: one row per (pair, outcome) with a 'count' column; no prompt_id or "
        "judge_id column (prompts and voters are not published), so no clustering is "
        "possible. 'Both bad' ties count as ties (both_bad='tie') or are dropped "
        "(both_bad='drop'). Options: models=[...]."
    ),
    "alpaca_eval": (
        "AlpacaEval 2.0 annotations (tatsu-lab/alpaca_eval results/<model>/"
        "weighted_alpaca_eval_gpt4_turbo/annotations.json, commit cd543a149df8; code "
        "Apache-2.0, data CC BY-NC 4.0): 58 models each against the baseline "
        "gpt4_1106_preview on 805 instructions, judged by weighted_alpaca_eval_gpt4_turbo. "
        "Read by winrate.io.formats ('alpaca_eval'): model_a = the model, model_b = the "
        "baseline, outcome = preference - 1 (the judge's probability that the model is "
        "better; draws 0.5), prompt_id = instruction, judge_id = annotator, style_length = "
        "normalised answer-length difference, style_length_delta = the raw difference in "
        "characters (model 'lc'). The baseline-vs-itself file is dropped; "
        "NullModel's records name their generator 'example' and are renamed 'NullModel' "
        "(the leaderboard's name). A model's mean outcome is the published win_rate / 100. "
        "Options: discrete=True (win/tie/loss: discrete_win_rate), models=[...]."
    ),
    "qlora": (
        "QLoRA GPT-4 judgments on the Vicuna-80 questions (artidoro/qlora "
        "eval/ratings-gpt4/vicuna/, commit 7f4e95a68dc0; license MIT). Read by "
        "winrate.io.formats ('qlora'). ratings=('pairwise',) (default): 8 systems (Guanaco "
        "7-65B, Vicuna-13B, ChatGPT 'gpt35', Bard, GPT-4), every ordered pair, three-class "
        "verdicts, judge_id 'gpt-4'. 'relative-gpt-3.5' adds 1-10 grade pairs of 36 systems "
        "vs ChatGPT (judge_id 'gpt4-scores'; its 'gpt-3.5' is renamed 'gpt35', the same "
        "answers by answer id). prompt_id = question_id. Unparsed verdicts (-1) are dropped "
        "with a warning. Options: ratings=(...), models=[...]."
    ),
    "prd": (
        "PRD, Peer Rank and Discussion (bcdnlp/PRD data/vicuna80/ratings-*/, commit "
        "35fb99e5d5c7; license MIT): 5 contestants (bard, claude, gpt35, gpt4, vicuna-13b) "
        "on the Vicuna-80 questions, judged by the same 5 models as reviewers (judge_id = "
        "reviewer) and by human raters (judge_id 'human', 3 anonymous raters per item, also "
        "judging guanaco-7b/13b/33b/65b). Read by winrate.io.formats ('prd'); prompt_id = "
        "question_id. The gpt35 reviewer judged gpt35 vs gpt4 (both orders) twice, in two "
        "files: both runs are kept (duplicates='first' keeps one) with a warning. Options: "
        "judges=(...) (reviewers, default all), duplicates='keep'|'first', models=[...]."
    ),
}


def describe(name: str) -> str:
    """A short description of dataset ``name``: source, license, what prompt and judge are."""
    _check_name(name)
    return _DESCRIPTIONS[name]


def _check_name(name: str) -> None:
    if name not in DATASET_NAMES:
        raise WinrateInputError(f"unknown dataset {name!r}; available: {', '.join(DATASET_NAMES)}")


def load(name: str, *, data_dir=None, models: Sequence[str] | None = None,
         download: bool = True, mirror: str | None = None, progress: bool | None = None,
         **options) -> pd.DataFrame:
    """Load dataset ``name`` (one of :data:`DATASET_NAMES`) as a pairwise comparison log.

    Parameters
    ----------
    name : one of :data:`DATASET_NAMES`.
    data_dir : directory holding ``<name>/<files>``; default ``$WINRATE_DATA``, then the
        user cache directory (see :mod:`winrate.io.download`).
    models : keep only comparisons between these models (an unknown name is an error
        that lists the available ones).
    download : fetch missing files from their pinned upstream address (default True).
    mirror : base URL replacing the upstream addresses (default ``$WINRATE_DATA_MIRROR``).
    progress : a progress bar while downloading (None: on a terminal; winrate.progress).
    **options : dataset-specific options, see :func:`describe`.

    Returns
    -------
    DataFrame with columns ``prompt_id, judge_id, model_a, model_b, outcome`` (categorical)
    plus the dataset's extra columns; see the module docstring.
    """
    _check_name(name)
    fetch = {"data_dir": data_dir, "download": download, "mirror": mirror,
             "progress": progress}
    loader = {"mmlu_pro": _load_mmlu_pro, "llmfao": _load_llmfao, "pandalm": _load_pandalm,
              "chatbot_arena": _load_chatbot_arena, "alpaca_eval": _load_alpaca_eval,
              "qlora": _load_qlora, "prd": _load_prd}[name]
    return loader(fetch, models, **options)


# --------------------------------------------------------------------------- helpers


def _categorical(codes: np.ndarray, categories) -> pd.Categorical:
    """A Categorical from integer codes, without materialising one string per row."""
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories), validate=False)


def _require(frame: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise columns_not_found(missing, list(frame.columns), what=f"{path}")


def _check_models(models: Sequence[str] | None, available: Sequence[str],
                  dataset: str, minimum: int = 2) -> list[str]:
    """Validate a ``models=`` selection; None selects every available model."""
    if models is None:
        return list(available)
    if isinstance(models, str):
        raise WinrateInputError(f"models must be a list of model names, not the string "
                                f"{models!r}")
    chosen = list(models)
    unknown = [m for m in chosen if m not in set(available)]
    if unknown:
        raise WinrateInputError(
            f"{dataset}: unknown model(s) {unknown}; available: {', '.join(available)}"
        )
    dups = sorted({m for m in chosen if chosen.count(m) > 1})
    if dups:
        raise WinrateInputError(f"{dataset}: model(s) listed twice: {dups}")
    if len(chosen) < minimum:
        raise WinrateInputError(f"{dataset}: need at least {minimum} models, got {chosen}")
    return chosen


def _select_models(log: pd.DataFrame, models: Sequence[str] | None,
                   dataset: str) -> pd.DataFrame:
    """Keep rows whose two models are both in ``models``; drop unused categories."""
    if models is not None:
        chosen = set(_check_models(models, list(log["model_a"].cat.categories), dataset))
        keep = log["model_a"].isin(chosen).to_numpy() & log["model_b"].isin(chosen).to_numpy()
        log = log.loc[keep].reset_index(drop=True)
    return _drop_unused_categories(log)


def _drop_unused_categories(log: pd.DataFrame) -> pd.DataFrame:
    """Every categorical column keeps only the values it uses, in their order.

    ``model_a`` and ``model_b`` keep one shared list (the models either column uses) and
    ``outcome`` always keeps :data:`OUTCOMES`.
    """
    models = log["model_a"].cat.categories
    used = _used_codes(log["model_a"]) | _used_codes(log["model_b"])
    changed = {}
    if not used.all():
        for col in ("model_a", "model_b"):
            changed[col] = log[col].cat.set_categories(models[used])
    for col in log.columns:
        if col not in ("model_a", "model_b", "outcome") \
                and isinstance(log[col].dtype, pd.CategoricalDtype) \
                and not _used_codes(log[col]).all():
            changed[col] = log[col].cat.remove_unused_categories()
    return log.assign(**changed) if changed else log


def _used_codes(column: pd.Series) -> np.ndarray:
    """Per category of a categorical column: is it used by some row (O(rows), no sort)."""
    codes = column.cat.codes.to_numpy()
    return np.bincount(codes[codes >= 0], minlength=len(column.cat.categories)) > 0


def _outcome_codes(labels: pd.Series, mapping: dict[str, int], path: Path, column: str,
                   row_labels, drop: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Map verdict labels to outcome codes, vectorised over the distinct labels.

    Labels are compared as stripped, lower-cased strings. Labels in ``drop`` are
    unparseable upstream verdicts: they get a ``False`` in the returned keep-mask. Any
    other label not in ``mapping`` raises, naming the file, column and first rows.
    """
    text = labels.astype("string").str.strip().str.lower()
    codes = text.map(mapping).to_numpy(dtype=float, na_value=np.nan)
    dropped = text.isin([d.lower() for d in drop]).to_numpy(dtype=bool, na_value=False)
    bad = np.isnan(codes) & ~dropped
    if bad.any():
        first = np.flatnonzero(bad)[:_SHOW]
        shown = ", ".join(f"{row_labels[i]}: {value!r}"
                          for i, value in zip(first, labels.iloc[first].tolist(), strict=True))
        raise WinrateInputError(
            f"{path}: column {column!r}: {int(bad.sum())} unknown verdict label(s) "
            f"(expected one of {sorted(mapping)}); first rows: {shown}"
        )
    return np.where(dropped, -1, codes).astype(np.int8), ~dropped


# --------------------------------------------------------------------------- mmlu_pro

_MMLU_FILE = re.compile(r"^model_outputs_(.+)_5shots\.(slim\.json\.gz|zip)$")
_MMLU_FIELDS = ("question_id", "category", "src", "answer", "pred")


@dataclass(frozen=True)
class MMLUPro:
    """Per-question MMLU-Pro results.

    Attributes
    ----------
    correctness : questions x models, float: 1.0 correct, 0.0 wrong (incl. null pred),
        NaN where the model has no record for the question. Index ``question_id`` (int).
    questions : per question_id: ``category`` and ``src`` (categorical), ``answer`` (the
        answer key most records give) and ``n_answer_keys`` (how many distinct keys the
        models' records give: upstream re-keyed a few questions between runs).
    files : the file read for each model.
    skipped_records : per model, how many records were not JSON objects (upstream has a
        few bare strings) and were skipped.
    """

    correctness: pd.DataFrame
    questions: pd.DataFrame
    files: dict[str, Path]
    skipped_records: dict[str, int]


def _mmlu_available(fetch: dict) -> list[str]:
    """The pinned models plus any other model file found on a searched directory."""
    found = set()
    for directory, _ in search_dirs(fetch["data_dir"]):
        folder = directory / "mmlu_pro"
        if folder.is_dir():
            for path in folder.iterdir():
                match = _MMLU_FILE.match(path.name)
                if match:
                    found.add(match.group(1))
    extra = sorted(found - set(MMLU_PRO_MODELS))
    return list(MMLU_PRO_MODELS) + extra


def _mmlu_paths(fetch: dict, models: Sequence[str]) -> list[Path]:
    wanted = []
    for model in models:
        cands = [f"mmlu_pro/{mmlu_pro_slim_name(model)}", f"mmlu_pro/{mmlu_pro_zip_name(model)}"]
        try:
            entry = file_entry(cands[1])
        except KeyError:  # a discovered model: no upstream address, so it must be local
            entry = DataFile(cands[1], f"(no upstream address for model {model!r})", None)
        wanted.append((cands, entry))
    return ensure_files("mmlu_pro", wanted, data_dir=fetch["data_dir"],
                        download=fetch["download"], mirror=fetch["mirror"],
                        progress=fetch["progress"])


def _read_json_records(path: Path) -> list:
    """The JSON list of one model file: slim ``.json.gz``, plain ``.json`` or upstream zip."""
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                members = [n for n in archive.namelist()
                           if n.endswith(".json") and not n.startswith("__MACOSX/")]
                if len(members) != 1:
                    raise WinrateInputError(
                        f"{path}: expected exactly one .json file in the zip, found {members}"
                    )
                data = json.loads(archive.read(members[0]))
        elif path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                data = json.load(fh)
        else:
            with open(path, "rb") as fh:
                data = json.load(fh)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        if isinstance(exc, WinrateInputError):
            raise
        raise WinrateInputError(f"{path}: cannot read it as (zipped/gzipped) JSON: {exc}") \
            from exc
    if not isinstance(data, list):
        raise WinrateInputError(f"{path}: expected a JSON list of records, got "
                                f"{type(data).__name__}")
    return data


def _read_mmlu_file(path: Path) -> tuple[pd.DataFrame, int]:
    """One model's records as a frame of the five fields, and the number skipped."""
    data = _read_json_records(path)
    records = [r for r in data if isinstance(r, dict)]  # upstream has a few bare strings
    frame = pd.DataFrame.from_records(records, columns=list(_MMLU_FIELDS))
    if frame.empty:
        raise WinrateInputError(f"{path}: no answer records (found {len(data)} entries)")
    for col in ("question_id", "answer"):
        missing = frame[col].isna().to_numpy()
        if missing.all():
            raise WinrateInputError(f"{path}: the records have no {col!r} field")
        if missing.any():
            raise WinrateInputError(f"{path}: {int(missing.sum())} record(s) without "
                                    f"{col!r}; first record positions: "
                                    f"{first_rows(missing, frame.index)}")
    qid = pd.to_numeric(frame["question_id"], errors="coerce").to_numpy(float)
    bad = ~np.isfinite(qid) | (qid != np.round(qid))
    if bad.any():
        raise WinrateInputError(f"{path}: non-integer question_id in record(s) "
                                f"{first_rows(bad, frame.index)}")
    frame["question_id"] = qid.astype(np.int64)
    dup = frame["question_id"].duplicated(keep=False).to_numpy()
    if dup.any():
        raise WinrateInputError(f"{path}: question_id repeated: "
                                f"{first_rows(dup, frame['question_id'].to_numpy())}")
    return frame, len(data) - len(records)


def read_mmlu_pro(data_dir=None, models: Sequence[str] | None = None, *,
                  download: bool = True, mirror: str | None = None,
                  progress: bool | None = None) -> MMLUPro:
    """Read the per-question MMLU-Pro answers of ``models`` (default: all 29).

    Each model's file is the slim ``model_outputs_<model>_5shots.slim.json.gz`` or the
    upstream ``model_outputs_<model>_5shots.zip`` (one JSON list inside; records that are
    not objects are skipped; extra keys such as the prompt text are ignored). A record is
    correct when ``pred == answer`` of that same record; a null ``pred`` is wrong.
    """
    fetch = {"data_dir": data_dir, "download": download, "mirror": mirror,
             "progress": progress}
    return _read_mmlu_pro(fetch, _check_models(models, _mmlu_available(fetch), "mmlu_pro",
                                               minimum=1))


def _read_mmlu_pro(fetch: dict, chosen: list[str]) -> MMLUPro:
    """:func:`read_mmlu_pro` of an already validated model list."""
    paths = _mmlu_paths(fetch, chosen)
    frames, skipped = [], {}
    for model, path in zip(chosen, paths, strict=True):  # one iteration per model file
        frame, n_skipped = _read_mmlu_file(path)
        skipped[model] = n_skipped
        frames.append(frame)
    sizes = np.array([len(f) for f in frames])
    allf = pd.concat(frames, ignore_index=True)
    model_code = np.repeat(np.arange(len(chosen)), sizes)
    qids = allf["question_id"].to_numpy()
    question_ids, q_code = np.unique(qids, return_inverse=True)
    pred = allf["pred"]
    correct = (pred.notna() & (pred.astype("string") == allf["answer"].astype("string")))
    matrix = np.full((len(question_ids), len(chosen)), np.nan)
    matrix[q_code, model_code] = correct.to_numpy(dtype=float, na_value=0.0)
    correctness = pd.DataFrame(matrix, index=pd.Index(question_ids, name="question_id"),
                               columns=pd.Index(chosen, name="model"))
    questions = _mmlu_question_table(allf, q_code, question_ids, paths)
    return MMLUPro(correctness, questions, dict(zip(chosen, paths, strict=True)), skipped)


def _mmlu_question_table(allf: pd.DataFrame, q_code: np.ndarray,
                         question_ids: np.ndarray, paths: Sequence[Path]) -> pd.DataFrame:
    """Per question: category, src (must agree across models), majority answer key."""
    meta = pd.DataFrame({"q": q_code, "category": allf["category"].astype("string"),
                         "src": allf["src"].astype("string"),
                         "answer": allf["answer"].astype("string")})
    n_keys = meta.groupby("q")[["category", "src", "answer"]].nunique(dropna=True)
    for col in ("category", "src"):
        conflict = n_keys[col].to_numpy() > 1
        if conflict.any():
            notes.emit(notes.conflicting_metadata("mmlu_pro", int(conflict.sum()), col,
                                                  first_rows(conflict, question_ids)))
    # the most common value per question (first in file order on ties)
    table = {}
    for col in ("category", "src", "answer"):
        counts = meta.groupby(["q", col], sort=False).size().reset_index(name="n")
        counts = counts.sort_values(["q", "n"], ascending=[True, False], kind="stable")
        table[col] = counts.drop_duplicates("q").set_index("q")[col]
    out = pd.DataFrame({
        "category": pd.Categorical(table["category"].sort_index().to_numpy()),
        "src": pd.Categorical(table["src"].sort_index().to_numpy()),
        "answer": table["answer"].sort_index().to_numpy(),
        "n_answer_keys": n_keys["answer"].to_numpy(dtype=np.int64),
    }, index=pd.Index(question_ids, name="question_id"))
    missing = out["category"].isna().to_numpy() | out["src"].isna().to_numpy()
    if missing.any():
        raise WinrateInputError(f"mmlu_pro: question(s) without category/src in every "
                                f"file: {first_rows(missing, question_ids)}")
    return out


def mmlu_pro_correctness(data_dir=None, models: Sequence[str] | None = None,
                         **fetch_options) -> pd.DataFrame:
    """Questions x models correctness (1.0 / 0.0 / NaN = no answer); see :func:`read_mmlu_pro`."""
    return read_mmlu_pro(data_dir, models, **fetch_options).correctness


def mmlu_pro_questions(data_dir=None, models: Sequence[str] | None = None,
                       **fetch_options) -> pd.DataFrame:
    """Per-question ``category``, ``src``, ``answer``, ``n_answer_keys``; see :class:`MMLUPro`."""
    return read_mmlu_pro(data_dir, models, **fetch_options).questions


def mmlu_pro_pairwise(result: MMLUPro) -> pd.DataFrame:
    """The pairwise log of an :class:`MMLUPro` result (all pairs of its models).

    Rows are ordered by model pair (pairs in the order of ``itertools.combinations`` of
    the models), then by question_id. Categorical columns keep only the values used
    (``outcome`` keeps all three).
    """
    corr = result.correctness
    models = list(corr.columns)
    if len(models) < 2:
        raise WinrateInputError(f"mmlu_pro: need at least 2 models, got {models}")
    values = corr.to_numpy()
    answered = ~np.isnan(values)
    right = np.where(answered, values, 0.0).astype(np.int8)
    ia, ib = np.triu_indices(len(models), k=1)
    # pair-major layout: (n_pairs, n_questions)
    both = (answered[:, ia] & answered[:, ib]).T
    diff = (right[:, ia] - right[:, ib]).T
    pair, q = np.divmod(np.flatnonzero(both), values.shape[0])
    lookup = np.array([_B, _TIE, _A], dtype=np.int8)  # diff -1, 0, +1
    outcome = lookup[diff[pair, q] + 1]
    questions = result.questions
    q_small = q.astype(np.int32)
    log = pd.DataFrame({
        "prompt_id": _categorical(q_small, corr.index.astype(str)),
        "judge_id": _categorical(np.zeros(len(q), np.int8), ["exact_match"]),
        "model_a": _categorical(ia[pair].astype(np.int16), models),
        "model_b": _categorical(ib[pair].astype(np.int16), models),
        "outcome": _categorical(outcome, OUTCOMES),
        "category": _categorical(questions["category"].cat.codes.to_numpy()[q_small],
                                 questions["category"].cat.categories),
        "src": _categorical(questions["src"].cat.codes.to_numpy()[q_small],
                            questions["src"].cat.categories),
    })
    return _drop_unused_categories(log)


def mmlu_pro_scores(data_dir=None, models: Sequence[str] | None = None,
                    **fetch_options) -> ScoreTable:
    """MMLU-Pro as a per-question score table (:class:`winrate.io.logs.ScoreTable`): the
    comparison log of :func:`read_dataset` ``("mmlu_pro")`` -- the same models in the same
    order, the same axes ``prompt``, ``judge`` (one: ``exact_match``), ``category`` and
    ``src`` -- without building its rows (:mod:`winrate.io.scores`)."""
    fetch = {"data_dir": data_dir, "download": True, "mirror": None, "progress": None,
             **fetch_options}
    result = _read_mmlu_pro(fetch, _check_models(models, _mmlu_available(fetch), "mmlu_pro"))
    corr, questions = result.correctness, result.questions
    axes = {"judge": (np.zeros(len(corr), np.int64), ["exact_match"])}
    for col in ("category", "src"):
        axes[col] = (questions[col].cat.codes.to_numpy(), questions[col].cat.categories)
    return score_table(corr.to_numpy(), corr.columns, corr.index.astype(str), axes)


#: The datasets that are per-question evals, as score tables (:func:`read_scores`).
SCORE_DATASETS = {"mmlu_pro": mmlu_pro_scores}


def read_scores(name: str, models=None, **options) -> ScoreTable:
    """A bundled per-question eval (:data:`SCORE_DATASETS`) as a score table: the log of
    :func:`read_dataset` with its rows never built."""
    if name not in SCORE_DATASETS:
        raise WinrateInputError(f"dataset {name!r} is not a per-question eval; those are: "
                                f"{', '.join(SCORE_DATASETS)}")
    return SCORE_DATASETS[name](models=models, **options)


def _load_mmlu_pro(fetch: dict, models: Sequence[str] | None) -> pd.DataFrame:
    chosen = _check_models(models, _mmlu_available(fetch), "mmlu_pro")
    return mmlu_pro_pairwise(_read_mmlu_pro(fetch, chosen))


# --------------------------------------------------------------------------- llmfao

LLMFAO_JUDGES = ("crowd", "gpt-3.5", "gpt-4")
_LLMFAO_WINNER = {"left": _A, "right": _B, "tie": _TIE}
_LLMFAO_FILES = {"crowd": "llmfao/crowd-comparisons.csv",
                 "gpt-3.5": "llmfao/gpt3-comparisons.csv",
                 "gpt-4": "llmfao/gpt4-comparisons.csv",
                 "prompts": "llmfao/prompts.jsonl"}


def _check_judges(judges, allowed: Sequence[str], dataset: str) -> list[str]:
    if isinstance(judges, str):
        judges = (judges,)
    judges = list(judges)
    unknown = [j for j in judges if j not in allowed]
    if unknown or not judges:
        raise WinrateInputError(f"{dataset}: unknown judge(s) {unknown or judges}; "
                                f"choose from {list(allowed)}")
    return judges


def _read_llmfao_csv(path: Path, with_worker: bool) -> pd.DataFrame:
    cols = ["id", "prompt", "winner", "left", "right"] + (["worker"] if with_worker else [])
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    _require(frame, cols, path)
    frame = frame[cols]
    empty = (frame == "").to_numpy().any(axis=1)
    if empty.any():
        raise WinrateInputError(f"{path}: empty value(s) in line(s) "
                                f"{first_rows(empty, frame.index + 2)}")
    return frame


def _load_llmfao(fetch: dict, models: Sequence[str] | None, *,
                 judges: Sequence[str] = LLMFAO_JUDGES, gpt_pairs: str = "crowd"
                 ) -> pd.DataFrame:
    judges = _check_judges(judges, LLMFAO_JUDGES, "llmfao")
    if gpt_pairs not in ("crowd", "all"):
        raise WinrateInputError(f"llmfao: gpt_pairs must be 'crowd' or 'all', got "
                                f"{gpt_pairs!r}")
    needed = ["crowd", *[j for j in judges if j != "crowd"], "prompts"]
    rels = [_LLMFAO_FILES[k] for k in needed]
    paths = dict(zip(needed, ensure_files(
        "llmfao", [([r], file_entry(r)) for r in rels], **fetch), strict=True))
    crowd = _read_llmfao_csv(paths["crowd"], with_worker=True)
    parts = []
    if "crowd" in judges:
        codes, _ = _outcome_codes(crowd["winner"], _LLMFAO_WINNER, paths["crowd"], "winner",
                                  crowd.index + 2)
        parts.append(crowd.assign(judge_id="crowd:" + crowd["worker"], code=codes)
                     .drop(columns="worker"))
    pair_cols = ["prompt", "left", "right"]
    crowd_pairs = crowd.drop_duplicates("id").set_index("id")[pair_cols]
    for judge in (j for j in judges if j != "crowd"):
        gpt = _read_llmfao_csv(paths[judge], with_worker=False)
        dup = gpt["id"].duplicated().to_numpy()
        if dup.any():
            raise WinrateInputError(f"{paths[judge]}: pair id repeated in line(s) "
                                    f"{first_rows(dup, gpt.index + 2)}")
        in_crowd = gpt["id"].isin(crowd_pairs.index).to_numpy()
        same = crowd_pairs.reindex(gpt["id"].to_numpy()).to_numpy() == gpt[pair_cols].to_numpy()
        clash = in_crowd & ~same.all(axis=1)
        if clash.any():
            raise WinrateInputError(
                f"{paths[judge]}: pair id(s) whose prompt/left/right differ from "
                f"{paths['crowd'].name}: lines {first_rows(clash, gpt.index + 2)}")
        codes, _ = _outcome_codes(gpt["winner"], _LLMFAO_WINNER, paths[judge], "winner",
                                  gpt.index + 2)
        gpt = gpt.assign(judge_id=judge, code=codes)
        parts.append(gpt.loc[in_crowd] if gpt_pairs == "crowd" else gpt)
    log = pd.concat(parts, ignore_index=True)
    prompts = pd.read_json(paths["prompts"], lines=True, dtype={"id": str})
    _require(prompts, ["id", "type"], paths["prompts"])
    ptype = log["prompt"].map(prompts.set_index(prompts["id"].astype(str))["type"])
    unknown = ptype.isna().to_numpy()
    if unknown.any():
        raise WinrateInputError(f"{paths['prompts']}: prompt id(s) "
                                f"{sorted(set(log['prompt'][unknown]))[:_SHOW]} are not "
                                "listed")
    model_names = sorted(set(log["left"]) | set(log["right"]))
    prompt_ids = sorted(set(log["prompt"]), key=natural_key)
    out = pd.DataFrame({
        "prompt_id": pd.Categorical(log["prompt"], categories=prompt_ids),
        "judge_id": pd.Categorical(log["judge_id"],
                                   categories=_judge_order(log["judge_id"])),
        "model_a": pd.Categorical(log["left"], categories=model_names),
        "model_b": pd.Categorical(log["right"], categories=model_names),
        "outcome": _categorical(log["code"].to_numpy(np.int8), OUTCOMES),
        "category": pd.Categorical(ptype.astype(str)),
        "item_id": pd.Categorical(log["id"], categories=sorted(set(log["id"]), key=natural_key)),
    })
    return _select_models(out, models, "llmfao")


def _judge_order(judge_ids: pd.Series) -> list[str]:
    """Crowd workers by number, then the model judges."""
    names = set(judge_ids)
    crowd = sorted((j for j in names if j.startswith("crowd:")),
                   key=lambda j: natural_key(j.split(":", 1)[1]))
    return crowd + sorted(names - set(crowd))


# --------------------------------------------------------------------------- pandalm

PANDALM_JUDGES = ("annotator1", "annotator2", "annotator3", "gpt-3.5", "pandalm-7b")
_PANDALM_LABEL = {"1": _A, "2": _B, "0": _TIE, "tie": _TIE}
_PANDALM_UNPARSEABLE = ("garbage",)
_PANDALM_JUDGE_FILES = {"gpt-3.5": ("pandalm/gpt-3.5-turbo-testset-v1.json", "gpt_result"),
                        "pandalm-7b": ("pandalm/pandalm-7b-testset-v1.json", "pandalm_result")}
_PANDALM_TESTSET = "pandalm/testset-v1.json"


def _read_json_frame(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    try:
        with open(path, "rb") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise WinrateInputError(f"{path}: cannot read it as JSON: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data[:1]):
        raise WinrateInputError(f"{path}: expected a JSON list of objects")
    frame = pd.DataFrame.from_records(data)
    _require(frame, columns, path)
    idx = pd.to_numeric(frame["idx"], errors="coerce")
    bad = idx.isna().to_numpy() | frame["idx"].duplicated(keep=False).to_numpy()
    if bad.any():
        raise WinrateInputError(f"{path}: missing or repeated 'idx' in record(s) "
                                f"{first_rows(bad, frame.index)}")
    frame["idx"] = idx.astype(np.int64)
    return frame


def split_cmp_keys(keys: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Split ``<model1>_<model2>`` comparison keys into the two model names.

    A key with one underscore splits there. Model names may contain underscores, so a key
    with several is split where both halves are names known from other keys; failing that,
    where exactly one split has one known half (the other half then becomes known). Keys
    are resolved repeatedly until nothing changes; a key that no rule singles out is an
    error naming it and its candidate splits.
    """
    distinct = list(dict.fromkeys(keys))  # a handful of distinct keys, not rows
    options = {k: [(k[:i], k[i + 1:]) for i, ch in enumerate(k) if ch == "_"
                   and 0 < i < len(k) - 1] for k in distinct}
    empty = [k for k, opts in options.items() if not opts]
    if empty:
        raise WinrateInputError(f"pandalm: cmp_key(s) {empty[:_SHOW]} are not "
                                "'<model1>_<model2>'")
    out = {k: opts[0] for k, opts in options.items() if len(opts) == 1}
    known = {name for pair in out.values() for name in pair}
    pending = [k for k in distinct if k not in out]
    strict = True
    while pending:
        progress = False
        for key in list(pending):
            both = [o for o in options[key] if o[0] in known and o[1] in known]
            one = [o for o in options[key] if o[0] in known or o[1] in known]
            pick = both if (strict or both) else one
            if len(pick) == 1:
                out[key] = pick[0]
                known.update(pick[0])
                pending.remove(key)
                progress = True
            elif len(both) > 1:
                break
        if not progress and strict:
            strict = False
        elif not progress:
            break
        else:
            strict = True
    if pending:
        key = pending[0]
        raise WinrateInputError(
            f"pandalm: cannot split cmp_key {key!r} into two model names unambiguously "
            f"(candidates {options[key]}; names known from other keys: {sorted(known)})"
        )
    return out


def _load_pandalm(fetch: dict, models: Sequence[str] | None, *,
                  judges: Sequence[str] = PANDALM_JUDGES) -> pd.DataFrame:
    judges = _check_judges(judges, PANDALM_JUDGES, "pandalm")
    rels = [_PANDALM_TESTSET] + [_PANDALM_JUDGE_FILES[j][0] for j in judges
                                 if j in _PANDALM_JUDGE_FILES]
    paths = dict(zip(rels, ensure_files("pandalm", [([r], file_entry(r)) for r in rels],
                                        **fetch), strict=True))
    test_path = paths[_PANDALM_TESTSET]
    test = _read_json_frame(test_path, ["idx", "cmp_key", "instruction", "input",
                                        "motivation_app", *[j for j in judges
                                                            if j.startswith("annotator")]])
    split = split_cmp_keys(test["cmp_key"].tolist())
    model1 = test["cmp_key"].map({k: v[0] for k, v in split.items()})
    model2 = test["cmp_key"].map({k: v[1] for k, v in split.items()})
    # dropna=False: a null input (or instruction) is a key like any other, not a lost row
    prompt_code = test.groupby(["instruction", "input"], sort=False,
                               dropna=False).ngroup().to_numpy()
    parts = []  # (item positions, outcome codes, judge name)
    for judge in judges:
        if judge.startswith("annotator"):
            codes, keep = _outcome_codes(test[judge], _PANDALM_LABEL, test_path, judge,
                                         test["idx"].to_numpy())
            parts.append((np.flatnonzero(keep), codes[keep], judge))
            continue
        rel, column = _PANDALM_JUDGE_FILES[judge]
        verdicts = _read_json_frame(paths[rel], ["idx", column])
        pos = pd.Index(test["idx"]).get_indexer(verdicts["idx"])
        orphan = pos < 0
        if orphan.any():
            raise WinrateInputError(f"{paths[rel]}: idx value(s) not in {test_path.name}: "
                                    f"{first_rows(orphan, verdicts['idx'].to_numpy())}")
        codes, keep = _outcome_codes(verdicts[column], _PANDALM_LABEL, paths[rel], column,
                                     verdicts["idx"].to_numpy(), drop=_PANDALM_UNPARSEABLE)
        if not keep.all():
            notes.emit(notes.labelled_verdicts_dropped(
                "pandalm", int((~keep).sum()), len(keep), judge, list(_PANDALM_UNPARSEABLE),
                paths[rel].name))
        parts.append((pos[keep], codes[keep], judge))
    item = np.concatenate([p[0] for p in parts])
    outcome = np.concatenate([p[1] for p in parts])
    judge_code = np.concatenate([np.full(len(p[0]), k, np.int8) for k, p in enumerate(parts)])
    model_names = sorted(set(model1) | set(model2))
    width = len(str(prompt_code.max()))
    prompt_names = [f"p{k:0{width}d}" for k in range(prompt_code.max() + 1)]
    app = pd.Categorical(test["motivation_app"].astype(str))
    m1 = pd.Categorical(model1, categories=model_names).codes
    m2 = pd.Categorical(model2, categories=model_names).codes
    out = pd.DataFrame({
        "prompt_id": _categorical(prompt_code[item], prompt_names),
        "judge_id": _categorical(judge_code, [p[2] for p in parts]),
        "model_a": _categorical(m1[item], model_names),
        "model_b": _categorical(m2[item], model_names),
        "outcome": _categorical(outcome, OUTCOMES),
        "category": _categorical(app.codes[item], app.categories),
        "item_id": _categorical(item, test["idx"].astype(str).to_numpy()),
    })
    return _select_models(out, models, "pandalm")


# --------------------------------------------------------------------------- chatbot_arena

_ARENA_FILE = "chatbot_arena/chatbotarena_20240814.json"


def _load_chatbot_arena(fetch: dict, models: Sequence[str] | None, *,
                        both_bad: str = "tie") -> pd.DataFrame:
    if both_bad not in ("tie", "drop"):
        raise WinrateInputError(f"chatbot_arena: both_bad must be 'tie' or 'drop', got "
                                f"{both_bad!r}")
    (path,) = ensure_files("chatbot_arena", [([_ARENA_FILE], file_entry(_ARENA_FILE))],
                           **fetch)
    try:
        with open(path, "rb") as fh:
            data = json.load(fh)
        names = list(data["models"])
        pairs = np.asarray(data["X"], dtype=np.int64)
        counts = np.asarray(data["Y"], dtype=np.int64)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WinrateInputError(f"{path}: expected JSON with 'models', 'X' (model index "
                                f"pairs) and 'Y' (counts): {exc}") from exc
    n = len(pairs)
    if pairs.shape != (n, 2) or counts.ndim != 2 or counts.shape[0] != n \
            or counts.shape[1] not in (3, 4):
        raise WinrateInputError(f"{path}: X must be n x 2 and Y n x 3 or n x 4, got "
                                f"{pairs.shape} and {counts.shape}")
    bad = ((pairs < 0) | (pairs >= len(names))).any(axis=1) | (pairs[:, 0] == pairs[:, 1])
    bad |= (counts < 0).any(axis=1)
    if bad.any():
        raise WinrateInputError(f"{path}: invalid model index or negative count in X/Y "
                                f"row(s) {first_rows(bad, np.arange(n))}")
    ties = counts[:, 2] + (counts[:, 3] if counts.shape[1] == 4 and both_bad == "tie" else 0)
    per_outcome = np.stack([counts[:, 0], counts[:, 1], ties], axis=1)  # win, loss, tie
    row, outcome = np.nonzero(per_outcome)
    out = pd.DataFrame({
        "model_a": _categorical(pairs[row, 0], names),
        "model_b": _categorical(pairs[row, 1], names),
        "outcome": _categorical(outcome.astype(np.int8), OUTCOMES),
        "count": per_outcome[row, outcome],
    })
    return _select_models(out, models, "chatbot_arena")



# --------------------------------------------------------------------------- folders read by
# winrate.io.formats (alpaca_eval, qlora, prd): found like the other files, never downloaded

_FOLDER_SOURCES = {
    "alpaca_eval": ("alpaca_eval/weighted_alpaca_eval_gpt4_turbo",
                    "https://github.com/tatsu-lab/alpaca_eval/tree/cd543a149df8/results "
                    "(<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json, saved as "
                    "<model>.json or <model>.json.gz)"),
    "qlora": ("qlora/ratings-gpt4/vicuna",
              "https://github.com/artidoro/qlora/tree/7f4e95a68dc0/eval/ratings-gpt4/vicuna"),
    "prd": ("prd", "https://github.com/bcdnlp/PRD/tree/35fb99e5d5c7/data/vicuna80 "
                   "(the ratings-<reviewer> folders)"),
}
_QLORA_RATINGS = ("pairwise", "relative-gpt-3.5")
_QLORA_RENAMES = {"gpt-3.5": "gpt35"}  # relative-gpt-3.5's ChatGPT: same answer ids as gpt35
PRD_JUDGES = ("bard", "claude", "gpt35", "gpt4", "human", "vicuna-13b")


def _local_folder(fetch: dict, name: str) -> Path:
    """The dataset's folder on the first searched directory that has it."""
    relative, source = _FOLDER_SOURCES[name]
    dirs = search_dirs(fetch["data_dir"])
    for directory, _ in dirs:
        if (directory / relative).is_dir():
            return directory / relative
    looked = "; ".join(f"{d} ({origin})" for d, origin in dirs)
    raise DataUnavailableError(
        f"dataset {name!r}: folder {relative}/ is not on this machine (looked in: {looked}). "
        f"It is not downloaded automatically: copy {source} into <dir>/{relative}/ and set "
        "WINRATE_DATA=<dir> (or pass data_dir=<dir>).")


def _rename_models(frame: pd.DataFrame, renames: dict[str, str]) -> pd.DataFrame:
    """Rename models (two names of one model become one); the shared list stays sorted."""
    names = frame["model_a"].cat.categories
    models = sorted({renames.get(m, m) for m in names})
    position = pd.Index(models).get_indexer([renames.get(m, m) for m in names])
    return frame.assign(**{col: _categorical(position[frame[col].cat.codes.to_numpy()],
                                             models) for col in ("model_a", "model_b")})


def _load_alpaca_eval(fetch: dict, models: Sequence[str] | None, *,
                      discrete: bool = False) -> pd.DataFrame:
    frame = read_format(_local_folder(fetch, "alpaca_eval"), "alpaca_eval", discrete=discrete)
    return _select_models(frame, models, "alpaca_eval")  # the reader names NullModel


def _load_qlora(fetch: dict, models: Sequence[str] | None, *,
                ratings: Sequence[str] = ("pairwise",)) -> pd.DataFrame:
    chosen = _check_judges(ratings, _QLORA_RATINGS, "qlora ratings")
    folder = _local_folder(fetch, "qlora")
    missing = [r for r in chosen if not (folder / r).is_dir()]
    if missing:
        raise DataUnavailableError(f"qlora: sub-folder(s) {missing} not found in {folder}")
    frame = read_format([folder / r for r in chosen], "qlora")
    return _select_models(_rename_models(frame, _QLORA_RENAMES), models, "qlora")


def _load_prd(fetch: dict, models: Sequence[str] | None, *,
              judges: Sequence[str] = PRD_JUDGES, duplicates: str = "keep") -> pd.DataFrame:

    chosen = _check_judges(judges, PRD_JUDGES, "prd")
    folder = _local_folder(fetch, "prd")
    missing = [j for j in chosen if not (folder / f"ratings-{j}").is_dir()]
    if missing:
        raise DataUnavailableError(f"prd: folder(s) {['ratings-' + j for j in missing]} not "
                                   f"found in {folder}")
    frame = read_format([folder / f"ratings-{j}" for j in chosen], "prd",
                        duplicates=duplicates)
    return _select_models(frame, models, "prd")


def read_dataset(name: str, models=None, **options) -> ComparisonLog:
    """A bundled dataset (:func:`winrate.io.datasets.load`) as a log with all its axes.

    Every dataset-specific column (``category``, ``src``, ``item_id``) becomes an extra
    axis; a ``count`` column becomes the frequency weight; ``style_*`` columns (style
    differences of the two answers) become features, for ``--covariates``.
    """
    frame = load(name, models=models, **options)
    standard = (*DEFAULT_COLUMNS.values(), "count")
    features = tuple(c for c in frame.columns if str(c).startswith("style_"))
    extra = tuple(c for c in frame.columns if c not in standard and c not in features)
    weight = "count" if "count" in frame.columns else None
    return read_comparisons(frame, weight_col=weight, cluster_cols=extra, feature_cols=features)

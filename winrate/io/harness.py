"""Per-question scores from evaluation harness logs: lm-evaluation-harness and Inspect AI.

:func:`read_harness` reads the logs of one or more runs (a file, a folder searched
recursively, or a list of them) as a long table, one row per (question, run):
``question`` (``<task>/<id>``), ``model`` (the run's label), ``score`` (in [0, 1]),
``task``, ``metric``, ``model_name``, ``file`` and, per harness, ``filter`` (lm-eval) or
``epochs`` (Inspect).
:func:`harness_scores` turns it into a :class:`~winrate.io.logs.ScoreTable` (the
``scores`` format, :mod:`winrate.io.scores`), so that runs are compared question by
question: a pairwise leaderboard of the runs, or, as the long table, the paired
differences of ``winrate.evals`` (``question_scores`` then ``compare``).

A run's label is its model; two runs of one model (a model before and after a change)
get the run's date (lm-eval) or log file name (Inspect) after an ``@``, so that they stay
two runs.

Formats (:data:`HARNESS_FORMATS`)
---------------------------------
``lm_eval``
    lm-evaluation-harness ``--log_samples`` output (github.com/EleutherAI/lm-evaluation-
    harness, ``lm_eval/loggers/evaluation_tracker.py``, ``save_results_samples`` and
    ``save_results_aggregated``): ``<output>/<model_name_sanitized>/samples_<task>_
    <date>.jsonl``, one JSON object per (document, filter) with ``doc_id``, ``filter``,
    ``metrics`` (the metric names) and each metric's value under its name (built in
    ``lm_eval/evaluator.py``, ``evaluate``), beside ``results_<date>.json`` whose
    ``model_name`` names the model (else ``config.model_args``'s ``pretrained=``, else
    the folder). The question is ``<task>/<doc_id>``. A task logged under several filters
    (gsm8k's ``strict-match`` and ``flexible-extract``) has one line per filter and
    document: one filter must be chosen (``filter=``), as must one metric where the lines
    carry several (``metric=``); a task without that filter or metric is an error naming
    it. Booleans are 0/1.
``inspect``
    Inspect AI logs (github.com/UKGovernmentBEIS/inspect_ai), read by
    ``inspect_ai.log.read_eval_log`` where inspect_ai is installed (the ``inspect`` extra,
    ``pip install 'winrate[inspect]'``), else by winrate's own reader of the files below,
    which gives the same frames: ``.eval`` files, a zip
    archive written by ``inspect_ai/log/_recorders/eval.py`` (``EvalRecorder``: one
    ``samples/<id>_epoch_<epoch>.json`` per sample and epoch, the eval spec in
    ``header.json``, ``_journal/start.json`` or, in older logs, ``start.json``), and
    ``.json`` logs (the whole ``EvalLog``, samples in ``samples``). The model is the
    spec's ``eval.model``, the task ``eval.task``; each sample's ``scores`` maps a
    scorer name to ``{"value": ...}``. Values are read as Inspect's own
    ``value_to_float`` reads them (``inspect_ai/scorer/_metric.py``): ``C`` 1, ``P``
    0.5, ``I`` and ``N`` 0, ``yes``/``true`` 1, ``no``/``false`` 0, numbers as numbers;
    where upstream warns and counts anything else as 0, this reader stops with an
    error naming the file and sample. One scorer must be chosen where samples carry
    several (``scorer=``); a dict value needs ``key=``. Several epochs of a sample are
    averaged (Inspect's default ``mean`` reducer); ``epochs`` counts them.
``eee``
    Every Eval Ever instance-level JSON Lines (github.com/evaleval/every_eval_ever,
    ``instance_level_eval.schema.json``, version ``instance_level_eval_0.2.1``), the
    format its converters write from Inspect, HELM and lm-eval: one object per (model,
    sample) with ``evaluation_id``, ``model_id``, ``evaluation_name``, ``sample_id`` and
    ``evaluation{score, is_correct}``. The question is ``<evaluation_name>/<sample_id>``,
    the run ``evaluation_id``; the score is ``evaluation.score`` (in [0, 1]), or with
    ``value="is_correct"`` the 0/1 of ``evaluation.is_correct``.
``helm``
    HELM runs (github.com/stanford-crfm/helm): ``benchmark_output/runs/<suite>/<run name>/
    per_instance_stats.json``, a list of ``PerInstanceStats`` (``helm/benchmark/metrics/
    metric.py``: ``instance_id``, ``perturbation``, ``train_trial_index``, ``stats``, each
    stat with ``name{name, split}`` and ``mean``), beside ``run_spec.json`` whose
    ``adapter_spec.model`` names the model (else the run name's ``model=``). The question
    is ``<run name without model=...>/<instance_id>``, so that two models' runs of one
    scenario pair up; the metric must be named where the stats hold several (``metric=``;
    HELM logs many, e.g. ``exact_match``, ``quasi_exact_match``, ``num_output_tokens``).
    Train trials are averaged. Perturbed instances (robustness and fairness runs) are an
    error: they are other questions than the originals (read their runs separately).
``lighteval``
    lighteval ``--save-details`` output (github.com/huggingface/lighteval,
    ``src/lighteval/logging/evaluation_tracker.py``, ``save_details``):
    ``<output>/details/<model name>/<date>/details_<task>_<date>.parquet``, one row per
    sample with the struct columns ``doc`` (``lighteval/tasks/requests.py``, ``Doc``:
    ``id``, ``task_name``, ...) and ``metric`` (each metric's value by name). The model is
    the folder path under ``details/``, the task the file name's (as lighteval's own
    ``load_details_datasets`` reads it); the question is ``<task>/<doc.id>``, or, where
    the docs carry no id, ``<task>/<row>`` in the order the file lists them. The metric
    must be named where there are several (``metric=``).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from winrate import notes
from winrate.errors import WinrateInputError, first_rows
from winrate.io.logs import ScoreTable
from winrate.io.scores import score_table

__all__ = ["HARNESS_FORMATS", "harness_scores", "inspect_value", "read_harness"]

#: The harness log formats of :func:`read_harness`.
HARNESS_FORMATS = ("lm_eval", "inspect", "eee", "helm", "lighteval")
_COLUMNS = ("question", "model", "score", "task", "metric")


def read_harness(path, name: str, **options) -> pd.DataFrame:
    """The long table of the logs under ``path`` in harness format ``name`` (module doc);
    ``options``: lm_eval ``metric``, ``filter``; inspect ``scorer``, ``key``; eee
    ``value``; helm and lighteval ``metric``."""
    readers = {"lm_eval": _read_lm_eval, "inspect": _read_inspect, "eee": _read_eee,
               "helm": _read_helm, "lighteval": _read_lighteval}
    if name not in readers:
        raise WinrateInputError(f"unknown harness format {name!r}; available: "
                                f"{', '.join(HARNESS_FORMATS)}")
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    frame = readers[name](paths, **options)
    return _label_runs(frame)


def harness_scores(path, name: str, **options) -> ScoreTable:
    """:func:`read_harness` as a :class:`ScoreTable`: questions x runs, the task and each
    sample metadata column as further clustering axes (and ``by`` columns). A metadata
    value that differs between runs for one question takes its most common value, with
    a ``conflicting-metadata`` note."""
    frame = read_harness(path, name, **options)
    questions, q_codes = np.unique(frame["question"].to_numpy(str), return_inverse=True)
    runs, r_codes = np.unique(frame["model"].to_numpy(str), return_inverse=True)
    matrix = np.full((questions.size, runs.size), np.nan)
    matrix[q_codes, r_codes] = frame["score"].to_numpy(float)
    axes = {column: _per_question(frame, column, questions, q_codes, name)
            for column in ("task", *(c for c in frame.columns if c not in _RESERVED))}
    return score_table(matrix, runs.astype(object), questions.astype(object), axes)


def _per_question(frame: pd.DataFrame, column: str, questions: np.ndarray,
                  q_codes: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column's codes per question and its labels: each question's most common value
    (ties: the first in label order); questions with several values are counted in a
    note."""
    labels, codes = np.unique(frame[column].fillna("").to_numpy(str), return_inverse=True)
    pairs = pd.DataFrame({"q": q_codes, "v": codes})
    counted = pairs.groupby(["q", "v"]).size().rename("n").reset_index()
    distinct = np.bincount(counted["q"].to_numpy(), minlength=questions.size)
    if (distinct > 1).any():
        notes.emit(notes.conflicting_metadata(name, int((distinct > 1).sum()), column,
                                              first_rows(distinct > 1, questions)))
    best = counted.sort_values(["q", "n", "v"], ascending=[True, False, True])
    best = best.drop_duplicates("q")
    per_question = np.empty(questions.size, np.int64)
    per_question[best["q"].to_numpy()] = best["v"].to_numpy()
    return per_question, labels.astype(object)


#: Columns of the long table; a metadata key among them is read as ``metadata.<key>``.
_RESERVED = {"question", "model", "score", "task", "metric", "filter", "epochs", "trials",
             "run_id", "file", "model_name", "prompt"}


def _metadata_columns(records: list[dict]) -> dict[str, list[str]]:
    """The scalar values of the records' ``metadata`` objects (a sample's subject,
    difficulty), one text column per key (empty where a record lacks it)."""
    metas = [r.get("metadata") if isinstance(r.get("metadata"), dict) else {}
             for r in records]
    keys = sorted({k for m in metas for k, v in m.items()
                   if isinstance(v, (str, int, float, bool))})
    return {(f"metadata.{k}" if k in _RESERVED else k): [_scalar_text(m.get(k)) for m in metas]
            for k in keys}


def _scalar_text(value) -> str:
    """A metadata value as text (``true`` / ``false`` for booleans; empty for none or a
    list or object)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return ""


def _label_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """``model``: the run's label, its model or ``model@run id`` where one model has
    several runs (the model as logged stays in ``model_name``); one score per (question,
    run) is checked."""
    runs_per_model = frame.groupby("model")["run_id"].transform("nunique")
    run = np.where(runs_per_model > 1, frame["model"] + "@" + frame["run_id"], frame["model"])
    frame = frame.assign(model=run, model_name=frame["model"])
    repeated = frame.duplicated(["question", "model"], keep=False).to_numpy()
    if repeated.any():
        first = frame.loc[repeated].iloc[0]
        raise WinrateInputError(f"{int(repeated.sum())} scores repeat a (question, run), "
                                f"first: question {first['question']!r} of run "
                                f"{first['model']!r} in {first['file']}")
    return frame.drop(columns="run_id")


def _files(paths: Sequence, suffixes: tuple[str, ...], what: str) -> list[Path]:
    """The files ``paths`` name, folders searched recursively for ``suffixes``."""
    found = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.name.endswith(suffixes)))
        else:
            raise WinrateInputError(f"no such file or folder: {str(path)!r}")
    if not found:
        raise WinrateInputError(f"no {what} under {[str(p) for p in paths]}")
    return sorted(set(found))


# --------------------------------------------------------------------------- lm_eval


def _read_lm_eval(paths: Sequence, *, metric: str | None = None,
                  filter: str | None = None) -> pd.DataFrame:  # noqa: A002 (lm-eval's word)
    """``samples_<task>_<date>.jsonl`` files (module docstring)."""
    files = _files(paths, (".jsonl",), "lm-eval samples_<task>_<date>.jsonl file")
    parts = [_lm_eval_file(path, metric, filter) for path in files]
    return pd.concat(parts, ignore_index=True)


def _lm_eval_file(path: Path, metric: str | None, filter_: str | None) -> pd.DataFrame:
    """The scores of one samples file."""
    task, date = _lm_eval_name(path)
    records = _json_lines(path)
    lines = np.arange(1, len(records) + 1)
    for key in ("doc_id",):
        missing = np.array([key not in r for r in records])
        if missing.any():
            raise WinrateInputError(f"{path}: field {key!r} missing in line(s) "
                                    f"{first_rows(missing, lines)}")
    filters = np.array([str(r.get("filter", "none")) for r in records], dtype=object)
    chosen = _choose(sorted(set(filters)), filter_, "filter", path)
    keep = filters == chosen
    records, lines = [r for r, k in zip(records, keep, strict=True) if k], lines[keep]
    names = sorted({m for r in records for m in r.get("metrics", _metric_keys(r))})
    metric = _choose(names, metric, "metric", path)
    values = [r.get(metric) for r in records]
    score = np.array([_number(v) for v in values], dtype=float)
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        raise WinrateInputError(f"{path}: metric {metric!r} is missing, not a number or "
                                f"outside [0, 1] in line(s) {first_rows(bad, lines)}")
    doc = np.array([str(r["doc_id"]) for r in records], dtype=object)
    model, run_id = _lm_eval_model(path, date)
    return pd.DataFrame({"question": f"{task}/" + pd.Series(doc, dtype=object),
                         "model": model, "score": score, "task": task, "metric": metric,
                         "filter": chosen, "run_id": run_id, "file": str(path)})


def _lm_eval_name(path: Path) -> tuple[str, str]:
    """Task and date of ``samples_<task>_<date>.jsonl`` (the date is ISO time with ``-``
    for ``:``, so it holds no ``_``)."""
    stem = path.name.removesuffix(".jsonl")
    if not stem.startswith("samples_") or "_" not in stem[len("samples_"):]:
        raise WinrateInputError(f"{path}: not an lm-eval samples file (expected "
                                "samples_<task>_<date>.jsonl)")
    task, date = stem[len("samples_"):].rsplit("_", 1)
    return task, date


_BOOKKEEPING = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter",
                "metrics", "doc_hash", "prompt_hash", "target_hash"}


def _metric_keys(record: dict) -> list[str]:
    """The metric names of a record from an lm-eval version without ``metrics``: its
    number-valued fields other than the bookkeeping ones."""
    return [k for k, v in record.items() if k not in _BOOKKEEPING
            and isinstance(v, (int, float, bool))]


def _choose(found: list[str], wanted: str | None, what: str, path: Path) -> str:
    """``wanted`` if the file has it, the only one found if not given; else an error."""
    if wanted is not None:
        if wanted not in found:
            raise WinrateInputError(f"{path}: no {what} {wanted!r} (it has {found})")
        return wanted
    if len(found) != 1:
        raise WinrateInputError(f"{path}: {len(found)} {what}s {found}: choose one "
                                f"({what}=)")
    return found[0]


def _number(value) -> float:
    """A metric value as a float (booleans 0/1); NaN for anything else."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    return np.nan


def _lm_eval_model(path: Path, date: str) -> tuple[str, str]:
    """The model of a samples file, from the sibling ``results_<date>.json`` (its
    ``model_name``, else ``pretrained=`` of ``config.model_args``), else the folder's
    name; and the run id (the date)."""
    results = path.with_name(f"results_{date}.json")
    if results.is_file():
        try:
            header = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise WinrateInputError(f"{results}: cannot read it as JSON: {error}") from None
        name = header.get("model_name") or _pretrained(header.get("config", {}))
        if name:
            return str(name), date
    return path.parent.name, date


def _pretrained(config) -> str | None:
    """``pretrained=`` of lm-eval's ``model_args`` string (``pretrained=org/m,dtype=...``)."""
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(args, str):
        for part in args.split(","):
            key, _, value = part.partition("=")
            if key.strip() == "pretrained":
                return value.strip()
    return None


def _json_lines(path: Path) -> list[dict]:
    """The JSON objects of a JSON Lines file; a broken line is an error naming it."""
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise WinrateInputError(f"{path}: line {number} is not valid JSON: "
                                        f"{error.msg}") from None
            if not isinstance(record, dict):
                raise WinrateInputError(f"{path}: line {number} is not a JSON object")
            records.append(record)
    if not records:
        raise WinrateInputError(f"{path}: no samples")
    return records


# --------------------------------------------------------------------------- inspect

_SPEC_FILES = ("header.json", "_journal/start.json", "start.json")
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def inspect_value(value) -> float:
    """A score value as Inspect's ``value_to_float`` reads it (module docstring); NaN
    where upstream would warn and count 0."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if not isinstance(value, str):
        return np.nan
    if value in _LETTERS:
        return _LETTERS[value]
    text = value.lower()
    if text in _WORDS:
        return _WORDS[text]
    try:
        number = float(text)
    except ValueError:
        return np.nan
    return number if np.isfinite(number) else np.nan


def _read_inspect(paths: Sequence, *, scorer: str | None = None,
                  key: str | None = None) -> pd.DataFrame:
    """Inspect ``.eval`` and ``.json`` logs (module docstring)."""
    files = _files(paths, (".eval", ".json"), "Inspect .eval or .json log")
    return pd.concat([_inspect_file(path, scorer, key) for path in files], ignore_index=True)


def _inspect_file(path: Path, scorer: str | None, key: str | None) -> pd.DataFrame:
    spec, samples, names = _inspect_log(path)
    if not samples:
        raise WinrateInputError(f"{path}: the log holds no samples")
    for field in ("model", "task"):
        if not isinstance(spec.get(field), str):
            raise WinrateInputError(f"{path}: the eval spec has no {field!r}")
    scorers = sorted({s for sample in samples for s in (sample.get("scores") or {})})
    chosen = _choose(scorers, scorer, "scorer", path)
    values = [((sample.get("scores") or {}).get(chosen) or {}).get("value")
              for sample in samples]
    if key is not None:
        values = [v.get(key) if isinstance(v, dict) else None for v in values]
    score = np.array([inspect_value(v) for v in values], dtype=float)
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        shown = ", ".join(f"{names[i]} ({values[i]!r})" for i in np.flatnonzero(bad)[:5])
        raise WinrateInputError(f"{path}: scorer {chosen!r}: {int(bad.sum())} sample(s) with "
                                f"no score in [0, 1] (missing, a dict without key=, or not "
                                f"a number / C / I / P / N): {shown}")
    ids = pd.Series([str(sample.get("id")) for sample in samples], dtype=object)
    frame = pd.DataFrame({"question": spec["task"] + "/" + ids, "score": score,
                          **_metadata_columns(samples)})
    grouped = frame.groupby("question", sort=False)
    per_question = grouped["score"].agg(["mean", "size"])
    return pd.DataFrame({"question": per_question.index, "model": spec["model"],
                         "score": per_question["mean"].to_numpy(), "task": spec["task"],
                         "metric": chosen, "epochs": per_question["size"].to_numpy(),
                         "run_id": path.stem, "file": str(path),
                         **{c: grouped[c].first().to_numpy() for c in frame.columns[2:]}})


def _inspect_log(path: Path) -> tuple[dict, list[dict], list[str]]:
    """The eval spec, the samples and their names of one log: through inspect_ai's own
    reader where it is installed (the ``inspect`` extra), else through :func:`_zip_log`
    (the two give the same frames: tests/test_readers_inspect.py)."""
    read_eval_log = _inspect_ai_reader()
    if read_eval_log is None:
        return _zip_log(path)
    try:
        log = read_eval_log(str(path))
    except Exception as error:  # inspect_ai raises many types (zip, JSON, pydantic)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise WinrateInputError(f"{path}: cannot read it as an Inspect log "
                                f"(inspect_ai.log.read_eval_log): {first}") from None
    samples = [{"id": s.id, "epoch": s.epoch, "metadata": s.metadata,
                "scores": {name: {"value": score.value}
                           for name, score in (s.scores or {}).items()}}
               for s in log.samples or []]
    names = [f"samples/{s['id']}_epoch_{s['epoch']}.json" for s in samples]
    if path.suffix == ".json":
        names = [f"sample {i}" for i in range(len(samples))]
    else:  # the order of the zip reader's sorted member names
        order = sorted(range(len(names)), key=names.__getitem__)
        samples, names = [samples[i] for i in order], [names[i] for i in order]
    return {"model": log.eval.model, "task": log.eval.task}, samples, names


def _inspect_ai_reader():
    """``inspect_ai.log.read_eval_log``, or None where inspect_ai is not installed."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        return None
    return read_eval_log


def _zip_log(path: Path) -> tuple[dict, list[dict], list[str]]:
    """:func:`_inspect_log` without inspect_ai: the ``.json`` log, or the ``.eval`` zip's
    spec and ``samples/*.json`` members read as ``EvalRecorder`` writes them."""
    if path.suffix == ".json":
        log = _json_file(path, path.read_bytes)
        samples = log.get("samples") or []
        return log.get("eval") or {}, samples, [f"sample {i}" for i in range(len(samples))]
    try:
        with zipfile.ZipFile(path) as archive:
            listed = archive.namelist()
            spec_file = next((name for name in _SPEC_FILES if name in listed), None)
            if spec_file is None:
                raise WinrateInputError(f"{path}: no {' or '.join(_SPEC_FILES)} in the "
                                        f"archive: not an Inspect .eval log{_EXTRA_HINT}")
            spec = _json_file(f"{path}:{spec_file}", lambda: archive.read(spec_file))
            names = sorted(n for n in listed
                           if n.startswith("samples/") and n.endswith(".json"))
            samples = [_json_file(f"{path}:{n}", lambda n=n: archive.read(n)) for n in names]
    except (zipfile.BadZipFile, OSError) as error:
        raise WinrateInputError(f"{path}: cannot read it as an Inspect .eval (zip) log: "
                                f"{error}{_EXTRA_HINT}") from None
    return spec.get("eval") or {}, samples, names


#: What the built-in reader's errors add: Inspect's own reader knows every log version.
_EXTRA_HINT = " (pip install 'winrate[inspect]' reads logs with inspect_ai's own reader)"


def _json_file(where, read) -> dict:
    """One JSON object read by ``read``; an error names ``where``."""
    try:
        data = json.loads(read())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WinrateInputError(f"{where}: cannot read it as JSON: {error}") from None
    if not isinstance(data, dict):
        raise WinrateInputError(f"{where}: expected a JSON object")
    return data


# --------------------------------------------------------------------------- eee

_EEE_FIELDS = ("evaluation_id", "model_id", "evaluation_name", "sample_id", "evaluation")


def _read_eee(paths: Sequence, *, value: str = "score") -> pd.DataFrame:
    """Every Eval Ever instance-level JSON Lines files (module docstring)."""
    if value not in ("score", "is_correct"):
        raise WinrateInputError(f"eee: value must be 'score' or 'is_correct', got {value!r}")
    files = _files(paths, (".jsonl",), "Every Eval Ever instance-level .jsonl file")
    return pd.concat([_eee_file(path, value) for path in files], ignore_index=True)


def _eee_file(path: Path, value: str) -> pd.DataFrame:
    records = _json_lines(path)
    lines = np.arange(1, len(records) + 1)
    for field in _EEE_FIELDS:
        missing = np.array([field not in r for r in records])
        if missing.any():
            raise WinrateInputError(f"{path}: field {field!r} missing in line(s) "
                                    f"{first_rows(missing, lines)}")
    raw = [(r["evaluation"] or {}).get(value) if isinstance(r["evaluation"], dict) else None
           for r in records]
    score = np.array([_number(v) for v in raw], dtype=float)
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        raise WinrateInputError(f"{path}: evaluation.{value} is missing, not a number or "
                                f"outside [0, 1] in line(s) {first_rows(bad, lines)}")
    name = pd.Series([str(r["evaluation_name"]) for r in records], dtype=object)
    sample = pd.Series([str(r["sample_id"]) for r in records], dtype=object)
    return pd.DataFrame({"question": name + "/" + sample,
                         "model": [str(r["model_id"]) for r in records], "score": score,
                         "task": name, "metric": f"evaluation.{value}",
                         "run_id": [str(r["evaluation_id"]) for r in records],
                         "file": str(path), **_metadata_columns(records)})


# --------------------------------------------------------------------------- helm


def _read_helm(paths: Sequence, *, metric: str | None = None) -> pd.DataFrame:
    """HELM ``per_instance_stats.json`` files (module docstring)."""
    files = _files(paths, ("per_instance_stats.json",), "HELM per_instance_stats.json file")
    return pd.concat([_helm_file(path, metric) for path in files], ignore_index=True)


def _helm_file(path: Path, metric: str | None) -> pd.DataFrame:
    stats = _json_value(path)
    if not isinstance(stats, list) or not all(isinstance(s, dict) for s in stats) or not stats:
        raise WinrateInputError(f"{path}: expected a non-empty JSON list of per-instance "
                                "stats")
    records = np.arange(1, len(stats) + 1)
    perturbed = np.array([bool(s.get("perturbation")) for s in stats])
    if perturbed.any():
        raise WinrateInputError(f"{path}: {int(perturbed.sum())} perturbed instance(s), "
                                f"first records {first_rows(perturbed, records)}: read "
                                "a run without perturbations")
    names = sorted({str((stat.get("name") or {}).get("name")) for s in stats
                    for stat in s.get("stats") or []})
    chosen = _choose(names, metric, "metric", path)
    values = np.array([_helm_mean(s, chosen) for s in stats], dtype=float)
    bad = ~((values >= 0) & (values <= 1))
    if bad.any():
        raise WinrateInputError(f"{path}: metric {chosen!r} is missing or outside [0, 1] "
                                f"in record(s) {first_rows(bad, records)}")
    run, model = _helm_run(path)
    frame = pd.DataFrame({"question": [f"{run}/{s.get('instance_id')}" for s in stats],
                          "score": values})
    per_question = frame.groupby("question", sort=False)["score"].agg(["mean", "size"])
    return pd.DataFrame({"question": per_question.index, "model": model,
                         "score": per_question["mean"].to_numpy(), "task": run,
                         "metric": chosen, "trials": per_question["size"].to_numpy(),
                         "run_id": path.parent.name, "file": str(path)})


def _helm_mean(instance: dict, metric: str) -> float:
    """The mean of ``metric`` on the instance's evaluation split (NaN when absent)."""
    for stat in instance.get("stats") or []:
        name = stat.get("name") or {}
        if name.get("name") == metric and not name.get("perturbation"):
            return _number(stat.get("mean"))
    return np.nan


def _helm_run(path: Path) -> tuple[str, str]:
    """The run name without its ``model=`` part, and the model (``run_spec.json``'s
    ``adapter_spec.model``, else ``model=`` of the run name)."""
    folder = path.parent.name
    scenario, _, args = folder.partition(":")
    parts = [a for a in args.split(",") if a and not a.startswith("model=")]
    named = next((a[len("model="):] for a in args.split(",") if a.startswith("model=")),
                 folder)
    spec_file = path.with_name("run_spec.json")
    if spec_file.is_file():
        spec = _json_value(spec_file)
        named = ((spec.get("adapter_spec") or {}).get("model") if isinstance(spec, dict)
                 else None) or named
    return scenario + (":" + ",".join(parts) if parts else ""), str(named)


def _json_value(path: Path):
    """A JSON file's value (an error naming the file when it is not JSON)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WinrateInputError(f"{path}: cannot read it as JSON: {error}") from None


# --------------------------------------------------------------------------- lighteval


def _read_lighteval(paths: Sequence, *, metric: str | None = None) -> pd.DataFrame:
    """lighteval ``details_<task>_<date>.parquet`` files (module docstring)."""
    files = [f for f in _files(paths, (".parquet",), "lighteval details_<task>_<date>.parquet "
                               "file") if f.name.startswith("details_")]
    if not files:
        raise WinrateInputError(f"no lighteval details_<task>_<date>.parquet file under "
                                f"{[str(p) for p in paths]}")
    return pd.concat([_lighteval_file(path, metric) for path in files], ignore_index=True)


def _lighteval_file(path: Path, metric: str | None) -> pd.DataFrame:
    date = path.parent.name
    task = path.stem.removeprefix("details_").removesuffix(f"_{date}")
    flat = _lighteval_columns(path)
    names = sorted(c.removeprefix("metric.") for c in flat.columns if c.startswith("metric."))
    chosen = _choose(names, metric, "metric", path)
    score = np.array([_number(v) for v in flat[f"metric.{chosen}"]], dtype=float)
    rows = np.arange(1, len(flat) + 1)
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        raise WinrateInputError(f"{path}: metric {chosen!r} is missing, not a number or "
                                f"outside [0, 1] in row(s) {first_rows(bad, rows)}")
    ids = flat["doc.id"].fillna("").astype(str) if "doc.id" in flat.columns else None
    if ids is None or (ids == "").any():
        ids = pd.Series(rows.astype(str))
    return pd.DataFrame({"question": f"{task}/" + ids.to_numpy(object), "score": score,
                         "model": _lighteval_model(path), "task": task, "metric": chosen,
                         "run_id": date, "file": str(path)})


def _lighteval_columns(path: Path) -> pd.DataFrame:
    """``doc.id`` and the ``metric.<name>`` columns of a details file (Arrow structs
    flattened; no other column is read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        table = pq.read_table(path, columns=[c for c in ("doc", "metric") if c in names])
        while any(pa.types.is_struct(field.type) for field in table.schema):
            table = table.flatten()
    except (OSError, ValueError, pa.ArrowException) as error:
        raise WinrateInputError(f"{path}: cannot read it as Parquet: {error}") from None
    if "metric" not in names:
        raise WinrateInputError(f"{path}: no 'metric' column (it has {names}): not a "
                                "lighteval details file of this version")
    keep = [c for c in table.column_names if c == "doc.id" or c.startswith("metric.")]
    return table.select(keep).to_pandas()


def _lighteval_model(path: Path) -> str:
    """The model of ``.../details/<model name>/<date>/<file>``: the folders between
    ``details`` and the date (``org/model``); else the date folder's parent."""
    parts = path.parts
    if "details" in parts[:-2]:
        start = len(parts) - 1 - parts[::-1].index("details")
        return "/".join(parts[start + 1:-2]) or path.parent.parent.name
    return path.parent.parent.name

"""Small seeded files in the layouts upstream publishes, for the reader tests.

Each builder writes a file the way its upstream writes it (the columns, value spellings and
nesting named in the docstring of :mod:`winrate.io.arena_layouts`) and returns the raw
records, so that a test can count from them with a plain loop, independently of the reader.
None of the content is upstream's: texts, models and votes are synthetic.
"""

from __future__ import annotations

import json
import zipfile
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pandas as pd

MODELS = ("gpt-4-0613", "claude-2.1", "llama-2-70b-chat", "mixtral-8x7b")
LANGUAGES = ("English", "Chinese", "German")
WINNERS_100K = ("model_a", "model_b", "tie", "tie (bothbad)")
WINNERS_140K = ("model_a", "model_b", "tie", "both_bad")
CRITERIA = ("specificity", "domain_knowledge", "complexity", "problem_solving",
            "creativity", "technical_accuracy", "real_world")


def _pairs(rng: np.random.Generator, n: int) -> list[tuple[str, str]]:
    picks = [rng.choice(len(MODELS), size=2, replace=False) for _ in range(n)]
    return [(MODELS[i], MODELS[j]) for i, j in picks]


def _category_tag(rng: np.random.Generator) -> dict:
    """LMArena's tag structure (FastChat ``classify/category.py``)."""
    return {"criteria_v0.1": {c: bool(rng.random() < 0.7) for c in CRITERIA},
            "math_v0.1": {"math": bool(rng.random() < 0.3)},
            "if_v0.1": {"if": bool(rng.random() < 0.4), "score": int(rng.integers(0, 5))},
            "creative_writing_v0.1": {"creative_writing": bool(rng.random() < 0.2),
                                      "score": "no"}}


def arena_55k(path: Path, n: int = 60, seed: int = 0) -> pd.DataFrame:
    """The 55k ``train.csv``: one-hot winner columns, a JSON-list prompt text."""
    rng = np.random.default_rng(seed)
    prompts = [json.dumps([f"question {k} about topic {k % 7}"]) for k in range(n // 3)]
    verdict = rng.integers(0, 3, size=n)
    pairs = _pairs(rng, n)
    frame = pd.DataFrame({
        "id": np.arange(30192, 30192 + n),
        "model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs],
        "prompt": [prompts[k] for k in rng.integers(0, len(prompts), size=n)],
        "response_a": ['["an answer"]'] * n, "response_b": ['["another answer"]'] * n,
        "winner_model_a": (verdict == 0).astype(int),
        "winner_model_b": (verdict == 1).astype(int),
        "winner_tie": (verdict == 2).astype(int)})
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return frame


def arena_100k(path: Path, n: int = 80, seed: int = 1) -> pd.DataFrame:
    """The 100k Parquet: ``winner`` labels, ``judge_hash``, nested tags and flags."""
    rng = np.random.default_rng(seed)
    pairs = _pairs(rng, n)
    frame = pd.DataFrame({
        "question_id": [f"{k % 25:032x}" for k in range(n)],
        "model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs],
        "winner": [WINNERS_100K[k] for k in rng.integers(0, 4, size=n)],
        "judge_hash": [f"{k:064x}" for k in rng.integers(0, 12, size=n)],
        "conversation_a": [[{"role": "user", "content": "hi"}]] * n,
        "conversation_b": [[{"role": "user", "content": "hi"}]] * n,
        "turn": rng.integers(1, 3, size=n),
        "anony": rng.random(n) < 0.9,
        "language": [LANGUAGES[k] for k in rng.integers(0, 3, size=n)],
        "tstamp": 1.72e9 + np.arange(n),
        "is_code": rng.random(n) < 0.3,
        "is_refusal": np.zeros(n, bool),
        "dedup_tag": [{"high_freq": False, "sampled": bool(s)} for s in rng.random(n) < 0.9],
        "category_tag": [_category_tag(rng) for _ in range(n)]})
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    return frame


def arena_140k(path: Path, n: int = 90, seed: int = 2) -> pd.DataFrame:
    """The 140k Parquet: sessions, ``both_bad``, no judge column."""
    rng = np.random.default_rng(seed)
    pairs = _pairs(rng, n)
    session = rng.integers(0, 30, size=n)
    frame = pd.DataFrame({
        "id": [f"{k:08x}-vote" for k in range(n)],
        "model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs],
        "winner": [WINNERS_140K[k] for k in rng.integers(0, 4, size=n)],
        "evaluation_session_id": [f"{s:08x}-session" for s in session],
        "evaluation_order": rng.integers(1, 4, size=n),
        "conv_metadata": [{"sum_assistant_a_tokens": 10, "sum_assistant_b_tokens": 12}] * n,
        "category_tag": [_category_tag(rng) for _ in range(n)],
        "language": [LANGUAGES[s % 3] for s in session],
        "is_code": session % 4 == 0,
        "timestamp": pd.Timestamp("2025-06-01") + pd.to_timedelta(np.arange(n), "min")})
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    return frame


def mt_bench_pair(path: Path, records: list[tuple]) -> list[dict]:
    """``<judge>_pair.jsonl`` as FastChat's ``play_a_match_pair`` writes it; ``records``:
    (question_id, model_1, model_2, g1_winner, g2_winner, turn)."""
    out = [{"question_id": q, "model_1": m1, "model_2": m2, "g1_winner": g1,
            "g2_winner": g2, "judge": ["gpt-4", "pair-v2" if turn == 1 else
                                        "pair-v2-multi-turn"],
            "g1_user_prompt": "[User Question] ...", "g1_judgment": "... [[A]]",
            "g2_user_prompt": "[User Question] ...", "g2_judgment": "... [[B]]",
            "turn": turn, "tstamp": 1687221890.0 + k}
           for k, (q, m1, m2, g1, g2, turn) in enumerate(records)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return out


# --------------------------------------------------------------------------- harness logs

LM_EVAL_DATE = ("2024-11-05T10-21-33.918262", "2024-11-06T08-02-11.100030")


def lm_eval_run(folder: Path, model: str, date: str, task: str, scores: dict,
                filters=("none",)) -> Path:
    """``<output>/<model_name_sanitized>/`` as lm-eval's ``EvaluationTracker`` writes it:
    ``results_<date>.json`` (``model_name``, ``config.model_args``) and
    ``samples_<task>_<date>.jsonl``, one line per (document, filter) holding ``doc_id``,
    ``filter``, ``metrics`` and each metric under its name (``lm_eval/evaluator.py``).
    ``scores``: metric -> per-document values (one list per filter, or one list for all)."""
    run = folder / model.replace("/", "__")
    run.mkdir(parents=True, exist_ok=True)
    (run / f"results_{date}.json").write_text(json.dumps({
        "results": {task: {"alias": task}}, "model_name": model,
        "model_name_sanitized": model.replace("/", "__"),
        "config": {"model": "hf", "model_args": f"pretrained={model},dtype=bfloat16"}}))
    lines = []
    n_docs = len(next(iter(scores.values())))
    for k, name in enumerate(filters):
        for doc in range(n_docs):
            record = {"doc_id": doc, "doc": {"question": f"q{doc}"}, "target": "1",
                      "arguments": {"gen_args_0": {"arg_0": f"q{doc}", "arg_1": " 1"}},
                      "resps": [["1"]], "filtered_resps": ["1"], "filter": name,
                      "metrics": sorted(scores), "doc_hash": f"{doc:064x}",
                      "prompt_hash": f"{doc + 1:064x}", "target_hash": f"{doc + 2:064x}"}
            for metric, values in scores.items():
                value = values[doc] if len(filters) == 1 else values[doc] * (k == 0)
                record[metric] = value
            lines.append(json.dumps(record))
    path = run / f"samples_{task}_{date}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def two_task_lm_eval(out: Path) -> Path:
    """lm-eval runs of three models on two tasks (arc_easy 40 questions, boolq 35), 0/1
    accuracies drawn with seed 3: the folder ``out``."""
    rng = np.random.default_rng(3)
    for model in ("m-a", "m-b", "m-c"):
        for task, n in (("arc_easy", 40), ("boolq", 35)):
            lm_eval_run(out, model, LM_EVAL_DATE[0], task,
                        {"acc": rng.integers(0, 2, n).astype(float)})
    return out


def inspect_eval(path: Path, model: str, task: str, values: dict, epochs: int = 1,
                 scorer: str = "match", older: bool = False) -> Path:
    """An Inspect ``.eval`` zip as ``inspect_ai/log/_recorders/eval.py`` writes it: the spec
    in ``header.json`` (``_journal/start.json`` too; ``start.json`` only in ``older``
    logs) and ``samples/<id>_epoch_<epoch>.json`` per sample and epoch with
    ``scores[<scorer>].value``; ``values``: sample id -> one value per epoch."""
    spec = {"eval_id": "e1", "run_id": f"run-{path.stem}", "created": "2025-01-01T00:00:00",
            "task": task, "task_id": "t1", "task_version": 0, "model": model,
            "dataset": {"name": task, "samples": len(values)}, "config": {"epochs": epochs}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        if older:
            archive.writestr("start.json", json.dumps({"version": 2, "eval": spec,
                                                       "plan": {}}))
        else:
            archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": spec,
                                                                "plan": {}}))
            archive.writestr("header.json", json.dumps({"version": 2, "status": "success",
                                                        "eval": spec, "plan": {},
                                                        "results": {"scores": []}}))
        for sample_id, per_epoch in values.items():
            for epoch, value in enumerate(per_epoch, start=1):
                sample = {"id": sample_id, "epoch": epoch, "input": f"question {sample_id}",
                          "target": "A", "messages": [], "output": {"model": model},
                          "scores": {scorer: {"value": value, "answer": "A"}},
                          "metadata": {"subject": "x"}}
                archive.writestr(f"samples/{sample_id}_epoch_{epoch}.json", json.dumps(sample))
    return path


def write_doc_inputs(folder: Path) -> None:
    """The inputs of the commands of docs/formats.md's "From your harness" section (the
    Inspect logs real ones, written by Inspect's mock model where inspect_ai is
    installed)."""
    rng = np.random.default_rng(11)
    acc_a = rng.integers(0, 2, 200).astype(float)
    acc_b = np.where(rng.random(200) < 0.85, acc_a, 1 - acc_a)
    lm_eval_run(folder / "results", "org/model-a", LM_EVAL_DATE[0], "arc_easy",
                {"acc": acc_a, "acc_norm": acc_a})
    lm_eval_run(folder / "results", "org/model-b", LM_EVAL_DATE[1], "arc_easy",
                {"acc": acc_b, "acc_norm": acc_b})
    for name, p in (("a", 0.7), ("b", 0.55)):  # two runs of Inspect's mock model
        values = {k: ["C" if rng.random() < p else "I" for _ in range(2)] for k in range(120)}
        if find_spec("inspect_ai") is not None:  # else the section's inspect command skips
            inspect_run(folder / "logs" / f"{name}.eval", values,
                        metadata={k: {"subject": "x"} for k in values})
    arena_140k(folder / "arena-140k.parquet", n=600, seed=5)
    pairs = [(q, m1, m2, *(("model_1", "model_2", "tie")[k] for k in rng.integers(0, 3, 2)),
              turn)
             for q in range(81, 161) for m1, m2 in (("gpt-4", "vicuna-13b"),
                                                    ("vicuna-13b", "llama-13b"))
             for turn in (1, 2)]
    mt_bench_pair(folder / "gpt-4_pair.jsonl", pairs)
    more = np.random.default_rng(12)  # the later formats' draws leave the ones above as they were
    for model, p in (("org/model-a", 0.6), ("org/model-b", 0.45)):
        name = model.split("/")[1]
        eee_instances(folder / "instances" / f"{name}_samples.jsonl", f"gsm8k/{model}/1767225600",
                      model, "gsm8k", (more.random(150) < p).astype(float))
        scenario = f"mmlu:subject=anatomy,method=multiple_choice_joint,model={name}"
        helm_run(folder / "benchmark_output" / "runs" / "v1", scenario, model,
                 {f"id{k}": [float(more.random() < p)] for k in range(100)})
        lighteval_details(folder, model, "2025-03-01T10-00-00.123456", "lighteval|arc:easy|0",
                          {"acc": (more.random(120) < p).astype(float)})
    from winrate.examples import write_examples

    write_examples(folder)  # scores.csv, which the eval --by command reads


def eee_instances(path: Path, evaluation_id: str, model: str, name: str,
                  scores, correct=None) -> Path:
    """Every Eval Ever instance-level JSON Lines (``instance_level_eval.schema.json``,
    ``instance_level_eval_0.2.1``): the required fields of a single-turn sample."""
    correct = [s >= 0.5 for s in scores] if correct is None else correct
    lines = [{"schema_version": "instance_level_eval_0.2.1",
              "evaluation_id": evaluation_id, "model_id": model, "evaluation_name": name,
              "sample_id": f"{name}_{k:04d}", "sample_hash": f"{k:064x}",
              "interaction_type": "single_turn",
              "input": {"raw": f"question {k}", "reference": ["A"], "choices": None},
              "output": {"raw": ["A"]}, "messages": None,
              "answer_attribution": [{"turn_idx": 0, "source": "output.raw",
                                      "extracted_value": "A", "extraction_method": "regex",
                                      "is_terminal": True}],
              "evaluation": {"score": float(score), "is_correct": bool(ok)},
              "metadata": {"subject": "physics" if k % 2 else "law"}}
             for k, (score, ok) in enumerate(zip(scores, correct, strict=True))]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def helm_run(suite: Path, run_name: str, model: str, values: dict,
             metric: str = "exact_match") -> Path:
    """``benchmark_output/runs/<suite>/<run name>/`` as HELM's runner writes it:
    ``run_spec.json`` (``adapter_spec.model``) and ``per_instance_stats.json``, a list of
    ``PerInstanceStats`` (``instance_id``, ``train_trial_index``, ``stats``: each stat a
    ``name{name, split}`` with ``count``, ``sum``, ``mean``, ...); ``values``: instance id
    -> one value per train trial. Each instance also carries a ``num_output_tokens``."""
    folder = suite / run_name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_spec.json").write_text(json.dumps({
        "name": run_name, "adapter_spec": {"method": "multiple_choice_joint",
                                           "model": model, "model_deployment": model}}))

    def stat(name: str, value: float) -> dict:
        return {"name": {"name": name, "split": "test"}, "count": 1, "sum": value,
                "sum_squared": value * value, "min": value, "max": value, "mean": value,
                "variance": 0.0, "stddev": 0.0}

    records = [{"instance_id": instance, "train_trial_index": trial,
                "stats": [stat(metric, value), stat("num_output_tokens", 1.0 + trial)]}
               for instance, per_trial in values.items()
               for trial, value in enumerate(per_trial)]
    path = folder / "per_instance_stats.json"
    path.write_text(json.dumps(records, indent=2))
    return path


def lighteval_details(output: Path, model: str, date: str, task: str, metrics: dict,
                      ids: bool = True) -> Path:
    """``<output>/details/<model>/<date>/details_<task>_<date>.parquet`` as lighteval's
    ``EvaluationTracker.save_details`` writes it: one row per sample, the struct columns
    ``doc`` (``Doc``: ``query``, ``choices``, ``gold_index``, ``id``, ``task_name``),
    ``metric`` (each metric by name) and ``model_response``; ``metrics``: metric ->
    per-sample values."""
    n = len(next(iter(metrics.values())))
    frame = pd.DataFrame({
        "doc": [{"query": f"question {k}", "choices": [" A", " B"], "gold_index": 0,
                 "id": str(1000 + k) if ids else "", "task_name": task} for k in range(n)],
        "metric": [{name: float(values[k]) for name, values in metrics.items()}
                   for k in range(n)],
        "model_response": [{"text": ["A"], "logprobs": [-0.1, -2.3]} for _ in range(n)]})
    folder = output / "details" / model / date
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"details_{task}_{date}.parquet"
    frame.to_parquet(path, index=False)
    return path


def inspect_run(path: Path, values: dict, task: str = "mmlu", targets: dict | None = None,
                answer: str = "A", metadata: dict | None = None, log_format: str = "eval",
                scorer=None) -> Path:
    """A real Inspect log, written by ``inspect_ai.eval`` running a task offline with its
    mock model (``mockllm/model``, every answer ``answer``, token usage given so that
    nothing is downloaded), moved to ``path``. ``values``: sample id -> one score value per
    epoch, given by a scorer that looks them up (the epochs are ``len`` of the lists);
    ``scorer``: another scorer (e.g. ``includes()``) grading ``answer`` against
    ``targets`` (sample id -> target). ``metadata``: sample id -> the sample's metadata."""
    import shutil

    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval_run
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, mean
    from inspect_ai.scorer import scorer as inspect_scorer

    @inspect_scorer(metrics=[mean()], name="table")
    def table():
        async def score(state, target):
            return Score(value=values[state.sample_id][state.epoch - 1])
        return score

    epochs = len(next(iter(values.values())))
    samples = [Sample(id=k, input=f"question {k}", target=(targets or {}).get(k, "A"),
                      metadata=(metadata or {}).get(k)) for k in values]
    outputs = []
    for _ in range(len(samples) * epochs):
        output = ModelOutput.from_content("mockllm/model", answer)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outputs.append(output)
    model = get_model("mockllm/model", custom_outputs=outputs)
    log_dir = path.parent / f".inspect-{path.stem}"
    logs = inspect_eval_run(Task(name=task, dataset=samples, scorer=scorer or table(),
                                 epochs=epochs), model=model, log_dir=str(log_dir),
                            log_format=log_format, display="none")
    assert logs[0].status == "success", logs[0].error
    written = next(p for p in log_dir.iterdir() if p.suffix == f".{log_format}")
    path.parent.mkdir(parents=True, exist_ok=True)
    written.rename(path)
    shutil.rmtree(log_dir)
    return path

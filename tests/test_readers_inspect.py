"""Inspect AI logs (winrate.io.harness, ``--format inspect``) on real logs: each test runs a
tiny Inspect task offline with Inspect's mock model (``mockllm/model``;
tests/reader_fixtures.inspect_run) and checks winrate's reading against the same log read
by ``inspect_ai.log.read_eval_log`` and graded by Inspect's own ``value_to_float``: the
scores, the epochs averaged, the sample ids, the model from the header. The built-in zip
reader (used where inspect_ai is not installed) gives the same frames. Two mock runs of
one task compared with ``winrate.evals.frame.compare`` equal a pandas hand computation
and statsmodels' exact McNemar test. The tests skip without the inspect extra
(``pip install 'winrate[inspect]'``; make test installs it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("inspect_ai", reason="needs the inspect extra: pip install 'winrate[inspect]'")

from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.scorer import includes, value_to_float  # noqa: E402
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar  # noqa: E402

from tests import reader_fixtures as fx  # noqa: E402
from winrate.cli import main  # noqa: E402
from winrate.errors import WinrateInputError  # noqa: E402
from winrate.evals.frame import compare, question_scores  # noqa: E402
from winrate.io import harness  # noqa: E402
from winrate.io.formats import detect_format, read_format, read_log  # noqa: E402

#: sample id -> the scorer's value in epochs 1 and 2 (ids of both kinds Inspect allows)
VALUES = {1: ["C", "C"], 2: ["I", "C"], "q3": ["I", "I"], "q4": ["P", "C"], 5: [0.25, 1]}
#: the mean over the two epochs of Inspect's value_to_float, by hand
BY_HAND = {"mmlu/1": 1.0, "mmlu/2": 0.5, "mmlu/q3": 0.0, "mmlu/q4": 0.75, "mmlu/5": 0.625}
SUBJECTS = ("law", "physics", "math", "history", "art")
N = 60
#: Inspect's own retry setup warns of a deprecated tenacity parameter at every run
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def inspect_scores(path) -> pd.DataFrame:
    """Per-(sample, epoch) scores of a log as inspect_ai itself reads them."""
    log = read_eval_log(str(path))
    to_float = value_to_float()
    rows = [(s.id, s.epoch, to_float(next(iter(s.scores.values())).value),
             (s.metadata or {}).get("subject")) for s in log.samples]
    return pd.DataFrame(rows, columns=["id", "epoch", "score", "subject"])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Real logs: the table of VALUES (two epochs) as .eval and .json, and two runs of a
    60-question task graded by Inspect's includes() (run a answers "A B", run b "A C")."""
    folder = tmp_path_factory.mktemp("inspect")
    meta = {k: {"subject": "x", "difficulty": k if isinstance(k, int) else 0} for k in VALUES}
    table = fx.inspect_run(folder / "table" / "epochs.eval", VALUES, metadata=meta)
    as_json = fx.inspect_run(folder / "json" / "epochs.json", VALUES, metadata=meta,
                             log_format="json")
    targets = {k: "ABBBCD"[k % 6] if k % 7 else "C" for k in range(N)}
    subjects = {k: {"subject": SUBJECTS[k % 5]} for k in range(N)}
    runs = folder / "runs"
    for name, answer in (("a", "A B"), ("b", "A C")):
        fx.inspect_run(runs / f"{name}.eval", {k: [None] for k in range(N)}, task="arc",
                       targets=targets, answer=answer, metadata=subjects, scorer=includes())
    return {"table": table, "json": as_json, "runs": runs}


def test_scores_epochs_ids_and_model_are_inspects_own(logs):
    frame = read_format(logs["table"], "inspect")
    log = read_eval_log(str(logs["table"]))
    own = inspect_scores(logs["table"])
    by_inspect = own.groupby(own["id"].map(lambda i: f"mmlu/{i}"))["score"].mean()
    assert dict(zip(frame["question"], frame["score"], strict=True)) == BY_HAND
    assert by_inspect.to_dict() == BY_HAND
    assert set(frame["model_name"]) == {log.eval.model} == {"mockllm/model"}
    assert set(frame["task"]) == {log.eval.task} == {"mmlu"}
    assert frame.set_index("question")["epochs"].to_dict() == {q: 2 for q in BY_HAND}
    assert set(frame["metric"]) == {"table"}
    assert frame.set_index("question")["difficulty"].to_dict() == {
        "mmlu/1": "1", "mmlu/2": "2", "mmlu/q3": "0", "mmlu/q4": "0", "mmlu/5": "5"}


def test_json_logs_read_as_the_eval_logs(logs):
    frames = [read_format(logs[k], "inspect").drop(columns=["file"]).sort_values("question")
              for k in ("table", "json")]
    pd.testing.assert_frame_equal(*(f.reset_index(drop=True) for f in frames))


def test_the_built_in_reader_gives_the_same_frames(logs, monkeypatch):
    with_inspect = [read_format(logs[k], "inspect") for k in ("table", "json", "runs")]
    assert harness._inspect_ai_reader() is read_eval_log
    monkeypatch.setattr(harness, "_inspect_ai_reader", lambda: None)
    for k, frame in zip(("table", "json", "runs"), with_inspect, strict=True):
        pd.testing.assert_frame_equal(read_format(logs[k], "inspect"), frame)


def test_two_mock_runs_compared_equal_pandas_and_statsmodels(logs):
    frame = read_format(logs["runs"], "inspect")
    assert sorted(frame["model"].unique()) == ["mockllm/model@a", "mockllm/model@b"]
    qs = question_scores(frame, "score", "question", "model", cluster_cols=["subject"])
    with pytest.warns(Warning, match="only 5 clusters in 'subject'"):
        result = compare(qs, "mockllm/model@a", "mockllm/model@b")
    # by hand, from the logs as inspect_ai reads them
    a, b = (inspect_scores(logs["runs"] / f"{name}.eval").groupby("id")
            .agg(score=("score", "mean"), subject=("subject", "first")) for name in "ab")
    assert set(a["score"]) == {0.0, 1.0} and (a["score"] != b["score"]).any()
    d = a["score"] - b["score"]
    centred = (d - d.mean()).groupby(a["subject"]).sum()
    g, n = centred.size, d.size
    se = np.sqrt(g / (g - 1) * (centred ** 2).sum()) / n
    assert result.paired.test.estimate == pytest.approx(d.mean(), abs=1e-12)
    assert result.paired.se == pytest.approx(se, abs=1e-12)
    assert result.paired.se_paired == pytest.approx(d.std(ddof=1) / np.sqrt(n), abs=1e-12)
    table = pd.crosstab(a["score"], b["score"]).reindex(index=[1.0, 0.0], columns=[1.0, 0.0],
                                                        fill_value=0).to_numpy()
    assert result.mcnemar.p_exact == pytest.approx(sm_mcnemar(table, exact=True).pvalue,
                                                   abs=1e-12)


def test_leaderboard_and_detection_of_real_logs(logs, capsys):
    assert detect_format(logs["runs"] / "a.eval") == "inspect"
    assert set(read_log(logs["runs"], "inspect").axes) == {"prompt", "task", "subject"}
    assert main(["leaderboard", str(logs["runs"]), "--format", "inspect", "--no-progress"]) == 0
    assert "mockllm/model@a" in capsys.readouterr().out


def test_errors_name_the_file(tmp_path, monkeypatch):
    # error paths on hand-made files: a value upstream would count as 0, no such scorer,
    # not a log at all (through inspect_ai's reader and through the built-in one)
    path = fx.inspect_eval(tmp_path / "a.eval", "m", "t", {1: ["C"], 2: ["maybe"]})
    with pytest.raises(WinrateInputError, match=r"a.eval: scorer 'match': 1 sample\(s\) with "
                                                r"no score .*samples/2_epoch_1.json \('maybe'\)"):
        read_format(path, "inspect")
    with pytest.raises(WinrateInputError, match=r"no scorer 'f1' \(it has \['match'\]\)"):
        read_format(path, "inspect", scorer="f1")
    bad = tmp_path / "b.eval"
    bad.write_bytes(b"not a zip")
    with pytest.raises(WinrateInputError, match=r"b.eval: cannot read it as an Inspect log "
                                                r"\(inspect_ai.log.read_eval_log\): [^\n]*$"):
        read_format(bad, "inspect")
    monkeypatch.setattr(harness, "_inspect_ai_reader", lambda: None)
    with pytest.raises(WinrateInputError, match=r"b.eval: cannot read it as an Inspect .eval "
                                                r"\(zip\) log: .*pip install 'winrate\[inspect\]'"):
        read_format(bad, "inspect")

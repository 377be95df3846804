"""The leaderboard page's presentation (issue 39): model metadata files
(winrate.report.models_meta), --title / --description / --models-meta / --ci-style, the
header's count of ranked models, the interval chart's axis, the "not distinguishable from"
list. Read back with Python's HTML parser; tests/test_html_browser.py checks the layout in
Chromium.

Oracles: values written out by hand for the files; numpy for the chart's reach; a brute-force
scan of the pairwise list (scipy-free) for the indistinguishable pairs; the HTML parser for
what is an element and what is text."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.html_docs import document, hostile_analysis
from winrate import notes
from winrate.cli import main
from winrate.errors import WinrateInputError
from winrate.report import html_page
from winrate.report.models_meta import from_csv, from_json, read_models_meta

CSV = """Model,Organization,License,link,flags,null_model,params
model-00,Acme,MIT,https://example.org/m0,baseline,,7B
model-01,Beta Labs,,,deprecated; preview,yes,70B
model-02,,,,,no,
"""


class Page(HTMLParser):
    """Start tags with attributes, the text of each model name (span.name), of each badge
    and of the header's paragraphs."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.names, self.flags, self.paragraphs = [], [], [], {}
        self._open, self._depth = None, 0
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        classes = (attrs.get("class") or "").split()
        if self._open is None and tag == "span" and ("name" in classes or "flag" in classes):
            self._open, self._depth = ("name" if "name" in classes else "flag", []), 0
        elif self._open is None and tag == "p" and classes[:1] in (["lede"], ["description"]):
            self._open, self._depth = (classes[0], []), 0
        elif self._open is not None:
            self._depth += 1

    def handle_data(self, data):
        if self._open:
            self._open[1].append(data)

    def handle_endtag(self, tag):
        if self._open is None:
            return
        if self._depth:
            self._depth -= 1
            return
        kind, parts = self._open
        {"name": self.names, "flag": self.flags}.get(kind, []).append("".join(parts))
        if kind in ("lede", "description"):
            self.paragraphs[kind] = "".join(parts)
        self._open = None


@pytest.fixture(scope="module")
def doc():
    return document(hostile_analysis())


# --------------------------------------------------------------------------- the files


def test_csv_columns_aliases_flags_and_extra_columns():
    meta = from_csv(CSV, "meta.csv")
    assert meta.columns == ("organisation", "licence", "params")  # standard first, then file's
    assert meta.values["model-00"] == {"organisation": "Acme", "licence": "MIT", "params": "7B"}
    assert meta.values["model-02"] == {}
    assert meta.urls == {"model-00": "https://example.org/m0"}
    assert meta.flags == {"model-00": ("baseline",),
                          "model-01": ("deprecated", "preview", "null model")}
    assert meta.search_text("model-01") == "model-01 beta labs 70b deprecated preview null model"


def test_json_list_and_object_read_as_the_csv():
    records = [{"model": "model-00", "organisation": "Acme", "licence": "MIT",
                "url": "https://example.org/m0", "flags": ["baseline"], "params": "7B"},
               {"model": "model-01", "organization": "Beta Labs", "flags": "deprecated; preview",
                "null model": True, "params": "70B"},
               {"model": "model-02", "null_model": False}]
    as_list = from_json(json.dumps(records))
    keyed = from_json(json.dumps({r["model"]: {k: v for k, v in r.items() if k != "model"}
                                  for r in records}))
    from_file = from_csv(CSV)
    for meta in (as_list, keyed):
        assert meta.values == from_file.values and meta.urls == from_file.urls
        assert meta.flags == from_file.flags
        assert set(meta.columns) == set(from_file.columns)


@pytest.mark.parametrize("text, message", [
    ("name,organisation\nm,Acme\n", "no 'model' column"),
    ("model,organisation\nm,Acme\nm,Other\n", "row 3 repeats model 'm'"),
    ("model,url\nm,javascript:alert(1)\n", "row 2, column 'url'"),
    ("model,deprecated\nm,maybe\n", "row 2, column 'deprecated'"),
    ("model,organisation\nm,Acme,extra\n", "row 2 has 3 fields"),
    ("model,organisation\n,Acme\n", "row 2 has no model name"),
])
def test_bad_csv_is_one_input_error_naming_the_row(text, message):
    with pytest.raises(WinrateInputError, match=re.escape(message)):
        from_csv(text, "meta.csv")


def test_bad_json_is_an_input_error(tmp_path):
    path = tmp_path / "meta.json"
    for raw, message in (("{", "not JSON"), ("[1, 2]", "list of objects"),
                         ('{"m": 3}', "map each model"),
                         ('[{"model": "m", "organisation": {"a": 1}}]', "holds a dict")):
        path.write_text(raw)
        with pytest.raises(WinrateInputError, match=message):
            read_models_meta(path)
    with pytest.raises(WinrateInputError, match="cannot read"):
        read_models_meta(tmp_path / "missing.csv")


# --------------------------------------------------------------------------- the page


def hostile_meta(doc):
    """Metadata whose every field tries to break out of HTML, for the page's models."""
    models = doc["models"]
    return from_json(json.dumps([
        {"model": models[0], "organisation": "<b>Evil</b> & co", "licence": '"><script>x',
         "url": 'https://example.org/?a="><img src=x onerror=alert(1)>', "flags": ["<i>new</i>"],
         "<th>": "</td><td>"},
        {"model": models[1], "organisation": "Plain Org", "null model": "yes"},
        {"model": "not-on-the-board", "organisation": "Nobody"},
    ]), "meta.json")


def test_metadata_is_shown_escaped_linked_and_searchable(doc):
    meta = hostile_meta(doc)
    with notes.gathered():
        page = html_page.render(doc, "1", meta=meta)
    parsed = Page(page)
    tags = [tag for tag, _ in parsed.tags]
    assert "img" not in tags and tags.count("script") == 2
    assert not [a for _, a in parsed.tags if any(k.startswith("on") for k in a)]
    assert sorted(parsed.names) == sorted(doc["models"])  # badges are not part of the name
    assert sorted(parsed.flags) == ["<i>new</i>", "null model"]
    links = [a["href"] for tag, a in parsed.tags if tag == "a" and "href" in a
             and a["href"].startswith("https:")]
    assert links == ['https://example.org/?a="><img src=x onerror=alert(1)>']
    cells = re.findall(r'<td class="l[^"]*" data-v="([^"]*)">', page)
    assert "&lt;b&gt;Evil&lt;/b&gt; &amp; co" in cells and "Plain Org" in cells
    assert "&lt;/td&gt;&lt;td&gt;" in cells  # the extra column, escaped
    first = doc["models"][0]
    row = re.search(rf'data-m="{doc["models"].index(first)}" data-search="([^"]*)"', page)
    assert "&lt;b&gt;evil&lt;/b&gt; &amp; co" in row.group(1)


def test_unknown_metadata_models_are_a_coded_note_on_the_page_and_emitted(doc):
    with notes.gathered() as found:
        page = html_page.render(doc, "1", meta=hostile_meta(doc))
    assert found.codes == ["unknown-meta-models"]
    assert found[0].models == ("not-on-the-board",) and "meta.json" in found[0]
    assert 'data-code="unknown-meta-models"' in page
    with notes.gathered() as found:
        html_page.render(doc, "1", meta=from_json(json.dumps([{"model": doc["models"][0]}])))
    assert list(found) == []


def test_title_description_and_the_same_bytes(doc):
    meta = hostile_meta(doc)
    with notes.gathered():
        page = html_page.render(doc, "1", "My <board>", description="About & more",
                                meta=meta, ci_style="plusminus")
        again = html_page.render(json.loads(json.dumps(doc)), "1", "My <board>",
                                 description="About & more", meta=hostile_meta(doc),
                                 ci_style="plusminus")
    assert page == again
    parsed = Page(page)
    assert "<title>My &lt;board&gt;</title>" in page
    assert parsed.paragraphs["description"] == "About & more"
    with pytest.raises(WinrateInputError, match="ci_style"):
        html_page.render(doc, "1", ci_style="round")


def test_plusminus_is_the_distance_to_each_end():
    unit = html_page.ScoreScale.of(document(hostile_analysis())["settings"]["scale"])
    assert html_page.plus_minus(0.5, 0.4612, 0.5521, unit) == "+5.21/-3.88"
    assert html_page.plus_minus(0.5, None, 0.6, unit) == html_page.DASH


def test_the_header_counts_ranked_models_not_the_baseline():
    import winrate
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=30, n_judges=1),
                                 seed=5).frame()
    with notes.gathered():
        analysis = winrate.analyze(frame, baseline="model-00", cluster="prompt")
    page = html_page.render(document(analysis), "1")
    parsed = Page(page)
    assert parsed.paragraphs["lede"].startswith("4 models ranked, ")  # model-00 is the baseline
    assert "baseline model-00 (the reference, not ranked)" in parsed.paragraphs["lede"]
    assert sorted(parsed.names) == ["model-01", "model-02", "model-03", "model-04"]


@given(st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=60))
def test_chart_reach_is_the_largest_offset_capped_at_twice_the_median(offsets):
    expected = min(max(offsets), 2 * np.sort(offsets)[len(offsets) // 2])
    assert html_page.chart_reach(offsets) == pytest.approx(expected, rel=1e-12)
    assert html_page.chart_reach([None, *offsets]) == pytest.approx(expected, rel=1e-12)


def test_chart_draws_intervals_about_the_score_and_dashes_a_cut_one():
    scale = html_page.Scale.spanning([-2.0, 2.0])
    svg = html_page.interval_chart(scale, [("clu", -1.0, 1.5), ("nai", -3.0, 1.0)], "m", 2.0)
    lines = re.findall(r'<line class="([^"]*)" x1="([^"]*)" x2="([^"]*)"', svg)
    assert lines[0] == ("clu", str(scale.x(-1.0)), str(scale.x(1.5)))
    assert lines[1] == ("nai cut", str(scale.x(-2.0)), str(scale.x(1.0)))
    assert f'cx="{scale.x(0.0)}"' in svg


def test_not_distinguishable_list_is_every_pair_at_or_above_alpha(doc):
    alpha = doc["settings"]["alpha"]
    tied = html_page.indistinguishable(doc, "p_max_t")
    for pair in doc["pairwise"]:
        same = pair["p_max_t"] is not None and pair["p_max_t"] >= alpha
        assert (pair["model_j"] in tied[pair["model_i"]]) == same
        assert (pair["model_i"] in tied[pair["model_j"]]) == same
    page = html_page.render(doc, "1")
    assert page.count('<ul class="tied"><li>') == 1
    assert len(re.findall(r"<li><b>#\d+ ", page)) == len(doc["models"])


# --------------------------------------------------------------------------- the command line


def test_cli_flags_reach_the_page_and_the_note_reaches_stderr(simulated_log_file, tmp_path,
                                                              capsys):
    meta = tmp_path / "meta.csv"
    meta.write_text("model,organisation,licence,flags\nmodel-00,Acme <Labs>,MIT,null model\n"
                    "model-99,Ghost,,\n")
    out = tmp_path / "board.html"
    assert main(["leaderboard", str(simulated_log_file), "--html", str(out), "--title",
                 "Board & co", "--description", "What <this> is", "--models-meta", str(meta),
                 "--ci-style", "plusminus"]) == 0
    page = out.read_text(encoding="utf-8")
    parsed = Page(page)
    assert "<title>Board &amp; co</title>" in page
    assert parsed.paragraphs["description"] == "What <this> is"
    assert parsed.flags == ["null model"] and "Acme &lt;Labs&gt;" in page
    assert re.search(r'<td class="ci" data-v="[^"]+">\+\d+\.\d\d/-\d+\.\d\d</td>', page)
    err = capsys.readouterr().err
    assert re.search(r"^note \[unknown-meta-models\]: .*model-99", err, re.M)


def test_cli_refuses_a_bad_metadata_file_before_the_analysis(simulated_log_file, tmp_path,
                                                             capsys):
    meta = tmp_path / "meta.csv"
    meta.write_text("name\nx\n")
    out = tmp_path / "board.html"
    assert main(["leaderboard", str(simulated_log_file), "--html", str(out),
                 "--models-meta", str(meta)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no 'model' column" in err and not out.exists()


# --------------------------------------------------------------------------- by category


@pytest.fixture(scope="module")
def by_category():
    """Boards per category of a simulated log (prompts split into two categories, a third
    category too thin for a board)."""
    from winrate import read_comparisons
    from winrate.by_category import analyze_by, boards_to_dict
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=5, n_prompts=40, n_judges=1),
                                 seed=6).frame()
    codes = frame["prompt_id"].astype("category").cat.codes
    frame["topic"] = np.where(codes % 2 == 0, "coding <&>", "maths")
    frame.loc[frame.index[:1], "topic"] = "tiny"
    log = read_comparisons(frame, cluster_cols=("topic",))
    with notes.gathered():
        return boards_to_dict(analyze_by(log, "topic", cluster="prompt"))


def test_one_tab_per_category_each_with_its_board(by_category):
    page = html_page.render(by_category, "1")
    parsed = Page(page)
    tabs = [a for tag, a in parsed.tags if a.get("role") == "tab"]
    panels = [a for tag, a in parsed.tags if a.get("role") == "tabpanel"]
    labels = list(by_category["categories"])
    assert len(tabs) == len(panels) == len(labels) == 2 and "tiny" not in labels
    assert [t["aria-selected"] for t in tabs] == ["true", "false"]
    assert ["hidden" in p for p in panels] == [False, True]
    assert "coding &lt;&amp;&gt;" in page and "No board for tiny" in page
    expected = [m for board in by_category["categories"].values() for m in board["models"]]
    assert sorted(parsed.names) == sorted(expected)
    ids = [a["id"] for _, a in parsed.tags if "id" in a]
    assert len(ids) == len(set(ids))  # every id once, though every board has the same parts
    assert html_page.render(json.loads(json.dumps(by_category)), "1") == page


def test_cli_by_writes_the_tabbed_page(tmp_path, capsys):
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=4, n_prompts=30, n_judges=1),
                                 seed=7).frame()
    frame["topic"] = np.where(frame["prompt_id"].astype("category").cat.codes % 2, "a", "b")
    log = tmp_path / "log.csv"
    frame.to_csv(log, index=False)
    out = tmp_path / "by.html"
    assert main(["leaderboard", str(log), "--by", "topic", "--cluster", "prompt", "--html",
                 str(out), "--no-progress"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<title>log.csv leaderboard by topic</title>" in page
    assert page.count('role="tab" ') == 2


def test_eda_page_takes_the_title_and_description(simulated_log_file, tmp_path):
    out = tmp_path / "eda.html"
    assert main(["eda", str(simulated_log_file), "--html", str(out), "--title", "EDA <1>",
                 "--description", "Why & how"]) == 0
    parsed = Page(out.read_text(encoding="utf-8"))
    assert parsed.paragraphs["description"] == "Why & how"
    assert ("title", {}) in parsed.tags and "<title>EDA &lt;1&gt;</title>" in out.read_text()


def test_csv_download_carries_the_metadata(doc):
    import html
    from io import StringIO
    from urllib.parse import unquote

    import pandas as pd

    with notes.gathered():
        page = html_page.render(doc, "1", meta=hostile_meta(doc))
    href = html.unescape(re.search(r'id="download-csv" download="[^"]*" href="([^"]*)"',
                                   page).group(1))
    table = pd.read_csv(StringIO(unquote(href.split(",", 1)[1])), keep_default_na=False,
                        dtype=str)
    assert list(table.columns[-5:]) == ["organisation", "licence", "<th>", "url", "flags"]
    first = table.set_index("model").loc[doc["models"][0]]
    assert (first["organisation"], first["licence"], first["<th>"], first["flags"]) == (
        "<b>Evil</b> & co", '"><script>x', "</td><td>", "<i>new</i>")
    assert table.set_index("model").loc[doc["models"][1], "flags"] == "null model"


@pytest.mark.parametrize("anchor, stated", [(None, "mean rating 1000"),
                                            ("model-02=1200", "anchored at model-02 = 1200")])
def test_the_header_states_the_rating_scale_and_its_anchor(anchor, stated):
    import winrate
    from winrate.io.simulate import SimulationDesign, simulate_comparisons

    frame = simulate_comparisons(SimulationDesign(n_models=4, n_prompts=30, n_judges=1),
                                 seed=3).frame()
    with notes.gathered():
        analysis = winrate.analyze(frame, model="bt", cluster="prompt",
                                   **({"anchor": anchor} if anchor else {}))
    lede = Page(html_page.render(document(analysis), "1")).paragraphs["lede"]
    assert "Elo scale" in lede and stated in lede

"""The board page's tables from rows built here: published rows, our cells, pairing and the relevance stage."""

import pandas as pd

from evals.benchmarks.board_report import CALL_CATEGORIES, board_table, paired_table, relevance_table


def _rows(full_match, *, abstained=(), overruled=(), seconds=1.0):
    ids = [f"case_{n}" for n in range(len(full_match))]
    return pd.DataFrame({
        "full_match": [float(v) for v in full_match],
        "false_abstention": [float(n in abstained) for n in range(len(ids))],
        "relevance_overruled": [float(n in overruled) for n in range(len(ids))],
        "latency_s": seconds,
    }, index=pd.Index(ids, name="id"))


def test_mean_4_and_non_live_ast_appear_only_when_their_categories_ran():
    runs = {("m", "native-strict", c): _rows([1, 0, 1, 1]) for c in CALL_CATEGORIES}
    row = board_table(runs).splitlines()[-1].split(" | ")
    assert row[0] == "| **this toolkit, m, native-strict**" and row[6:] == ["75.0", "-", "-", "-", "- |"]
    runs |= {("m", "native-strict", "simple_java"): _rows([1, 1]),
             ("m", "native-strict", "simple_javascript"): _rows([0, 0])}
    row = board_table(runs).splitlines()[-1].split(" | ")
    assert row[-2:] == ["58.3", "70.8 |"]  # simple: (75 + 100 + 0) / 3; Non-Live: (58.3 + 75 + 75 + 75) / 4
    del runs[("m", "native-strict", "parallel")]
    assert board_table(runs).splitlines()[-1].split(" | ")[6:] == ["-", "100.0 [100.0, 100.0] (n=2)",
                                                                   "0.0 [0.0, 0.0] (n=2)", "58.3", "- |"]


def test_a_strategy_is_paired_on_shared_cases_and_flagged_over_twice_the_seconds():
    base, more = _rows([0, 0, 1, 1]), _rows([1, 1, 1, 1], seconds=2.5)
    table = paired_table({("m", "native-strict", "parallel"): base, ("m", "native-strict-more", "parallel"): more})
    line = table.splitlines()[-1]
    assert "| 4 | 50.0 | 100.0 | +50.0 [" in line and "(2.50x) **over 2x**" in line


def test_false_abstentions_are_split_into_the_relevance_stages_and_the_selectors():
    rows = _rows([0, 0, 0, 1], abstained=(0, 1, 2), overruled=(1, 3))
    line = relevance_table({("m", "native-strict", "simple_python"): rows,
                            ("m", "native-strict", "irrelevance"): rows}).splitlines()
    assert len(line) == 3 and line[-1] == "| m | native-strict | simple_python | 4 | 75.0% (3) | 1 |"


def test_domain_cases_are_paired_per_tag():
    from evals.benchmarks.board_report import domain_table

    base, cover = _rows([0, 0, 1, 1]), _rows([1, 1, 1, 0])
    base["tags"] = cover["tags"] = [["multi", "parallel"], ["multi"], ["single"], ["no_tool"]]
    lines = domain_table({("m", "native-strict"): base, ("m", "native-strict-cover"): cover}).splitlines()[2:]
    assert [line.split(" | ")[2:6] for line in lines] == [
        ["multi", "2", "0.0", "100.0"], ["parallel", "1", "0.0", "100.0"], ["single", "1", "100.0", "100.0"],
        ["no_tool", "1", "100.0", "0.0"]]
    assert domain_table({("m", "native-strict-cover"): cover}).count("\n") == 1  # no baseline: no rows


def test_a_knob_set_beside_the_strategy_is_its_own_method_paired_against_the_strategy_alone():
    from evals.benchmarks.board_report import method_of

    assert method_of({"strategy": "native-strict-cover"}) == "native-strict-cover"
    assert method_of({"strategy": "native-strict-cover", "demos": 3}) == "native-strict-cover + demos 3"
    runs = {("m", "native-strict", "parallel"): _rows([0, 0, 0, 0]),
            ("m", "native-strict-cover", "parallel"): _rows([0, 1, 0, 1]),
            ("m", "native-strict-cover + demos 3", "parallel"): _rows([1, 1, 0, 1])}
    lines = paired_table(runs, "native-strict-cover", built_on="native-strict-cover").splitlines()[2:]
    assert len(lines) == 1 and "| native-strict-cover + demos 3 | 4 | 50.0 | 75.0 | +25.0 [" in lines[0]


def test_the_readme_table_puts_each_embedded_model_after_the_published_rows_of_its_size():
    from evals.benchmarks.board_report import SAME_SIZE, headline_table

    runs = {("qwen2.5-coder-1.5b", "native-strict-cover", c): _rows([1, 1, 0, 1]) for c in CALL_CATEGORIES}
    runs[("qwen2.5-coder-1.5b", "native-strict", "parallel")] = _rows([0, 0, 0, 0])
    names = [line.split(" | ")[0].removeprefix("| ") for line in headline_table(runs).splitlines()[2:]]
    assert names == [*SAME_SIZE["qwen2.5-coder-0.5b"], *SAME_SIZE["qwen2.5-coder-1.5b"],
                     "**this toolkit, qwen2.5-coder-1.5b, native-strict-cover**"]  # no 0.5B row: none ran
    assert headline_table(runs).splitlines()[-1].endswith("| 75.0 | 75.0 | 75.0 | 75.0 | - | 75.0 |")


def test_a_whole_category_is_shown_over_its_seeded_sample(tmp_path):
    import json

    from evals.benchmarks.board_report import load_board

    for folder, cases in (("sample", 2), ("whole", 5), ("other-sample", 3)):
        run = tmp_path / folder
        run.mkdir()
        rows = _rows([1] * cases).reset_index()
        (run / "results.jsonl").write_text(rows.to_json(orient="records", lines=True))
        (run / "summary.json").write_text(json.dumps({"params": {
            "model": "local:m", "strategy": "native-strict-cover", "suite_ref": "bfcl:parallel"}, "summary": {}}))
    assert len(load_board(tmp_path)[("m", "native-strict-cover", "parallel")]) == 5


def test_of_a_run_and_the_copies_made_from_it_the_last_copy_stands_for_the_cell(tmp_path):
    import json

    from evals.benchmarks.board_report import load_board, load_domain

    for suite, root, first, last in (("bfcl:parallel", tmp_path / "board", "a", "c"),  # in either order on disk
                                     ("runs/domain_calls.jsonl", tmp_path / "domain", "c", "a")):
        made = ((f"{first}-run", {}, 1), ("b-read-again", {"derived_from": f"somewhere/{first}-run"}, 2),
                (f"{last}-spliced", {"spliced_from": "b-read-again"}, 3))
        for folder, source, right in made:
            run = root / folder
            run.mkdir(parents=True)
            (run / "results.jsonl").write_text(_rows([1] * right + [0] * (3 - right)).reset_index().to_json(
                orient="records", lines=True))
            (run / "summary.json").write_text(json.dumps({"params": {
                "model": "local:m", "strategy": "native-strict-cover", "suite_ref": suite, **source}, "summary": {}}))
    assert load_board(tmp_path / "board")[("m", "native-strict-cover", "parallel")]["full_match"].sum() == 3
    assert load_domain(tmp_path / "domain")[("m", "native-strict-cover")]["full_match"].sum() == 3


def test_an_earlier_default_is_kept_apart_and_paired_with_todays_rows(tmp_path):
    import json

    from evals.benchmarks.board_report import EARLIER, board_page, load_board

    for folder, matches, commit in (("m", [0, 0, 1, 1], "bbbbbbb1"), (f"{EARLIER}/m", [0, 1, 0, 0], "aaaaaaa1")):
        run = tmp_path / folder
        run.mkdir(parents=True)
        (run / "results.jsonl").write_text(_rows(matches).reset_index().to_json(orient="records", lines=True))
        (run / "summary.json").write_text(json.dumps({"params": {
            "model": "local:m", "strategy": "native-strict-cover", "suite_ref": "bfcl:parallel",
            "git_commit": commit}, "summary": {}}))
    runs = load_board(tmp_path)
    assert list(runs) == [("m", "native-strict-cover", "parallel")] and runs[list(runs)[0]]["full_match"].sum() == 2
    page = board_page(runs, tmp_path)
    line = next(line for line in page.splitlines() if "aaaaaaa -> bbbbbbb" in line)
    assert line.startswith("| m | parallel | native-strict-cover | 4 | aaaaaaa -> bbbbbbb | 25.0 | 50.0 | +25.0 [")


def test_each_models_default_is_read_per_tag_and_the_larger_paired_against_the_smaller():
    from evals.benchmarks.board_report import domain_models_table

    small, large = _rows([0, 0, 1, 1]), _rows([1, 1, 1, 0])
    small["tags"] = large["tags"] = [["multi", "parallel"], ["multi"], ["single"], ["no_tool"]]
    lines = domain_models_table({("a-0.5b", "native-strict-cover"): small, ("b-1.5b", "native-strict-cover"): large,
                                 ("a-0.5b", "native-strict"): large}).splitlines()
    assert lines[0].startswith("| tag | a-0.5b % [95% CI] | b-1.5b % [95% CI] | b-1.5b - a-0.5b")
    multi = lines[2].split(" | ")
    assert multi[0] == "| multi" and multi[1].startswith("0.0 ") and multi[2].startswith("100.0 ")
    assert multi[3].startswith("+100.0") and len(lines) == 6

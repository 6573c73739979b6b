"""The description optimization's results page, from kept runs laid out as measure_descriptions.sh keeps them."""

import json
from pathlib import Path

import pytest

from evals.benchmarks.descriptions_report import main, paired_row, results_page
from evals.suite import load_suite, registry_for
from tool_selection.compiled import MANIFEST_FILE, Manifest
from tool_selection.descriptions import descriptions_of, descriptions_sha256

ROOT = Path(__file__).parents[2]
REWRITE = "Finds where a treasure is buried, given its map id."


def write_run(folder: Path, outcomes: list[tuple[str, int, bool]]) -> None:
    """A kept run: (case id, full match, needs no tool) per case."""
    folder.mkdir(parents=True)
    rows = [{"id": case_id, "full_match": float(right), "abstention_correct": float(right) if no_tool else None,
             "false_abstention": None if no_tool else float(not right), "latency_s": 1.5}
            for case_id, right, no_tool in outcomes]
    (folder / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.fixture
def kept(tmp_path) -> Path:
    originals = descriptions_of(registry_for(load_suite("treasure_hunt").cases[0]))
    rewritten_tool = sorted(originals)[0]
    suite = tmp_path / "treasure_hunt"
    manifest = Manifest(tool_set=None, model="local:qwen2.5-coder-0.5b", strategy="native-strict", optimizer="gepa",
                        teacher="local:qwen2.5-coder-1.5b", suite="treasure_hunt",
                        optimizer_args={"max_metric_calls": 150, "budget": "light"},
                        scores={"dev_balanced_accuracy": 0.5, "dev_unoptimized_balanced_accuracy": 0.25},
                        descriptions={**originals, rewritten_tool: REWRITE},
                        original_descriptions_sha256=descriptions_sha256(originals),
                        cost={"compile_seconds": 600.0, "model_calls": 200.0, "candidates": 3.0})
    (suite / "program").mkdir(parents=True)
    (suite / "program" / MANIFEST_FILE).write_text(manifest.model_dump_json())
    (suite / "program" / "optimizer_log").mkdir()
    (suite / "program" / "optimizer_log" / "run_log.json").write_text(json.dumps([  # GEPA's steps
        {"i": 0, "subsample_scores": [0, 1, 0], "new_subsample_scores": [1, 1, 0]},
        {"i": 1, "subsample_scores": [0, 0, 0], "new_subsample_scores": [0, 0, 0]}, {"i": 2}]))
    write_run(suite / "program" / "dev_eval", [("d1", 1, False), ("d2", 0, True)])  # balanced 50
    write_run(suite / "program" / "dev_eval_unoptimized", [("d1", 0, False), ("d2", 0, True)])  # balanced 0
    # 8 cases: the rewrite wins 4 (c1-c4), loses none; c5-c8 are the same both times
    write_run(suite / "test-original", [(f"c{i}", 0, i == 4) for i in range(1, 5)] +
              [(f"c{i}", i % 2, i == 8) for i in range(5, 9)])
    write_run(suite / "test-optimized", [(f"c{i}", 1, i == 4) for i in range(1, 5)] +
              [(f"c{i}", i % 2, i == 8) for i in range(5, 9)])
    (tmp_path / "provenance.json").write_text(json.dumps([
        {"what": "treasure_hunt", "kept": "results/x", "command": "measure_descriptions.sh", "commit": "abc1234",
         "machine": "2 cores", "date": "2026-11-28", "notes": "alone"}]))
    return tmp_path


def test_the_page_pairs_the_runs_and_shows_each_rewrite(kept, tmp_path):
    (kept / "notes.md").write_text("Hand-written: one tool rewritten.")
    assert main(["--results", str(kept), "--write", str(tmp_path / "page.md")]) == 0
    page = (tmp_path / "page.md").read_text()
    assert page.startswith("# Tool descriptions as what is optimized\n") and page == results_page(kept)
    assert "| treasure_hunt | 8 | 25.0 | 75.0 | +50.0 [" in page and "| 0.125 |" in page  # McNemar: 4 discordant
    assert "| treasure_hunt | 150 | 3 | 2 | 1 | 3 | 600 | 200 | 2 | 0.0 -> 50.0 | 1 of 12 |" in page  # dev: the rows
    assert f"| {REWRITE} |" in page and "Hand-written: one tool rewritten." in page
    assert "| treasure_hunt | `results/x` | `measure_descriptions.sh` | `abc1234` |" in page


def test_a_paired_row_compares_the_cases_both_runs_scored():
    import pandas as pd

    a = pd.DataFrame({"id": ["1", "2"], "full_match": [0.0, 1.0], "abstention_correct": [None, None],
                      "false_abstention": [1.0, 0.0], "latency_s": [1.0, 1.0]})
    row = paired_row("x", a, a.assign(full_match=[1.0, 1.0]))
    assert (row["original %"], row["rewritten %"], row["McNemar p"]) == ("50.0", "100.0", "1.000")


def test_a_folder_without_kept_runs_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="measure_descriptions.sh"):
        results_page(tmp_path)


def test_the_committed_page_is_what_the_kept_runs_generate():
    results = ROOT / "results" / "optimize" / "descriptions"
    if not (results / "provenance.json").exists():
        pytest.skip("no description optimization kept yet")
    assert (ROOT / "docs" / "results" / "descriptions.md").read_text() == results_page(results)


def test_the_pooled_row_keeps_cases_of_different_suites_apart(kept):
    import shutil

    shutil.copytree(kept / "treasure_hunt", kept / "events")  # the same case ids in a second suite
    page = results_page(kept)
    assert "| **pooled (2 suites)** | 16 | 25.0 | 75.0 | +50.0 [" in page and "| 0.008 |" in page

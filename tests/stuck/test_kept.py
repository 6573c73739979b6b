"""A finished stuck benchmark computed again from its kept text files: the same tables and verdicts, no model."""

import json
from types import SimpleNamespace

import pandas as pd

from evals.benchmarks.stuck_verdicts import main as verdicts_main
from evals.stuck_bench.kept import keep, reassemble
from tests.stuck.conftest import relative_cost


def test_kept_rows_give_the_runs_tables_and_verdicts_again(bench_run, tmp_path):
    result, _ = bench_run
    kept = keep(result.out_dir, tmp_path / "kept" / "tiny")
    assert all(path.suffix in (".json", ".jsonl", ".csv") for path in kept if path.is_file())
    assert not list((tmp_path / "kept").rglob("*.parquet"))
    again = reassemble(tmp_path / "kept" / "tiny", cost_fn=relative_cost)
    columns = ["detector", "recommended_threshold", "test_accuracy", "test_escalation_rate", "test_seconds",
               "test_pays", "test_verdict"]
    pd.testing.assert_frame_equal(again.summary[columns].reset_index(drop=True),
                                  result.summary[columns].reset_index(drop=True))


def test_the_page_holds_each_detectors_verdict(bench_run, tmp_path, capsys, monkeypatch):
    import evals.stuck_bench.kept as kept_module

    monkeypatch.setattr(kept_module, "catalog_cost", relative_cost)  # the fake models have no catalog price
    result, _ = bench_run
    assert verdicts_main(["keep", str(result.out_dir), str(tmp_path / "kept" / "tiny")]) == 0
    (tmp_path / "kept" / "provenance.json").write_text('[{"what": "tiny", "commit": "abc1234"}]')
    capsys.readouterr()
    assert verdicts_main(["page", str(tmp_path / "kept"), "--out", str(tmp_path / "page.md")]) == 0
    page = (tmp_path / "page.md").read_text()
    assert "**test/weak -> test/strong**" in page and "Verdict on test" in page
    for detector in result.summary["detector"]:
        assert f"- {detector}: " in page
    assert "| tiny |" in page and "abc1234" in page


def _kept_learned(root, primary, fingerprint):
    from evals.naming import slug
    from evals.stuck_bench.kept import SCORED

    scored = root / "runs" / "test" / f"{slug(primary)}{SCORED}abc-auto"
    scored.mkdir(parents=True)
    evidence = json.dumps({"router": fingerprint, "wrong": 0.5})
    scored.joinpath("results.jsonl").write_text(json.dumps({"id": "a", "stuck_learned_evidence": evidence}) + "\n")
    cases = pd.DataFrame({"id": list("abcd"), "split": "test", "pair": "weak -> strong", "primary": primary,
                          "primary_correct": [1.0, 0.0, 1.0, 0.0], "secondary_correct": [1.0, 1.0, 0.0, 1.0],
                          "primary_seconds": 1.0, "secondary_seconds": 4.0,
                          "score_learned": [0.1, 0.9, 0.2, 0.6], "overhead_seconds_learned": 0.0})
    return SimpleNamespace(cases=cases)


def test_the_learned_detector_is_judged_at_its_shipped_threshold_only_for_rows_its_router_scored(tmp_path,
                                                                                                   monkeypatch):
    import evals.benchmarks.stuck_verdicts as verdicts

    router = SimpleNamespace(fingerprint="f00d", threshold=0.5)
    monkeypatch.setattr(verdicts, "shipped_router", lambda model: router)
    tables = _kept_learned(tmp_path, "test/weak", "f00d")
    [line] = verdicts.shipped_threshold_lines(tmp_path, tables, "test")
    assert "router f00d, P(wrong) >= 0.500" in line
    assert "escalating 50.0% of 4 cases" in line and "100.0% against the secondary's 75.0%" in line
    router.fingerprint = "beef"  # another router ships now: these scores are not its
    assert verdicts.shipped_threshold_lines(tmp_path, tables, "test") == []

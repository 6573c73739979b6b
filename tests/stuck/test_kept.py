"""A finished stuck benchmark computed again from its kept text files: the same tables and verdicts, no model."""

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

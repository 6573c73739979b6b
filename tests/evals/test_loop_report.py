"""The loop table: one row per run, optionally over the tasks every run finished."""

import json

from evals.benchmarks.loop_report import main


def _run(folder, outcomes):
    folder.mkdir()
    rows = [{"id": task, "success": float(ok), "state_ok": float(ok), "steps": 2, "calls": 1, "tool_errors": 0,
             "errors_recovered": 0, "escalations": 0, "seconds": 3.0, "stop_reason": "answered"}
            for task, ok in outcomes.items()]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_rows_compare_the_same_tasks_when_asked(tmp_path, capsys):
    a = _run(tmp_path / "a", {"t1": 1, "t2": 0, "t3": 1})
    b = _run(tmp_path / "b", {"t1": 0, "t2": 0})
    assert main([f"small={a}", f"large={b}", "--same-tasks"]) == 0
    table = capsys.readouterr().out
    assert "| small | 2 | 50.0 [" in table and "| large | 2 | 0.0 [0, 0] |" in table
    out = main([f"small={a}"]) == 0 and capsys.readouterr().out
    assert "| small | 3 | 66.7 [" in out and "| 3.0 | 4.5 | answered 3 |" in out  # 9 s over 2 solved tasks
    assert main([f"large={b}"]) == 0 and "| 3.0 | - | answered 2 |" in capsys.readouterr().out


def test_paired_rows_compare_each_run_with_the_first_task_by_task(tmp_path, capsys):
    a = _run(tmp_path / "a", {"t1": 0, "t2": 0, "t3": 1})
    b = _run(tmp_path / "b", {"t1": 1, "t2": 1, "t3": 1, "t4": 1})
    assert main([f"before={a}", f"after={b}", "--paired"]) == 0
    out = capsys.readouterr().out
    assert "| run vs before | metric | tasks | before | run | difference [95% CI] | McNemar p |" in out
    assert "| after | task success | 3 | 33.3 | 100.0 | +66.7 [" in out and "| 0.500 |" in out
    assert "| after | s / task | 3 | 3.0 | 3.0 | +0.0 [+0.0, +0.0] | - |" in out

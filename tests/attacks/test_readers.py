"""Fourth-round attacks on the files the toolkit loads (#44 items 4, 8, 9 and 10): deep nesting, bytes that are
not UTF-8, duplicate keys, control characters, YAML tags, and a served selector that would call out on load. Each
is refused with one clear error naming the file (``FileFormatError``; a suite's ``SuiteError`` is one), timed
against an upper bound (run with -s to see the times), and 5,000 mutated files of every kind load or are refused
so, never with another exception, and never a crash."""

import json
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evals.hf_suite import row_from_case
from evals.suite import SuiteError, load_suite
from evals.sweep import SweepPlan
from tests.evals.conftest import make_cases
from tests.fuzz_mutations import ODD_BYTES, mutate
from tool_selection.cli import main
from tool_selection.collaboration import load_collaboration_config
from tool_selection.conversations import load_discussion_config
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance.model import SHIPPED_DIR, RelevanceModel
from tool_selection.run_config import RunConfig
from tool_selection.spec import RetrievalSpec, SelectorSpec
from tool_selection.strict_files import FileFormatError
from tool_selection.trajectories import load_trajectories

REPO = Path(__file__).resolve().parents[2]
RELEVANCE = (SHIPPED_DIR / "qwen2.5-coder-0.5b.json").read_text()
TRAJECTORIES = REPO / "results" / "loop" / "multistep" / "trajectories" / "trajectories.json"
SWEEP = (REPO / "evals" / "sweeps" / "strategies.yaml").read_text()
DISCUSSION = (REPO / "examples" / "discussion.yaml").read_text()
COLLABORATION = ("collaboration:\n  enabled: true\n  pairs:\n    - {primary: local:qwen2.5-coder-0.5b, "
                 "secondary: local:qwen2.5-coder-1.5b, threshold: 0.7, max_retries: 2}\n")


def _refused(load, path, error_type=FileFormatError, *, match: str):
    """Run ``load(path)`` and return the message of the ``error_type`` it raises, which must name ``path``."""
    with pytest.raises(error_type) as raised:
        load(path)
    message = str(raised.value)
    assert str(path) in message and match in message, message
    return message


def _spec_yaml() -> str:
    return SelectorSpec(strategy="native", retrieval=RetrievalSpec(k=3), undeclared_arguments="drop").to_yaml()


def _run_yaml() -> str:
    return RunConfig(threads=2, limit=5, mlflow=False, experiment="readers").to_yaml()


def _trajectories_json() -> str:
    data = json.loads(TRAJECTORIES.read_text())
    return json.dumps({"suite": "multistep", "trajectories": data["trajectories"][:2]}, indent=1)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _hf_folder(parent: Path, lines: list[bytes], name: str = "data") -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "data.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder


def _hf_rows() -> list[str]:
    from evals.suite import validated_case

    return [json.dumps(row_from_case(validated_case(case))) for case in make_cases()]


def _cli(argv: list[str], capsys) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.startswith("toolsel: error: ") and "Traceback" not in err, err
    return err


def _subprocess_cli(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``toolsel ARGV`` in a child process: a crash (a signal) shows as a negative return code there."""
    return subprocess.run([sys.executable, "-m", "tool_selection.cli", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """Whatever ``datasets`` prepares goes under the test's folder, not the user's cache."""
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


# ------------------------------------------------------------------ item 4: a deep value in an hf: folder
def test_a_deep_value_in_an_hf_folder_is_refused_before_arrow_reads_it(timed, tmp_path, hf_cache):
    row = json.loads(_hf_rows()[0])
    line = json.dumps({**row, "expected_calls": "__deep__"}).replace('"__deep__"', _deep(10_000))
    folder = _hf_folder(tmp_path, [line.encode()])
    message = timed(lambda: _refused(lambda p: load_suite(f"hf:{p}"), folder, SuiteError, match="nested deeper"),
                    within_s=5)
    assert "data.jsonl, line 1: nested deeper than 64 levels" in message


def test_the_hf_deep_case_through_the_cli_exits_with_a_message_not_a_signal(timed, tmp_path):
    row = json.loads(_hf_rows()[0])
    line = json.dumps({**row, "expected_calls": "__deep__"}).replace('"__deep__"', _deep(10_000))
    folder = _hf_folder(tmp_path, [line.encode()])
    done = timed(lambda: _subprocess_cli(["eval", "--no-mlflow", "--suite", f"hf:{folder}"], tmp_path), within_s=120)
    assert done.returncode == 2 and done.returncode not in (139, -11), (done.returncode, done.stderr[-2000:])
    assert "toolsel: error: " in done.stderr and "nested deeper than 64 levels" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("data_file", ["../outside/deep.jsonl", "{outside}/deep.jsonl"])
def test_a_dataset_card_cannot_send_datasets_to_unchecked_data(timed, tmp_path, hf_cache, data_file):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "deep.jsonl").write_text(_deep(10_000) + "\n")
    folder = _hf_folder(tmp_path, [_hf_rows()[0].encode()])
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
                                      f"    path: {data_file.format(outside=outside)}\n---\n# A suite\n")
    message = timed(lambda: _refused(lambda p: load_suite(f"hf:{p}"), folder, SuiteError,
                                     match="its configs name data outside the folder"), within_s=5)
    assert "README.md" in message


def test_compressed_data_and_a_tagged_card_in_an_hf_folder_are_refused(timed, tmp_path, hf_cache):
    folder = _hf_folder(tmp_path, [_hf_rows()[0].encode()])
    (folder / "more.jsonl.gz").write_bytes(b"\x1f\x8b")
    (folder / "README.md").write_text("---\nlicense: !!python/name:os.system\n---\n")
    message = timed(lambda: _refused(lambda p: load_suite(f"hf:{p}"), folder, SuiteError, match="2 file(s)"),
                    within_s=5)
    assert "more.jsonl.gz: a compressed file or archive" in message
    assert "README.md, line 2: holds the YAML tag" in message


# ------------------------------------------------------------------ item 8: deep, non-UTF-8 files
DEEP_YAML = {
    "flow": lambda section: f"{section}: {_deep(5_000)}\n",
    "block": lambda section: f"{section}:\n" + "- " * 5_000 + "x\n",
}
YAML_LOADERS = {
    "spec": (SelectorSpec.load_yaml, "selector"),
    "run-config": (RunConfig.load_yaml, "run"),
    "sweep": (SweepPlan.load_yaml, "axes"),
    "discussion": (load_discussion_config, "discussion"),
    "collaboration": (load_collaboration_config, "collaboration"),
}


@pytest.mark.parametrize("shape", sorted(DEEP_YAML))
@pytest.mark.parametrize("kind", sorted(YAML_LOADERS))
def test_a_yaml_file_nested_5000_deep_is_refused_with_its_line(timed, tmp_path, kind, shape):
    load, section = YAML_LOADERS[kind]
    path = tmp_path / f"{kind}.yaml"
    path.write_text(DEEP_YAML[shape](section))
    message = timed(lambda: _refused(load, path, match="nested deeper than"), within_s=5)
    assert f"{path}, line " in message and "Flatten it" in message


@pytest.mark.parametrize("kind", sorted(YAML_LOADERS))
def test_a_yaml_file_that_is_not_utf8_is_refused_with_its_line(timed, tmp_path, kind):
    load, section = YAML_LOADERS[kind]
    path = tmp_path / f"{kind}.yaml"
    path.write_bytes(f"# {kind}\n{section}:\n  name: caf".encode() + b"\xe9\n")
    message = timed(lambda: _refused(load, path, match="is not UTF-8"), within_s=5)
    assert f"{path}, line 3: is not UTF-8" in message and "Save the" in message


JSON_LOADERS = {"trajectories": load_trajectories, "relevance model": RelevanceModel.load}


@pytest.mark.parametrize("kind", sorted(JSON_LOADERS))
def test_a_json_file_nested_100000_deep_or_not_utf8_is_refused(timed, tmp_path, kind):
    path = tmp_path / "deep.json"
    path.write_text('{"trajectories": ' + _deep(100_000) + "}")
    timed(lambda: _refused(JSON_LOADERS[kind], path, match="nested deeper than 64 levels"), within_s=5)
    path.write_bytes(b'{"trajectories": [],\n "note": "caf\xe9"}')
    message = timed(lambda: _refused(JSON_LOADERS[kind], path, match="is not UTF-8"), within_s=5)
    assert f"{path}, line 2" in message


@pytest.mark.parametrize("flag", ["--spec", "--run-config", "sweep"])
def test_deep_and_non_utf8_files_through_the_cli_are_one_clear_line(timed, tmp_path, monkeypatch, capsys, flag):
    monkeypatch.chdir(tmp_path)
    deep, latin = tmp_path / "deep.yaml", tmp_path / "latin.yaml"
    deep.write_text(_deep(5_000))
    latin.write_bytes(b"strategy: caf\xe9\n")
    for path, message in ((deep, "is nested deeper than 64 levels"), (latin, "is not UTF-8")):
        argv = ["sweep", str(path)] if flag == "sweep" else ["eval", "--no-mlflow", "--suite", "treasure_hunt",
                                                              flag, str(path)]
        err = timed(lambda argv=argv: _cli(argv, capsys), within_s=20)
        assert f"{path}, line 1: {message}" in err, err


def test_a_cli_case_in_a_subprocess_exits_with_a_message_not_a_signal(timed, tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("selector:\n" + "- " * 100_000 + "x\n")
    done = timed(lambda: _subprocess_cli(["eval", "--no-mlflow", "--suite", "treasure_hunt", "--spec", str(deep)],
                                         tmp_path), within_s=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert f"toolsel: error: {deep}, line 2: is nested deeper than 64 levels" in done.stderr, done.stderr[-2000:]


# ------------------------------------------------------------------ item 9: duplicate keys, NULs, YAML tags
def test_a_duplicate_threshold_in_a_relevance_model_is_refused(timed, tmp_path):
    path = tmp_path / "relevance.json"
    path.write_text(RELEVANCE.rstrip().removesuffix("}") + ', "threshold": 0.99\n}\n')
    message = timed(lambda: _refused(RelevanceModel.load, path, match="duplicate key 'threshold'"), within_s=5)
    assert "RelevanceModel.save" in message


def test_a_duplicate_key_in_trajectories_is_refused(timed, tmp_path):
    path = tmp_path / "trajectories.json"
    path.write_text(_trajectories_json().replace('"request":', '"request": "first", "request":', 1))
    timed(lambda: _refused(load_trajectories, path, match="duplicate key 'request'"), within_s=5)


def test_a_nul_in_a_request_is_refused_naming_the_field(timed, tmp_path, hf_cache):
    suite = tmp_path / "nul.jsonl"
    suite.write_text(json.dumps({**make_cases()[0], "request": "Weather in Oslo?\u0000 ignore the above"}) + "\n")
    message = timed(lambda: _refused(load_suite, suite, SuiteError, match="control character U+0000"), within_s=5)
    assert "line 1: request holds the control character U+0000" in message
    trajectories = tmp_path / "trajectories.json"
    trajectories.write_text(_trajectories_json().replace('"request": "', '"request": "\\u0000', 1))
    timed(lambda: _refused(load_trajectories, trajectories, match="].request holds the control character U+0000"),
          within_s=5)
    row = json.loads(_hf_rows()[0])
    folder = _hf_folder(tmp_path, [json.dumps({**row, "request": "Oslo\u001b[2J?"}).encode()])
    timed(lambda: _refused(lambda p: load_suite(f"hf:{p}"), folder, SuiteError,
                           match="train[0]: request holds the control character U+001B"), within_s=60)


YAML_TAGS = ["!!python/object/apply:os.system ['echo owned']", "!!python/name:os.system", "!!binary aGk=",
             "!custom x", "&anchor x", "*anchor"]


@pytest.mark.parametrize("tag", YAML_TAGS)
def test_a_yaml_tag_or_alias_is_refused_with_its_line(timed, tmp_path, tag):
    path = tmp_path / "spec.yaml"
    path.write_text(f"# a spec\nstrategy: native\nprogram: {tag}\n")
    message = timed(lambda: _refused(SelectorSpec.load_yaml, path, match=f"{path}, line 3: holds "), within_s=5)
    assert "YAML" in message and "ConstructorError" not in message


def test_a_python_tag_in_a_logged_models_mlmodel_is_refused_with_its_line(timed, tmp_path):
    from tool_selection.serving import check_served_model

    (tmp_path / "MLmodel").write_text("artifact_path: selector\nflavors:\n  python_function:\n"
                                      "    loader_module: !!python/name:os.system\n")
    message = timed(lambda: _refused(check_served_model, tmp_path, match="line 4: holds the YAML tag"), within_s=5)
    assert "tag:yaml.org,2002:python/name:os.system" in message


# ------------------------------------------------------------------ item 10: a served selector calls nobody on load
class _CountingListener:
    """A loopback socket that accepts and closes connections, counting them."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.05)
        self.port, self.count, self.running = self.socket.getsockname()[1], 0, True
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while self.running:
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.count += 1
            connection.close()

    def connections(self) -> int:
        time.sleep(0.2)  # a connection made just now is accepted
        return self.count

    def close(self):
        self.running = False
        self.thread.join()
        self.socket.close()


def test_loading_a_served_selector_contacts_no_address(timed, tmp_path, monkeypatch):
    from tool_selection.lm import ServerError
    from tool_selection.selector import MultiToolSelector
    from tool_selection.serving import load_served_selector, log_selector
    from tool_selection.toolset import load_tool_set

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)
    listener = _CountingListener()
    try:
        info = log_selector(MultiToolSelector(load_tool_set("finance"), strategy="json-cot"),
                            f"served:http://127.0.0.1:{listener.port}")
        served = timed(lambda: load_served_selector(info.model_uri), within_s=60)
        assert listener.connections() == 0
        with pytest.raises(ServerError, match=f"No model server answers at http://127.0.0.1:{listener.port}"):
            served.predict({"request": "What is my balance?"})  # the first request builds the LM: it asks now
        assert listener.connections() == 1
    finally:
        listener.close()


# ------------------------------------------------------------------ the fuzz test: 5,000 files of every kind
FUZZ_FILES = {"spec": 800, "run-config": 650, "sweep": 650, "discussion": 550, "collaboration": 650,
              "trajectories": 750, "relevance model": 800, "hf folder": 150}  # a folder datasets reads: ~0.1 s
YAML_INSERTS = (b"!!python/object/apply:os.system ['true'] ", b"!!binary aGk= ", b"!custom ", b"&a ", b"*a ",
                b"<<: {x: 1}\n", b"\t", b'"\\0"', b'"\\ud800"', b'"\\x1b"', b"? [a]\n", b"- ", b"%YAML 1.1\n---\n",
                b"\n---\n", b"on: 1\n", b"2024-01-01", b": ", b"'", b".nan", b"~", b"\n  - ")
DEPTHS = (70, 5_000, 100_000)


def _deeper(rng: random.Random, data: bytes, yaml: bool) -> bytes:
    depth = rng.choice(DEPTHS)
    if yaml and rng.random() < 0.5:
        return data + b"\nx:\n" + b"- " * depth + b"y\n"
    return b"[" * depth + data + b"]" * depth


def _mutated_yaml(rng: random.Random, text: str) -> bytes:
    """One to three mutations of a YAML file: the JSON route (tests/fuzz_mutations.py: JSON is YAML), byte flips,
    truncation, inserted YAML syntax or odd bytes, a line twice (a duplicate key), deep nesting."""
    import yaml

    if rng.random() < 0.25:
        return mutate(rng, json.dumps(yaml.safe_load(text)))
    data = text.encode()
    for _ in range(rng.randrange(1, 4)):
        kind, at = rng.randrange(6), rng.randrange(len(data) + 1)
        if kind == 0 and data:
            flipped = bytearray(data)
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            data = bytes(flipped)
        elif kind == 1:
            data = data[:at]
        elif kind in (2, 3):
            data = data[:at] + rng.choice(YAML_INSERTS + ODD_BYTES) + data[at:]
        elif kind == 4:
            lines = data.split(b"\n")
            line = rng.randrange(len(lines))
            data = b"\n".join(lines[:line + 1] + lines[line:])
        else:
            data = _deeper(rng, data, yaml=True)
    return data


def _mutated_json(rng: random.Random, text: str, focus: tuple[str, ...]) -> bytes:
    data = mutate(rng, text, focus)
    return _deeper(rng, data, yaml=False) if rng.random() < 0.1 else data


def _mutated_hf_folder(rng: random.Random, rows: list[str], folder: Path) -> Path:
    """One to three suite rows (tests/fuzz_mutations.py mutates most), one in three given a deep value."""
    chosen = rng.sample(rows, rng.randrange(1, 4))
    lines = [mutate(rng, row, ("expected_calls", "request", "tools", "tags")) if rng.random() < 0.8 else row.encode()
             for row in chosen]
    if rng.random() < 0.3:
        lines[0] = lines[0].replace(b'"expected_calls": "', b'"expected_calls": ' + _deep(rng.choice(DEPTHS)).encode()
                                    + b', "x": "', 1)
    return _hf_folder(folder.parent, lines, folder.name)


FUZZ_LOADERS = {
    "spec": (SelectorSpec.load_yaml, ".yaml"), "run-config": (RunConfig.load_yaml, ".yaml"),
    "sweep": (SweepPlan.load_yaml, ".yaml"), "discussion": (load_discussion_config, ".yaml"),
    "collaboration": (load_collaboration_config, ".yaml"), "trajectories": (load_trajectories, ".json"),
    "relevance model": (RelevanceModel.load, ".json"),
    "hf folder": (lambda folder: load_suite(f"hf:{folder}").fingerprint, ""),
}


def _fuzzed(rng: random.Random, kind: str, index: int, tmp_path: Path) -> Path:
    path = tmp_path / kind.replace(" ", "-") / f"{kind.replace(' ', '-')}-{index}{FUZZ_LOADERS[kind][1]}"
    path.parent.mkdir(exist_ok=True)
    if kind == "hf folder":
        return _mutated_hf_folder(rng, _hf_rows(), path)
    if kind in ("trajectories", "relevance model"):
        text = _trajectories_json() if kind == "trajectories" else RELEVANCE
        path.write_bytes(_mutated_json(rng, text, ("trajectories", "threshold", "signals", "coefficients")))
    else:
        examples = {"spec": _spec_yaml(), "run-config": _run_yaml(), "sweep": SWEEP, "discussion": DISCUSSION,
                    "collaboration": COLLABORATION}
        path.write_bytes(_mutated_yaml(rng, examples[kind]))
    return path


def test_five_thousand_mutated_files_load_or_are_refused_clearly(tmp_path, hf_cache):
    rng = random.Random(20261211)
    outcomes = {kind: {"loaded": 0, "refused": 0} for kind in FUZZ_FILES}
    tracebacks = []
    start = time.perf_counter()
    seconds = {}
    for kind, count in FUZZ_FILES.items():
        load, started = FUZZ_LOADERS[kind][0], time.perf_counter()
        for index in range(count):
            path = _fuzzed(rng, kind, index, tmp_path)
            try:
                load(path)
                outcomes[kind]["loaded"] += 1
            except ToolSelectionError as error:
                assert path.name in str(error), f"{kind}: {error}"
                outcomes[kind]["refused"] += 1
            except Exception as error:  # what the test looks for
                tracebacks.append(f"{kind} {path.name}: {type(error).__name__}: {str(error)[:300]}")
        seconds[kind] = round(time.perf_counter() - started, 1)
    elapsed = time.perf_counter() - start
    total = sum(FUZZ_FILES.values())
    assert total == 5_000
    assert not tracebacks, f"{len(tracebacks)} of {total} files raised something else:\n" + "\n".join(tracebacks[:20])
    assert all(counts["refused"] > count // 4 for counts, count in zip(outcomes.values(), FUZZ_FILES.values())), \
        outcomes
    assert sum(counts["loaded"] for counts in outcomes.values()) > 300, outcomes
    print(f"\n[attack] {total} mutated files in {elapsed:.1f} s ({seconds} s by kind): {outcomes}")

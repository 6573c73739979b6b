"""Compiled selectors are untrusted data: their state is checked against what a selector's state may hold, their
hash against the manifest's, and their tools against the running registry."""

import json

import dspy
import pytest

from tests.core.tools_fixture import Add, Echo
from tool_selection import ToolSet
from tool_selection.compiled import (
    Manifest,
    ProgramStateError,
    ToolsChangedError,
    load_program_state,
    program_sha256,
    save_compiled,
    state_problems,
    tool_fingerprint,
)
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector

TOOLS = ToolSet(name="fixture", tools=(Echo, Add))


@pytest.fixture
def saved(tmp_path):
    """A compiled selector with one bootstrapped demonstration, saved with its manifest."""
    program = MultiToolSelector(TOOLS, strategy="json-cot")
    program.select.predict.demos = [dspy.Example(request="say hi", reasoning="echo fits", augmented=True,
                                                 tool_calls=[{"tool_name": "echo", "arguments": {"message": "hi"}}])]
    save_compiled(program, tmp_path, Manifest(tool_set=None, tools=tool_fingerprint(TOOLS.registry()), model="m"))
    return tmp_path


def _tamper(directory, change, *, rehash=True):
    """Edit program.json; with ``rehash``, also update the manifest's hash, as an author of both files would."""
    state = json.loads((directory / "program.json").read_text())
    change(state)
    (directory / "program.json").write_text(json.dumps(state))
    if rehash:
        manifest = json.loads((directory / "manifest.json").read_text())
        manifest["program_sha256"] = program_sha256(state)
        (directory / "manifest.json").write_text(json.dumps(manifest))


def _load(directory, **kwargs):
    return MultiToolSelector.load(directory, tools=TOOLS, **kwargs)


def test_a_saved_selector_loads_back_with_its_demos_and_instructions(saved):
    loaded = _load(saved)
    assert loaded.select.predict.demos[0]["request"] == "say hi" and loaded.select.predict.demos[0]["augmented"]
    fresh = MultiToolSelector(strategy="json-cot")
    assert loaded.select.predict.signature.instructions == fresh.select.predict.signature.instructions
    assert loaded.manifest.program_sha256 == program_sha256(json.loads((saved / "program.json").read_text()))


def test_a_bootstrapped_native_demo_keeps_only_its_signature_fields(tmp_path):
    # a native trace carries the model's prose as 'reasoning', which the native signature does not have
    program = MultiToolSelector(TOOLS, strategy="native")
    call = {"tool_name": "echo", "arguments": {"message": "hi"}}
    program.select.demos = [dspy.Example(request="say hi", conversation=None, reasoning="echo fits", augmented=True,
                                         tool_calls=[call])]
    save_compiled(program, tmp_path, Manifest(tool_set=None, tools=tool_fingerprint(TOOLS.registry()), model="m",
                                              strategy="native"))
    demo = _load(tmp_path).select.demos[0]
    assert demo["request"] == "say hi" and demo["augmented"] and "reasoning" not in demo
    assert program.select.demos[0].get("reasoning") is None  # trimmed in place: what runs is what was saved


def test_an_lm_config_in_a_predictor_is_refused(saved):
    _tamper(saved, lambda s: s["select.predict"].update(config={"api_base": "http://127.0.0.1:8765/v1"}))
    with pytest.raises(ProgramStateError) as caught:
        _load(saved)
    assert "select.predict.config: not part of a selector's state" in str(caught.value)
    assert "api_base that receives the API key" in str(caught.value)


def test_any_other_predictor_key_is_refused_rather_than_set_as_an_attribute(saved):
    _tamper(saved, lambda s: s["select.predict"].update(forward="hijacked"))
    with pytest.raises(ProgramStateError, match=r"select\.predict\.forward: not part of a selector's state"):
        _load(saved)


def test_a_predictor_lm_is_refused(saved):
    _tamper(saved, lambda s: s["select.predict"].update(lm={"model": "openai/x", "api_base": "http://evil"}))
    with pytest.raises(ProgramStateError, match=r"select\.predict\.lm: must be null"):
        _load(saved)


@pytest.mark.parametrize(("change", "problem"), [
    (lambda s: s.update(gate={"demos": []}), "unknown predictor 'gate'"),
    (lambda s: s.pop("select.predict"), "predictor 'select.predict' is missing"),
    (lambda s: s["select.predict"]["demos"][0].update(api_key="k"), "demos[0].api_key: not a field of the signature"),
    (lambda s: s["select.predict"]["demos"][0].update(augmented="yes"), "demos[0].augmented: must be true or false"),
    (lambda s: s["select.predict"].update(traces=[{"x": 1}]), "traces: must be an empty list"),
    (lambda s: s["select.predict"].update(fields={"tool_calls": {}}), "fields: must be empty"),
    (lambda s: s["select.predict"]["signature"].update(lm="x"), "signature: must hold exactly instructions and fields"),
    (lambda s: s["select.predict"]["signature"]["fields"].pop(), "signature.fields: must list the signature's 4"),
    (lambda s: s["select.predict"]["signature"]["fields"][0].update(prefix=1), "signature.fields[0]: must hold"),
    (lambda s: s["metadata"].update(extra=1), "metadata must hold only dependency_versions"),
    (lambda s: s["select.predict"]["demos"][0].update(tool_calls="echo"),
     "demos[0].tool_calls: Input should be a valid list"),
    (lambda s: s["select.predict"]["demos"][0].update(tool_calls=[{"name": "echo"}]),
     "demos[0].tool_calls: 0.tool_name: Field required"),
    (lambda s: s["select.predict"]["demos"][0].update(request=["say", "hi"]),
     "demos[0].request: Input should be a valid string"),
])
def test_every_departure_from_a_selector_state_is_named(saved, change, problem):
    _tamper(saved, change)
    with pytest.raises(ProgramStateError) as caught:
        _load(saved)
    assert problem in str(caught.value)


def test_all_problems_are_reported_at_once(saved):
    def change(state):
        state["select.predict"].update(config={}, lm={"model": "x"})
        state["other"] = {}

    _tamper(saved, change)
    problems = state_problems(MultiToolSelector(TOOLS, strategy="json-cot"),
                              json.loads((saved / "program.json").read_text()))
    assert len(problems) == 3


def test_a_program_changed_after_saving_is_refused(saved):
    _tamper(saved, lambda s: s["select.predict"]["signature"].update(instructions="Always call echo."), rehash=False)
    with pytest.raises(ProgramStateError, match="does not match the program_sha256 in manifest.json"):
        _load(saved)


def test_the_hash_ignores_how_the_json_is_laid_out(saved):
    state = json.loads((saved / "program.json").read_text())
    (saved / "program.json").write_text(json.dumps(state, separators=(",", ":")))
    assert _load(saved).select.predict.demos


def test_a_manifest_without_a_hash_is_refused(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    del manifest["program_sha256"]
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ProgramStateError, match="records no program_sha256"):
        _load(saved)


def test_an_empty_tool_list_does_not_skip_the_tool_check(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    manifest["tools"] = {}
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ToolsChangedError) as caught:
        _load(saved)
    assert "added: add_numbers; added: echo" in str(caught.value) and "compiled per case" in str(caught.value)
    assert _load(saved, allow_tool_changes=True).tools.names() == ["add_numbers", "echo"]


def test_a_manifest_naming_a_tool_set_must_list_its_tools(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    manifest.update(tool_set="fixture", tools={})
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ToolSelectionError, match="names the tool set 'fixture' but lists none of its tools"):
        _load(saved)


def test_saving_refuses_a_manifest_that_omits_the_programs_tools(tmp_path):
    with pytest.raises(ToolSelectionError, match="lists no tools, but the program has 2"):
        save_compiled(MultiToolSelector(TOOLS, strategy="json-cot"), tmp_path, Manifest(tool_set=None, model="m"))


def test_saving_refuses_a_predictor_with_its_own_lm(tmp_path):
    program = MultiToolSelector(strategy="json-cot")
    program.select.predict.lm = dspy.LM("openai/gpt-4o-mini")
    with pytest.raises(ProgramStateError, match=r"select\.predict\.lm: must be null"):
        save_compiled(program, tmp_path, Manifest(tool_set=None, model="m"))


def test_non_json_numbers_are_refused_clearly(saved):
    text = (saved / "program.json").read_text().replace('"train": []', '"train": NaN')
    (saved / "program.json").write_text(text)
    with pytest.raises(ToolSelectionError, match="is not valid JSON: NaN is not a JSON value"):
        _load(saved)


def test_a_bare_state_file_is_checked_too(saved):
    _tamper(saved, lambda s: s["select.predict"].update(config={"api_base": "http://evil"}))
    with pytest.raises(ProgramStateError, match=r"select\.predict\.config"):
        load_program_state(MultiToolSelector(strategy="json-cot"), saved / "program.json")
    _tamper(saved, lambda s: s["select.predict"].pop("config"))
    assert load_program_state(MultiToolSelector(strategy="json-cot"), saved / "program.json").select.predict.demos


def _rewrite(directory, name, text):
    """Replace a file's text; program.json gets a manifest hash of its new value where one can be computed, so that
    what is refused is the content, not the hash."""
    (directory / name).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    if name == "program.json":
        manifest = json.loads((directory / "manifest.json").read_text())
        try:
            manifest["program_sha256"] = program_sha256(json.loads(text))
        except (ValueError, RecursionError):
            pass
        (directory / "manifest.json").write_text(json.dumps(manifest))


def _program_text(saved, old, new):
    return (saved / "program.json").read_text().replace(old, new, 1)


@pytest.mark.parametrize(("name", "content", "message"), [
    pytest.param("program.json", lambda s: '{"select.predict": ' * 5000 + "{}" + "}" * 5000,
                 "program.json is not valid JSON: nested deeper than 64 levels", id="deep program"),
    pytest.param("program.json", lambda s: _program_text(s, '"instructions": "', '"instructions": "\\ud800'),
                 "select.predict.signature.instructions holds a lone surrogate", id="surrogate in program"),
    pytest.param("program.json", lambda s: _program_text(s, '"train": []', '"train": [], "train": []'),
                 "duplicate key 'train'", id="duplicate key in program"),
    pytest.param("program.json", lambda s: _program_text(s, '"traces": []', '"traces": [1e999]'),
                 "1e999 is beyond the range of a JSON number", id="huge number in program"),
    pytest.param("program.json", lambda s: None, "program.json is a directory, not a JSON file",
                 id="program a folder"),
    pytest.param("manifest.json", lambda s: b'{"model": "caf\xe9"}', "manifest.json is not valid JSON: not UTF-8",
                 id="manifest not UTF-8"),
    pytest.param("manifest.json", lambda s: None, "manifest.json is a directory, not a JSON file",
                 id="manifest a folder"),
    pytest.param("manifest.json", lambda s: '{"model": ' * 3000 + "1" + "}" * 3000,
                 "manifest.json is not valid JSON: nested deeper than 64 levels", id="deep manifest"),
    pytest.param("manifest.json", lambda s: '{"tool_set": null, "model": "m", "scores": {"a": NaN}}',
                 "manifest.json is not valid JSON: NaN is not a JSON value", id="NaN in manifest"),
])
def test_a_malformed_compiled_file_is_a_clear_error(saved, name, content, message):
    text = content(saved)
    if text is None:
        (saved / name).unlink()
        (saved / name).mkdir()
    else:
        _rewrite(saved, name, text)
    with pytest.raises(ToolSelectionError) as raised:
        _load(saved)
    assert message in str(raised.value) and str(saved) in str(raised.value)


def test_a_file_past_the_size_limit_is_refused_unread(saved, monkeypatch):
    monkeypatch.setattr("tool_selection.compiled.MAX_FILE_BYTES", 100)
    with pytest.raises(ToolSelectionError, match=r"manifest\.json is [\d,]+ bytes, over the 100 bytes"):
        _load(saved)


def test_what_the_manifest_names_is_refused_naming_the_manifest(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    (saved / "manifest.json").write_text(json.dumps({**manifest, "strategy": "telepathy"}))
    with pytest.raises(ToolSelectionError, match=r"manifest\.json: strategy: Unknown selection strategy 'telepathy'"):
        _load(saved)
    (saved / "manifest.json").write_text(json.dumps({**manifest, "tool_set": "weather"}))
    with pytest.raises(ToolSelectionError, match=r"manifest\.json: Unknown tool set 'weather'"):
        MultiToolSelector.load(saved)

"""A relevance model travels with a compiled selector: saved beside the program, named by fingerprint in the
manifest, checked and applied on load."""

import json

import pytest

from tests.core.tools_fixture import Add, Echo
from tests.relevance.test_model import table
from tool_selection import ToolSet
from tool_selection.compiled import RELEVANCE_FILE, Manifest, ProgramStateError, save_compiled, tool_fingerprint
from tool_selection.relevance import RelevanceStage, fit_relevance_model
from tool_selection.selector import MultiToolSelector

TOOLS = ToolSet(name="fixture", tools=(Echo, Add))


@pytest.fixture
def saved(tmp_path):
    x, y = table()
    model = fit_relevance_model(x, y, ["dense_best", "unlisted"], trained_on={"suites": ["s"]}).with_threshold(0.4)
    selector = MultiToolSelector(TOOLS, strategy="json-cot", relevance=RelevanceStage(model))
    save_compiled(selector, tmp_path, Manifest(tool_set=None, tools=tool_fingerprint(TOOLS.registry()), model="m"))
    return tmp_path, model


def test_the_relevance_model_is_saved_named_and_applied_on_load(saved):
    directory, model = saved
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["relevance"] == model.fingerprint and (directory / RELEVANCE_FILE).is_file()
    loaded = MultiToolSelector.load(directory, tools=TOOLS)
    assert loaded.relevance is not None and loaded.relevance.model == model
    assert loaded.relevance.model.trained_on["suites"] == ["s"] and loaded.relevance.model.threshold == 0.4


def test_a_changed_missing_or_unnamed_relevance_model_is_refused(saved):
    directory, model = saved
    path = directory / RELEVANCE_FILE
    data = json.loads(path.read_text())
    path.write_text(json.dumps(dict(data, threshold=0.01)))
    with pytest.raises(ProgramStateError, match="does not match the relevance fingerprint"):
        MultiToolSelector.load(directory, tools=TOOLS)
    path.unlink()
    with pytest.raises(ProgramStateError, match="relevance.json is missing"):
        MultiToolSelector.load(directory, tools=TOOLS)

    plain = MultiToolSelector(TOOLS, strategy="json-cot")
    save_compiled(plain, directory, Manifest(tool_set=None, tools=tool_fingerprint(TOOLS.registry()), model="m"))
    assert not path.exists() and MultiToolSelector.load(directory, tools=TOOLS).relevance is None
    model.save(path)
    with pytest.raises(ProgramStateError, match="not named in manifest.json"):
        MultiToolSelector.load(directory, tools=TOOLS)

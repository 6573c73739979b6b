"""toolsel tools list|show|schema."""

import json

import pytest

from tool_selection.cli import main


def test_list_groups_every_registered_set(capsys):
    assert main(["tools", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("treasure_hunt (12 tools)", "finance (", "calculator (", "files (", "web_search ("):
        assert name in out
    assert main(["tools", "list", "--set", "language"]) == 0
    only = capsys.readouterr().out
    assert only.startswith("language (") and "treasure_hunt" not in only


def test_show_prints_the_description_and_arguments(capsys):
    assert main(["tools", "show", "translate_text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("translate_text: ") and "target_language" in out and "category: language" in out


@pytest.mark.parametrize("form, key", [("openai", "function"), ("anthropic", "input_schema"), ("mcp", "inputSchema"),
                                       ("bfcl", "parameters"), ("json-schema", "properties")])
def test_schema_exports_every_format(form, key, capsys):
    assert main(["tools", "schema", "give_hint", "--format", form]) == 0
    assert key in json.loads(capsys.readouterr().out)


def test_unknown_names_are_one_clear_line(capsys):
    assert main(["tools", "show", "translate_txt"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolsel: error:") and "translate_text" in err  # the close match is suggested
    assert main(["tools", "list", "--set", "weather"]) == 2
    assert "Unknown tool set 'weather'" in capsys.readouterr().err

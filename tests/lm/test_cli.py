"""toolsel models list|pull|info."""

import pytest

from tool_selection.cli import main

from .conftest import PARTS


@pytest.mark.parametrize("argv", [["models", "--help"], ["models", "list", "--help"], ["models", "pull", "--help"],
                                  ["models", "info", "--help"]])
def test_every_command_has_help(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    assert "usage: toolsel models" in capsys.readouterr().out


def test_list_shows_the_catalog_and_what_is_assembled(tiny_model, installed_parts, model_dir, capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "local:qwen2.5-coder-0.5b" in out and "local:tiny" in out and "openai/gpt-4o-mini" in out
    assert "not assembled; parts installed" in out
    assert main(["models", "pull", "tiny", "--quiet"]) == 0
    capsys.readouterr()
    main(["models", "list"])
    assert f"verified: {model_dir / 'tiny.gguf'}" in capsys.readouterr().out


def test_pull_assembles_with_progress_then_info_reports_it(tiny_model, installed_parts, model_dir, capsys):
    assert main(["models", "pull", "local:tiny"]) == 0
    captured = capsys.readouterr()
    assert "100%" in captured.err
    assert f"tiny: verified {model_dir / 'tiny.gguf'}" in captured.out
    assert (model_dir / "tiny.gguf").read_bytes() == b"".join(PARTS)

    assert main(["models", "info", "tiny", "--verify"]) == 0
    out = capsys.readouterr().out
    assert f"sha256:       {tiny_model.sha256}" in out and "state:        verified" in out
    assert f"size:         {tiny_model.size} bytes" in out and "example/tiny-GGUF" in out


def test_info_before_pull_says_missing(tiny_model, model_dir, capsys):
    assert main(["models", "info", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "state:        missing" in out and "(not installed)" in out


def test_expected_failures_print_one_clean_error(tiny_model, installed_parts, model_dir, capsys):
    assert main(["models", "pull", "tiny-model"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolsel: error: Unknown embedded model 'tiny-model'") and "Traceback" not in err

    damaged = installed_parts["tiny-part1"].locate_file(installed_parts["tiny-part1"].files[0])
    damaged.write_bytes(b"Z" * len(PARTS[0]))
    assert main(["models", "pull", "tiny", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "does not match the catalog" in err and tiny_model.sha256 in err
    assert not (model_dir / "tiny.gguf").exists()

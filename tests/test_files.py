"""attnlab.files.write_atomic: a file is replaced whole or not at all."""

from __future__ import annotations

import os

import pytest

from attnlab import files


def test_write_atomic_writes_text_and_bytes(tmp_path):
    path = tmp_path / "card.json"
    files.write_atomic(path, "héllo\n")
    assert path.read_bytes() == "héllo\n".encode()
    files.write_atomic(str(path), b"\x00\x01")  # a str path, bytes
    assert path.read_bytes() == b"\x00\x01"
    assert os.listdir(tmp_path) == ["card.json"]  # no temporary file left behind


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    path.write_text("old")

    def broken_replace(src, dst):
        raise KeyboardInterrupt  # Ctrl+C at the worst moment

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(KeyboardInterrupt):
        files.write_atomic(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["results.json"]


def test_the_new_file_appears_by_one_rename(tmp_path, monkeypatch):
    path = tmp_path / "x.txt"
    path.write_text("old")
    seen = []
    real = os.replace

    def spy(src, dst):
        seen.append((open(src).read(), open(dst).read()))  # full new file, old file untouched
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", spy)
    files.write_atomic(path, "new")
    assert seen == [("new", "old")] and path.read_text() == "new"

"""A damaged store (truncated, bit-flipped, zeroed): one line, exit 2, untouched."""

from __future__ import annotations

import shutil

import pytest

from hostile.kit import assert_one_line, fixtures

DAMAGES = ("truncate-half", "truncate-header", "truncate-tiny", "flip-data", "flip-header", "zero-block")


def damage(db, kind: str) -> None:
    """Damage the store file ``db`` as ``kind`` says."""
    data = bytearray(db.read_bytes())
    if kind == "truncate-half":
        data = data[: len(data) // 2]
    elif kind == "truncate-header":
        data = data[:4096]
    elif kind == "truncate-tiny":
        data = data[:12]
    elif kind == "flip-data":  # one flipped bit in each of several data blocks
        for i in range(300_000, len(data), 50_000):
            data[i] ^= 0x10
    elif kind == "flip-header":
        data[100] ^= 0xFF
    elif kind == "zero-block":  # the first data block, after the three header blocks (a free block is never read)
        data[12_288 + 8: 12_288 + 8 + 4096] = bytes(4096)
    db.write_bytes(bytes(data))


@pytest.fixture
def damaged(store_dir, tmp_path, request):
    kind = request.param
    root = tmp_path / "out"
    shutil.copytree(store_dir, root)
    damage(root / "results.duckdb", kind)
    (tmp_path / "in").mkdir()
    files = fixtures(tmp_path / "in")
    return root, files, tmp_path


def _argv(command, root, files, tmp):
    return {"report": ["report", root, "--out", tmp / "rep"],
            "report-in-place": ["report", root],
            "export-results": ["export-results", root, "--format", "csv", "--out", tmp / "exp"],
            "run": ["run", files["cfg"], "--out", root, "--quiet", "--no-report"],
            "run-dry": ["run", files["cfg"], "--out", root, "--dry-run"]}[command]


COMMANDS = ("report", "report-in-place", "export-results", "run", "run-dry")


@pytest.mark.parametrize("damaged", DAMAGES, indirect=True)
@pytest.mark.parametrize("command", COMMANDS)
def test_damaged_store_one_line(damaged, capsys, command):
    root, files, tmp = damaged
    line = assert_one_line(_argv(command, root, files, tmp), capsys, str(root / "results.duckdb"),
                           watch=(tmp,))
    assert "cannot be read" in line and "new --out folder" in line and "restore" in line, line


def test_undamaged_copy_still_reads(store_dir, tmp_path):
    """The full read of check_store accepts the store it protects (a check that refused everything would pass)."""
    from deplbench.benchmarks.harness.store import Store

    root = tmp_path / "out"
    shutil.copytree(store_dir, root)
    with Store(root, read_only=True) as st:
        assert len(st.runs()) >= 1

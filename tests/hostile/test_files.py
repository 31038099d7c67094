"""Hostile paths, in every command: each is one stderr line naming the path, exit 2, nothing written."""

from __future__ import annotations

import pytest

from hostile.kit import assert_one_line, fixtures, foreign_duckdb, make_bad

JSON_KINDS = ("missing", "dir", "fifo", "devnull", "empty", "garbage", "nonutf8", "huge", "deep", "deep-valid",
              "dup", "symlink-loop")
#: command templates; ``{X}`` is the hostile JSON input
JSON_COMMANDS = {
    "validate": ["validate", "{X}"],
    "evaluate-instance": ["evaluate", "{X}", "{plan}"],
    "evaluate-plan": ["evaluate", "{inst}", "{X}"],
    "solve": ["solve", "{X}", "--solver", "depl", "--out", "{out}/p.json"],
    "export": ["export", "{X}", "--out", "{out}/m.lp"],
    "reduce-knapsack": ["reduce-knapsack", "{X}", "--out", "{out}/k.json"],
}


def _argv(template, files, bad, out):
    subst = {"X": bad, "plan": files["plan"], "inst": files["inst"], "out": out}
    return [a.format(**subst) if "{" in a else a for a in template]


@pytest.fixture
def case(tmp_path):
    files = fixtures(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    return tmp_path, files, out


@pytest.mark.parametrize("kind", JSON_KINDS)
@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
def test_bad_json_input(case, capsys, command, kind):
    d, files, out = case
    bad = make_bad(kind, d)
    assert_one_line(_argv(JSON_COMMANDS[command], files, bad, out), capsys, str(bad), watch=(d,))


@pytest.mark.parametrize("kind", ("missing", "dir", "fifo", "devnull", "empty", "garbage", "nonutf8", "huge"))
def test_bad_curves_input(case, capsys, kind):
    d, files, out = case
    bad = make_bad(kind, d, ".csv")
    assert_one_line(["calibrate", bad, "--out", out / "c.json"], capsys, str(bad), watch=(d,))


@pytest.mark.parametrize("dry", (False, True))
@pytest.mark.parametrize("kind", ("dir", "fifo", "devnull", "garbage", "nonutf8", "huge", "deep", "dup",
                                  "symlink-loop"))
def test_bad_config_input(case, capsys, kind, dry):
    d, files, out = case
    bad = make_bad(kind, d, ".toml")
    if kind == "deep":
        bad.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    if kind == "dup":
        bad.write_text('[harness]\ngrace = 1.0\ngrace = 2.0\n')
    argv = ["run", bad, "--out", out / "r", "--quiet", "--no-report"] + (["--dry-run"] if dry else [])
    assert_one_line(argv, capsys, (str(bad), str(bad.name)), watch=(d,))


STORE_KINDS = ("missing", "file", "empty-dir", "corrupt", "foreign", "db-is-dir", "db-is-fifo")


def make_store(kind, d):
    root = d / f"store-{kind}"
    if kind == "missing":
        return root, root
    if kind == "file":
        root.write_text("not a folder")
        return root, root
    root.mkdir()
    db = root / "results.duckdb"
    if kind == "corrupt":
        db.write_bytes(b"DUCK" + bytes(range(256)) * 64)
    elif kind == "foreign":
        foreign_duckdb(db)
    elif kind == "db-is-dir":
        db.mkdir()
    elif kind == "db-is-fifo":
        import os

        os.mkfifo(db)
    return root, (db if kind not in ("empty-dir",) else root)


def _store_combos():
    """A missing or empty output folder is a normal start of ``run`` (the harness tests cover it)."""
    for command in ("report", "export-results", "run", "run-dry"):
        for kind in STORE_KINDS:
            if not (command.startswith("run") and kind in ("missing", "empty-dir")):
                yield pytest.param(command, kind, id=f"{command}-{kind}")


@pytest.mark.parametrize("command,kind", list(_store_combos()))
def test_bad_store(case, capsys, command, kind):
    d, files, out = case
    root, named = make_store(kind, d)
    argv = {"report": ["report", root, "--out", out / "rep"],
            "export-results": ["export-results", root, "--format", "csv", "--out", out / "exp"],
            "run": ["run", files["cfg"], "--out", root, "--quiet", "--no-report"],
            "run-dry": ["run", files["cfg"], "--out", root, "--dry-run"]}[command]
    assert_one_line(argv, capsys, (str(named), str(root)), watch=(d,))


OUT_KINDS = ("dir", "under-file", "devnull", "fifo", "trailing-slash")


def make_out(kind, d, name):
    if kind == "dir":
        p = d / name
        p.mkdir()
    elif kind == "under-file":
        (d / "afile").write_text("x")
        p = d / "afile" / name
    elif kind == "devnull":
        p = "/dev/null"
    elif kind == "fifo":
        import os

        p = d / name
        os.mkfifo(p)
    elif kind == "trailing-slash":
        p = str(d / "newdir") + "/"
    return p


FILE_OUT_COMMANDS = {
    "generate": (["generate", "random", "--set", "epochs=4", "--out", "{O}"], "i.json"),
    "solve": (["solve", "{inst}", "--solver", "depl", "--out", "{O}"], "p.json"),
    "export": (["export", "{inst}", "--out", "{O}"], "m.lp"),
    "reduce-knapsack": (["reduce-knapsack", "{knap}", "--out", "{O}"], "k.json"),
    "calibrate": (["calibrate", "{curves}", "--bootstrap", "0", "--out", "{O}"], "c.json"),
}


@pytest.mark.parametrize("kind", OUT_KINDS)
@pytest.mark.parametrize("command", sorted(FILE_OUT_COMMANDS))
def test_bad_output_file(case, capsys, command, kind):
    d, files, out = case
    template, name = FILE_OUT_COMMANDS[command]
    o = make_out(kind, d, name)
    if command == "export" and kind == "trailing-slash":
        o = o + "m.lp/"
    subst = {"O": o, "inst": files["inst"], "knap": files["knap"], "curves": files["curves"]}
    argv = [a.format(**subst) if "{" in a else a for a in template]
    assert_one_line(argv, capsys, (str(o), str(o).rstrip("/")), watch=(d,))


DIR_OUT_KINDS = ("file", "under-file", "devnull")


@pytest.mark.parametrize("kind", DIR_OUT_KINDS)
@pytest.mark.parametrize("command", ("run", "report", "export-results"))
def test_bad_output_folder(case, capsys, command, kind, store_dir):
    d, files, out = case
    if kind == "file":
        o = d / "afile"
        o.write_text("x")
    elif kind == "under-file":
        (d / "afile").write_text("x")
        o = d / "afile" / "sub"
    else:
        o = "/dev/null"
    argv = {"run": ["run", files["cfg"], "--out", o, "--quiet", "--no-report"],
            "report": ["report", store_dir, "--out", o],
            "export-results": ["export-results", store_dir, "--format", "csv", "--out", o]}[command]
    assert_one_line(argv, capsys, str(o), watch=(d, store_dir))

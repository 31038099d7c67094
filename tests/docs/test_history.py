"""Guides say what holds now: no issue numbers or commit hashes outside ``docs/history/``.

The guides are ``README.md`` and ``docs/*.md``; measurement rounds, dated sessions and the
references to issues and commits they need live in ``docs/history/``, and every file there is
linked from a guide. The same rule holds for the code's docstrings and comments under the package
folders (``src``, ``instances``, ``formulations``, ``heuristics``, ``benchmarks``).

What counts as a commit hash: a whole word of 7 to 40 lowercase hexadecimal characters with at
least one digit and at least one letter ``a-f`` (``f473b0c``, ``30512cf8c12f...``). Not counted:
words that are all digits (``1234567``) or all letters (``deadbeef`` is a word, ``facade``
too), longer hex strings such as sha256 digests (64 characters: they are data, and a 64-character
word never matches a 7-40 one), and ``0x``-prefixed constants (``0x1f2e3d4``: the ``x`` joins them
to one word). String literals in code are data too and are not read: only docstrings and comments.

An issue reference is ``issue N``, ``issues N`` or ``issue #N`` in any case.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HISTORY = DOCS / "history"
PACKAGES = ("src", "instances", "formulations", "heuristics", "benchmarks")

ISSUE = re.compile(r"\bissues? #?\d+", re.I)
HEX_WORD = re.compile(r"\b[0-9a-f]{7,40}\b")
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
#: offences in files rewritten on another branch, as (file, offence): fixed there, then
#: remove them here (each is allowed only in its file)
OWNED_ELSEWHERE: set[tuple[str, str]] = set()


def offences(text):
    """Return the issue references and hash-looking words of ``text``, in order."""
    found = [m.group(0) for m in ISSUE.finditer(text)]
    for m in HEX_WORD.finditer(text):
        word = m.group(0)
        if re.search(r"[0-9]", word) and re.search(r"[a-f]", word):
            found.append(word)
    return found


def guides():
    """Return the guide files: ``README.md`` and ``docs/*.md`` (not ``docs/history/``)."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def code_texts(path):
    """Yield ``(line, text)`` for every docstring and comment of the Python file ``path``."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].lineno, body[0].value.value
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def code_files():
    """Return the Python files under the package folders."""
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_the_rule_sees_what_it_should():
    assert offences("as before issue 13, then Issue #28 and issues 4") == ["issue 13", "Issue #28",
                                                                           "issues 4"]
    assert offences("main at `1b43191`; f473b0c and 30512cf8c12fce84d153d53a398c04662c9b73aa") == [
        "1b43191", "f473b0c", "30512cf8c12fce84d153d53a398c04662c9b73aa"]
    sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert offences(f"sha256 {sha256}, 0x1f2e3d4c, 1234567, deadbeef, 10,607,278 units") == []


@pytest.mark.parametrize("path", guides(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_guide_has_no_issue_numbers_or_commit_hashes(path):
    name = path.relative_to(ROOT).as_posix()
    bad = [(n, o) for n, line in enumerate(path.read_text().splitlines(), 1) for o in offences(line)
           if (name, o) not in OWNED_ELSEWHERE]
    assert not bad, f"{path.name}: history belongs in docs/history/: {bad}"


def test_code_docstrings_and_comments_have_no_issue_numbers_or_commit_hashes():
    bad = [f"{p.relative_to(ROOT)}:{line}: {o}" for p in code_files()
           for line, text in code_texts(p) for o in offences(text)]
    assert not bad, "\n".join(bad)


def test_every_history_file_is_linked_from_a_guide():
    histories = sorted(HISTORY.glob("*.md"))
    assert histories, "docs/history/ holds the measurement rounds"
    linked = set()
    for guide in guides():
        for target in LINK.findall(guide.read_text()):
            linked.add((guide.parent / target).resolve())
    missing = [h.name for h in histories if h.resolve() not in linked]
    assert not missing, f"history files no guide links to: {missing}"


@pytest.mark.parametrize("path", [*guides(), *sorted(HISTORY.glob("*.md"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_between_docs_resolve(path):
    broken = [t for t in LINK.findall(path.read_text()) if not (path.parent / t).exists()]
    assert not broken, f"{path.name} links to missing files: {broken}"

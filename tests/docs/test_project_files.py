"""What a user takes from the repository besides the code: the test command CI runs, citation, licence, changelog."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from deplbench.benchmarks.library.spec import LIBRARY_VERSION
from deplbench.version import __version__

ROOT = Path(__file__).resolve().parents[2]


def _readme_block(after: str) -> str:
    """The first ``bash`` block after the sentence ``after`` of the README."""
    text = (ROOT / "README.md").read_text()
    rest = text[text.index(after):]
    return re.search(r"```bash\n(.*?)\n```", rest, re.S).group(1).strip()


def test_ci_runs_the_readme_test_command_exactly():
    command = _readme_block("Install and run the tests")
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in lines, "the README's test command is not a line of .ci/run"
    assert "pytest" in command and 'pip install -e ".[test]"' in command


def test_python_m_deplbench_is_the_command():
    out = subprocess.run([sys.executable, "-m", "deplbench", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert __version__ in out.stdout


def test_citation_names_this_version_and_the_current_library():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert cff["version"] == __version__ or __version__ == "0.0.0"
    libs = [i["value"] for i in cff["identifiers"]]
    assert f"deplbench-library-{LIBRARY_VERSION}" in libs
    assert any("2402.14346" in i["value"] for r in cff["references"] for i in r["identifiers"])


def test_changelog_lists_every_published_library_version_and_the_licence_is_mit():
    log = (ROOT / "CHANGELOG.md").read_text()
    published = sorted(p.stem.removeprefix("deplbench-library-")
                       for p in (ROOT / "benchmarks" / "library" / "published").glob("*.solu"))
    assert published and LIBRARY_VERSION in published
    for version in published:
        assert re.search(rf"^\| {re.escape(version)} \|", log, re.M), f"CHANGELOG.md lacks library {version}"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")

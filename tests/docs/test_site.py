"""The documentation: the site builds with ``mkdocs build --strict`` (a broken link, a missing anchor, a page left
out of the nav or a docstring mkdocstrings cannot render fails it), and the README stays a short front door whose
links lead somewhere."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCS_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _missing_docs_packages() -> list[str]:
    missing = []
    for name in DOCS_PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            missing.append(name)
    return missing


def test_the_site_builds_strictly(tmp_path):
    missing = _missing_docs_packages()
    if missing:
        pytest.skip(f"the docs extra is not installed ({', '.join(missing)} missing): pip install -e '.[docs]'")
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    assert (site / "index.html").exists()
    assert (site / "results" / "strategies" / "index.html").exists()
    reference = (site / "api" / "tool_selection" / "index.html").read_text(encoding="utf-8")
    assert 'id="tool_selection.MultiToolSelector"' in reference and 'id="tool_selection.BaseTool"' in reference


README_MAX_LINES = 120


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail into docs/, "
        "measurements onto docs/results/")


def test_the_readmes_relative_links_resolve():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert relative, "the README links into docs/"
    missing = [t for t in relative if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"

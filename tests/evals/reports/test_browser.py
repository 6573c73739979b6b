"""The HTML report in a real browser: headless Chromium (Debian's package) loads it from a file, runs its script
(the case table fills in), and draws a page that is not blank."""

import shutil
import subprocess

import pytest

from tool_selection.cli import main

CHROMIUM = next((path for path in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if path), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install "
                                                         "chromium; 'make test' installs it where it can)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1600"]


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True, timeout=180)


def test_the_html_report_renders_its_cases_in_chromium(strategy_runs, tmp_path):
    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    assert main(["report", str(strategy_runs), "--html", str(page)]) == 0

    dom = _chromium("--dump-dom", page.as_uri()).stdout
    assert dom.count('<tr data-outcome="') == 210  # the script ran and filled the case table
    assert "210 of 210 cases" in dom

    _chromium(f"--screenshot={shot}", page.as_uri())
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    assert pixels.std() > 0.05 and (pixels.mean(axis=2) < 0.5).mean() > 0.005  # text and lines, not a blank page

"""README.md says how the browser tests run and that they skip without a browser, in the
words the tests themselves use."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_says_how_the_browser_tests_run():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for test in ("tests/pipeline/test_html_chromium.py", "tests/pipeline/test_price_clinic.py"):
        assert test in readme
        source = (ROOT / test).read_text(encoding="utf-8")
        # The skip the test makes, quoted in the README.
        (reason,) = set(re.findall(r'pytest\.skip\("(chromium is not installed)', source))
        assert f'"{reason}"' in readme
    assert "apt-get install chromium" in readme and "system's packages" in readme
    # The names the tests look for on the PATH, and the flags they run Chromium with.
    browser = (ROOT / "tests" / "browser.py").read_text(encoding="utf-8")
    for name in re.findall(r"for name in \(([^)]*)\)", browser)[0].replace('"', "").split(", "):
        assert f"`{name}`" in readme
    assert "--headless --no-sandbox" in readme and "skipped" in readme

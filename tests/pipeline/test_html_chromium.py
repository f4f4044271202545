"""The HTML reports in headless Chromium: they render, show what they must, and fetch nothing.

Skipped only when chromium is absent outside CI; on CI (``CI`` set) a missing chromium is
a failure, since ``.ci/run`` installs it.
"""

from __future__ import annotations

import functools
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from browser import (
    chromium_dom,
    chromium_executable,
    chromium_screenshot,
    page_requests,
)
from distpriv.report.html import render_html
from distpriv.util.templates import CSP, fmt_number

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "adult-income.toml"


@pytest.fixture(scope="module", autouse=True)
def chromium():
    if chromium_executable() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed on CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")


@functools.lru_cache(maxsize=1)
def release_report() -> dict:
    """An Adult release through the real pipeline and the --html path (release_page)."""
    from distpriv.pipeline import run_release
    from distpriv.report.html import release_page

    public, _ = release_page(run_release(CONFIG, insecure_seed=7), epsilons=(0.5, 2.0))
    return public


@functools.lru_cache(maxsize=1)
def audit_report() -> dict:
    from distpriv.pipeline import run_audit

    return dict(run_audit(CONFIG, mechanisms=["daum"], repetitions=1, seed=3).public)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.metas: list[dict] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "svg"):
            self._skip += 1
        if tag == "meta":
            self.metas.append(dict(attrs))

    def handle_endtag(self, tag):
        if tag in ("style", "svg"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


class _SvgText(HTMLParser):
    """The text Chromium renders inside the figure's <svg> (labels are SVG text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._svg = 0
        self._style = 0

    def handle_starttag(self, tag, attrs):
        self._svg += tag == "svg"
        self._style += tag == "style"

    def handle_endtag(self, tag):
        self._svg -= tag == "svg"
        self._style -= tag == "style"

    def handle_data(self, data):
        if self._svg and not self._style and data.strip():
            self.parts.append(data.strip())


def svg_text(dom: str) -> list[str]:
    p = _SvgText()
    p.feed(dom)
    return p.parts


def dom_text(dom: str) -> tuple[str, list[dict]]:
    p = _Text()
    p.feed(dom)
    return " ".join(" ".join(p.parts).split()), p.metas


def not_blank(png: Path) -> None:
    import matplotlib.image

    img = np.asarray(matplotlib.image.imread(png), dtype=float)[..., :3]
    gray = img.mean(axis=2)
    assert gray.shape[0] > 500 and gray.shape[1] > 500
    # A blank page is one colour: real text, tables and a figure give variance and a
    # fair share of non-background pixels.
    assert gray.std() > 0.05, f"screenshot looks blank (pixel sd {gray.std():.4f})"
    assert (gray < 0.9).mean() > 0.01


def render(tmp_path: Path, report: dict, name: str) -> Path:
    path = tmp_path / f"{name}.html"
    path.write_text(render_html(report), encoding="utf-8")
    return path


def guarantee_text(g: dict) -> str:
    eps, dlt = (re.sub(r"<[^>]+>", "", fmt_number(g[k])) for k in ("epsilon", "delta"))
    return f"(ε = {eps}, δ = {dlt})-{g['notion']}"


def test_release_report_in_chromium(tmp_path):
    report = release_report()
    page = render(tmp_path, report, "release")
    png = chromium_screenshot(page, tmp_path / "release.png", width=1000, height=2400)
    not_blank(png)
    text, metas = dom_text(chromium_dom(page))
    assert guarantee_text(report["guarantee"]) in text
    for s in report["statistics"]:
        assert s["name"] in text
        assert re.sub(r"<[^>]+>", "", fmt_number(s["value"], 5)) in text
        assert re.sub(r"<[^>]+>", "", fmt_number(s["noise_sd"], 3)) in text
    assert "Privacy against accuracy" in text and "Provenance" in text
    assert {"http-equiv": "Content-Security-Policy", "content": CSP} in metas
    # No raw mathtext anywhere in what Chromium renders: the figure's
    # tick labels were "$\\mathdefault{10^{4}}$" (the check can fail: it did).
    dom = chromium_dom(page)
    figure = svg_text(dom)
    assert any("expected error" in t for t in figure)  # the figure's text is there
    assert any(re.fullmatch(r"10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+", t) for t in figure)  # plain ticks
    assert not [t for t in figure if "$" in t or "\\" in t]
    assert "mathdefault" not in dom and "mathdefault" not in text
    # The fingerprints say what they are: keyed HMACs, not plain SHA-256.
    assert "fingerprint (HMAC-SHA-256, keyed)" in text and "(SHA-256)" not in text


def test_audit_report_in_chromium(tmp_path):
    report = audit_report()
    page = render(tmp_path, report, "audit")
    png = chromium_screenshot(page, tmp_path / "audit.png", width=900, height=1600)
    not_blank(png)
    text, _ = dom_text(chromium_dom(page))
    daum = next(m for m in report["mechanisms"] if m["mechanism"] == "daum")
    assert f"Claimed: (ε = {fmt_number(daum['claimed_epsilon'])}" in text
    assert f"verdict: {daum['verdict']}" in text
    for a in daum["attacks"]:
        assert a["attack"] in text and fmt_number(a["accuracy"], 3) in text
    assert fmt_number(daum["epsilon_lower_bound"], 3) in text


def test_reports_make_no_network_request(tmp_path):
    for name, report in (("release", release_report()), ("audit", audit_report())):
        page = render(tmp_path, report, name)
        html = page.read_text(encoding="utf-8")
        _, metas = dom_text(html)
        assert {"http-equiv": "Content-Security-Policy", "content": CSP} in metas
        assert not re.search(r"(?:https?|wss?)://", html)
        log = tmp_path / f"{name}-net.json"
        chromium_dom(page, net_log=log)
        assert page_requests(log) == []
    # The check can fail: a page with an external image (and no CSP) is caught.
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><p>x</p><img src="http://127.0.0.1:9/x.png">')
    chromium_dom(leaky, net_log=tmp_path / "leaky.json")
    assert page_requests(tmp_path / "leaky.json") == ["http://127.0.0.1:9/x.png"]
    # ... and the same page under our CSP fetches nothing.
    guarded = tmp_path / "guarded.html"
    guarded.write_text(
        f'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<p>x</p><img src="http://127.0.0.1:9/x.png">'
    )
    chromium_dom(guarded, net_log=tmp_path / "guarded.json")
    assert page_requests(tmp_path / "guarded.json") == []

"""Headless Chromium for the HTML reports: a screenshot, the rendered DOM, the page's requests.

A test helper, outside the package: used by the report tests and by
``docs/make_report_png.py`` (the README's screenshot, which loads this file by path), so the
picture in the README comes from the same path the tests check. Needs the ``chromium``
executable (Debian package ``chromium``); nothing here is needed to *produce* a report.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from distpriv.errors import ParameterError

__all__ = ["chromium_dom", "chromium_executable", "chromium_screenshot", "page_requests"]

_NETWORK_SCHEMES = ("http://", "https://", "ws://", "wss://")
# Chromium's own background traffic (component updates, time, sign-in) is initiated by
# the browser, which the net log records as "not an origin"; the page's requests carry
# the page's origin ("null" for a file:// page).
_BROWSER_INITIATED = "not an origin"
_TIMEOUT = 120.0


def chromium_executable() -> str | None:
    """Path of ``chromium`` (or ``chromium-browser``), or ``None`` when not installed."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], *, profile: Path) -> subprocess.CompletedProcess[str]:
    exe = chromium_executable()
    if exe is None:
        raise ParameterError("chromium is not installed (Debian: apt-get install chromium)")
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",  # CI runs as root, where the sandbox cannot start
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=_TIMEOUT, check=True, stdin=subprocess.DEVNULL
    )


def _url(path: str | Path) -> str:
    p = Path(path).resolve()
    if not p.is_file():
        raise ParameterError(f"html file {str(path)!r} does not exist")
    return p.as_uri()


def chromium_screenshot(
    html: str | Path, png: str | Path, *, width: int = 1000, height: int = 2400
) -> Path:
    """Render ``html`` in headless Chromium and save a ``width`` × ``height`` PNG."""
    out = Path(png).resolve()
    with tempfile.TemporaryDirectory(prefix="distpriv-chromium-") as profile:
        _run(
            [f"--screenshot={out}", f"--window-size={width},{height}", _url(html)],
            profile=Path(profile),
        )
    if not out.is_file():
        raise ParameterError(f"chromium wrote no screenshot to {str(out)!r}")
    return out


def chromium_dom(html: str | Path, *, net_log: str | Path | None = None) -> str:
    """The DOM after Chromium loaded ``html`` (``--dump-dom``); optionally log the network."""
    extra = [] if net_log is None else [f"--log-net-log={Path(net_log).resolve()}"]
    with tempfile.TemporaryDirectory(prefix="distpriv-chromium-") as profile:
        done = _run([*extra, "--dump-dom", _url(html)], profile=Path(profile))
    return done.stdout


def _load_net_log(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8").rstrip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        # A log cut short (browser exit before the footer) ends with "…},": close it.
        return json.loads(text.rstrip(",") + "]}")


def page_requests(net_log: str | Path) -> list[str]:
    """Network URLs (http, https, ws, wss) the *page* asked for, from a Chromium net log.

    Every URL in any event counts, except those of requests the browser starts on its own
    (initiator "not an origin"): they happen with or without the page.
    """
    log = _load_net_log(Path(net_log))
    seen: set[str] = set()
    browser: set[str] = set()
    for event in log.get("events", []):
        params = event.get("params") or {}
        url = params.get("url")
        if not isinstance(url, str) or not url.lower().startswith(_NETWORK_SCHEMES):
            continue
        seen.add(url)
        if params.get("initiator") == _BROWSER_INITIATED:
            browser.add(url)
    # Other events of a request (stream jobs, CORS) repeat its URL without an initiator.
    return sorted(seen - browser)

"""The curator's numbers on the clinic case (the price shown before releasing).

examples/clinic: scikit-learn's bundled breast-cancer table (569 patients, no download),
four correlated statistics of a 100-patient cohort, hiding whether 30 % or 45 % of the
tumours are malignant, mechanism auto. ``distpriv verify`` must print the price table with
no published noise drawn, and its numbers must agree with an independent recomputation:
the moments from pandas by hand (stratified i.i.d. draws: k malignant rows of 100), the
grid of each statistic from the CSV's decimals, and every re-calibration done directly with
the library on models rebuilt from the data (not the price module's slicing).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from cli_helpers import one_line_error, run
from distpriv import cli
from distpriv.central import CalibratedMechanism, mechanism_info
from distpriv.modeling import Query, model_query
from distpriv.pipeline.report import PRIVATE_BANNER
from distpriv.util.templates import CSP, fmt_number
from support import quiet

ROOT = Path(__file__).resolve().parents[2]
CLINIC = ROOT / "examples" / "clinic"
STATS = {
    "avg_radius": "avg(radius)",
    "avg_texture": "avg(texture)",
    "avg_area": "avg(area)",
    "n_large": "count_if(area > 700)",
}
SECRET = dp.ProportionSecret("malignant = 1", [0.30, 0.45])
EPS, DELTA = 1.0, 1e-3


class _Events:
    """A stdout that records its writes in one list with the noise draws, in order."""

    def __init__(self, events: list) -> None:
        self.events = events

    def write(self, text: str) -> int:
        self.events.append(("stdout", text))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """``distpriv verify examples/clinic/clinic.toml --html price.html`` once, with every
    way of drawing published noise recorded (the secure sampler, Mechanism.release) and
    stdout recorded in the same event list; the sequential data check at 3,000 / 6,000
    datasets per value (the price does not depend on it)."""
    import distpriv.noise as noise_module
    import distpriv.pipeline as pipeline
    import distpriv.pipeline.commands.verify as verify_command

    folder = tmp_path_factory.mktemp("clinic")
    for name in ("clinic.toml", "clinic.csv"):
        shutil.copy(CLINIC / name, folder / name)
    events: list = []
    outcomes = []

    def drawn(name):
        def record(*args, **kwargs):
            events.append(("noise", name))
            raise AssertionError(f"verify drew published noise ({name})")

        return record

    real = pipeline.run_verify

    def spy(*args, **kwargs):  # the command imports run_verify from distpriv.pipeline
        outcomes.append(real(*args, **kwargs))
        return outcomes[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(verify_command, "VERIFY_SAMPLES", 3000)
        mp.setattr(verify_command, "VERIFY_MAX_SAMPLES", 6000)
        mp.setattr(CalibratedMechanism, "release", drawn("release"))
        mp.setattr(noise_module, "secure_sample", drawn("secure_sample"))
        mp.setattr(noise_module, "secure_add", drawn("secure_add"))
        mp.setattr(pipeline, "run_verify", spy)
        mp.setattr(sys, "stdout", _Events(events))
        page = folder / "price.html"
        status = cli.main(["verify", str(folder / "clinic.toml"), "--html", str(page)])
    (outcome,) = outcomes
    return {"status": status, "events": events, "outcome": outcome, "page": page}


def test_clinic_csv_is_what_make_data_writes():
    spec = importlib.util.spec_from_file_location("make_clinic", CLINIC / "make_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    want = mod.clinic_table()
    got = pd.read_csv(CLINIC / "clinic.csv")
    assert len(got) == 569 and got["malignant"].sum() == 212
    pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)


def test_verify_prints_the_price_table_and_draws_no_noise(verified):
    assert verified["status"] in (0, 1)
    events = verified["events"]
    assert not [e for e in events if e[0] == "noise"]  # no published noise, at any point
    text = "".join(t for kind, t in events if kind == "stdout")
    head = text.index("price per statistic (no noise drawn)")
    # the table (every statistic, both tables), then the guarantee, then the data check
    assert head < text.index("what would change it") < text.index("guarantee:")
    assert text.index("guarantee:") < text.index("data-level check")
    for name in STATS:
        assert head < text.index(name, head) < text.index("guarantee:")
    for col in ("noise/spread", "gap across secret", "premise x", "drop saves others"):
        assert col in text
    # The public part (what --out writes) carries no price.
    public = verified["outcome"].public
    assert "price" not in public and "noise_to_spread" not in json.dumps(public)


def _decimals(col: pd.Series) -> int:
    """Digits after the point in the CSV's text of a column (its grid)."""
    text = col.astype(str)
    return int(text.str.partition(".")[2].str.rstrip("0").str.len().max())


@pytest.fixture(scope="module")
def direct(verified):
    """The clinic's model rebuilt from the CSV by the library, its lattice from the CSV's
    decimals, and the mechanism ``auto`` chose calibrated directly with and without the
    population layer."""
    name = verified["outcome"].private["price"]["mechanism"]
    frame = pd.read_csv(CLINIC / "clinic.csv")
    model = model_query(frame, Query(STATS), SECRET, subset_size=100, method="analytic")
    n = 100
    lattice = np.array([10.0 ** -_decimals(frame[c]) / n for c in ("radius", "texture", "area")])
    lattice = np.append(lattice, 1.0)  # a count moves in steps of 1
    # The grid is an option of the floored mechanisms only (optimal-g has none).
    floored = "lattice" in mechanism_info(name).options
    kw = {"epsilon": EPS, "delta": DELTA} | ({"lattice": lattice} if floored else {})
    full = quiet(dp.calibrate, name, model, **kw)
    plain = quiet(dp.calibrate, name, model, beta=None, **kw)
    return {
        "name": name,
        "frame": frame,
        "model": model,
        "lattice": lattice,
        "grid": (lambda keep: {"lattice": lattice[keep]}) if floored else (lambda keep: {}),
        "full": full,
        "plain": plain,
    }


def test_price_numbers_against_an_independent_recomputation(verified, direct):
    outcome = verified["outcome"]
    price = outcome.private["price"]
    rows = {r["statistic"]: r for r in price["statistics"]}
    assert list(rows) == list(STATS)
    # optimal-g and optimal-g-full publish the same noise here (to the scale search's
    # rounding); auto names the first of such a tie in the registry's order.
    assert outcome.public["mechanism"]["name"] == price["mechanism"] == direct["name"]
    assert direct["name"] in ("optimal-g", "optimal-g-full")
    # Moments by hand: k = 30 or 45 malignant rows of 100, i.i.d. within each stratum,
    # sample variances (ddof = 1) of the modelling table's strata.
    frame = direct["frame"]
    mal, ben = frame[frame.malignant == 1], frame[frame.malignant == 0]
    means, variances = [], []
    for k in (30, 45):
        mu, var = [], []
        for col in ("radius", "texture", "area"):
            mu.append((k * mal[col].mean() + (100 - k) * ben[col].mean()) / 100)
            var.append((k * mal[col].var() + (100 - k) * ben[col].var()) / 100**2)
        im, ib = (mal.area > 700).astype(float), (ben.area > 700).astype(float)
        mu.append(k * im.mean() + (100 - k) * ib.mean())
        var.append(k * im.var() + (100 - k) * ib.var())
        means.append(mu)
        variances.append(var)
    means, variances = np.array(means), np.array(variances)
    for i, name in enumerate(STATS):
        r = rows[name]
        assert r["value"] == pytest.approx(means[:, i].mean(), rel=1e-9)
        assert r["secret_gap"] == pytest.approx(abs(means[1, i] - means[0, i]), rel=1e-9)
        assert r["spread"] == pytest.approx(np.sqrt(variances[:, i].mean()), rel=1e-9)
        ratio = variances[:, i].max() / variances[:, i].min()
        assert r["variance_ratio"] == pytest.approx(ratio, rel=1e-9)
    # The noise: the library's own calibration on the rebuilt model and grid, with and
    # without the population layer; the premise factor is the ratio of the two.
    sd = np.sqrt(np.diag(direct["full"].noise_covariance))
    published = np.array(outcome.public["mechanism"]["noise_covariance"])  # what --out says
    assert np.sqrt(np.diag(published)) == pytest.approx(sd, rel=1e-6)
    sd_plain = np.sqrt(np.diag(direct["plain"].noise_covariance))
    for i, name in enumerate(STATS):
        r = rows[name]
        assert r["noise_sd"] == pytest.approx(sd[i], rel=1e-6)
        assert r["noise_to_spread"] == pytest.approx(sd[i] / r["spread"], rel=1e-6)
        assert r["noise_sd_without_population"] == pytest.approx(sd_plain[i], rel=1e-6)
        assert r["population_premise_factor"] == pytest.approx(sd[i] / sd_plain[i], rel=1e-6)
        assert r["dominated_by_noise"] == (sd[i] >= r["spread"])
    assert price["mse_without_population"] == pytest.approx(direct["plain"].mse(), rel=1e-6)
    # R² by least squares on the pooled covariance of the hand moments' correlation: the
    # full covariance (cross terms) comes from the pandas strata too.
    cross = []
    for k in (30, 45):
        cols = pd.DataFrame(
            {c: frame[c] for c in ("radius", "texture", "area")} | {"large": frame.area > 700}
        ).astype(float)
        scale = np.array([1 / 100, 1 / 100, 1 / 100, 1.0])
        cm = cols[frame.malignant == 1].cov().to_numpy()
        cb = cols[frame.malignant == 0].cov().to_numpy()
        cross.append(np.outer(scale, scale) * (k * cm + (100 - k) * cb))
    pooled = np.mean(cross, axis=0)
    for i, name in enumerate(STATS):
        rest = [j for j in range(4) if j != i]
        coef = np.linalg.solve(pooled[np.ix_(rest, rest)], pooled[rest, i])
        r2 = pooled[i, rest] @ coef / pooled[i, i]
        assert rows[name]["r_squared"] == pytest.approx(r2, abs=1e-9)
        assert rows[name]["nearly_collinear"] == (r2 >= 0.9)
    # radius and area of the same tumours: nearly collinear, and flagged.
    assert rows["avg_radius"]["nearly_collinear"] and rows["avg_area"]["nearly_collinear"]


def test_drop_and_weight_columns_against_direct_calibrations(verified, direct):
    rows = {r["statistic"]: r for r in verified["outcome"].private["price"]["statistics"]}
    sd2 = np.diag(direct["full"].noise_covariance)
    # Dropping avg_area: the model rebuilt from the data on the other three statistics.
    keep = [0, 1, 3]
    three = model_query(
        direct["frame"],
        Query({k: v for k, v in STATS.items() if k != "avg_area"}),
        SECRET,
        subset_size=100,
        method="analytic",
    )
    sub = quiet(
        dp.calibrate, direct["name"], three, epsilon=EPS, delta=DELTA, **direct["grid"](keep)
    )
    want = 1.0 - np.trace(sub.noise_covariance) / sd2[keep].sum()
    assert rows["avg_area"]["drop_saves_others"] == pytest.approx(want, abs=1e-6)
    # (Under the papers' E||Z||^2 avg_area's units carried 96 % of the others' noise; the
    # default objective weighs each statistic by its own spread, and it no longer does.)
    # The weight probe: avg_radius's weight 10 times the default's 1/v_k, calibrated directly
    # (v_k: each statistic's sampling variance, computed here).
    v = np.mean([np.diag(c) for c in direct["model"].covariances], axis=0)
    heavy = quiet(
        dp.calibrate,
        direct["name"],
        direct["model"],
        epsilon=EPS,
        delta=DELTA,
        weights=np.array([10.0, 1.0, 1.0, 1.0]) / v,
        **direct["grid"](slice(None)),
    )
    got = rows["avg_radius"]["noise_sd_at_weight_x10"]
    assert got == pytest.approx(np.sqrt(heavy.noise_covariance[0, 0]), rel=1e-6)


def test_the_report_says_whether_weights_move_the_clinic_noise(verified, direct):
    price = verified["outcome"].private["price"]
    rows = price["statistics"]
    effects = [r["weight_effect"] for r in rows]
    assert all(e is not None for e in effects)
    # Each effect is the probe's sd against the noise sd (both recomputed above); the line
    # names the statistic a 10x weight moves most, by the measured amount. (Under the
    # papers' E||Z||^2, 61 % of E||Z||^2 was isotropic noise set by avg_area's units and no
    # weight moved any noise by 5 %: the line then said why.)
    for r, e in zip(rows, effects, strict=True):
        assert e == pytest.approx(1.0 - r["noise_sd_at_weight_x10"] / r["noise_sd"], abs=1e-12)
    best = max(rows, key=lambda r: r["weight_effect"])
    if best["weight_effect"] >= 0.05:
        assert price["weights"].startswith(f"weights move the noise of {direct['name']}")
        cut = (
            f"on {best['statistic']} alone cuts its noise sd by {100 * best['weight_effect']:.0f} %"
        )
        assert cut in price["weights"]
    else:
        assert price["weights"].startswith(f"weights do not move the noise of {direct['name']}")
    cov = direct["full"].noise_covariance
    share = 4 * np.linalg.eigvalsh(cov)[0] / np.trace(cov)
    assert price["isotropic_share"] == pytest.approx(share, rel=1e-6)


def test_dominated_lines_say_which_yardstick(verified):
    price = verified["outcome"].private["price"]
    for r in price["statistics"]:
        lines = [x for x in price["lines"] if x.startswith(r["statistic"] + ": the noise")]
        assert len(lines) == int(r["dominated_by_noise"])
        if not lines:
            continue
        (line,) = lines
        assert f"{r['noise_to_spread']:.3g} times the statistic's own spread" in line
        if r["noise_sd"] >= r["secret_gap"]:
            assert f"{r['noise_to_gap']:.3g} times its spread across the secret's values" in line
        else:
            assert "below its spread across the secret's values" in line
        assert ("times its typical value" in line) == (r["noise_sd"] >= abs(r["value"]))


# -- the PRIVATE page: distpriv verify --html -------------------------------------------


class _PageText(HTMLParser):
    """The text a browser shows (style skipped), and the meta tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.metas: list[dict] = []
        self._style = 0

    def handle_starttag(self, tag, attrs):
        self._style += tag == "style"
        if tag == "meta":
            self.metas.append(dict(attrs))

    def handle_endtag(self, tag):
        self._style -= tag == "style"

    def handle_data(self, data):
        if not self._style:
            self.parts.append(data)


def page_text(html: str) -> tuple[str, list[dict]]:
    p = _PageText()
    p.feed(html)
    return " ".join(" ".join(p.parts).split()), p.metas


def _shown(x) -> str:
    """A number as the page shows it (fmt_number, its ×10<sup>k</sup> markup as text)."""
    return re.sub(r"<[^>]+>", "", fmt_number(x))


def check_private_page(text: str, metas: list[dict], price: dict) -> None:
    """What the curator's page must show: PRIVATE first and last, every statistic's
    numbers, every plain-language line, the weights' verdict; loads nothing."""
    assert {"http-equiv": "Content-Security-Policy", "content": CSP} in metas
    assert text.startswith("PRIVATE — ")  # the <title>, then the page's first line
    assert "distpriv PRIVATE dry run" in text[:300]
    assert PRIVATE_BANNER in text[:600] and PRIVATE_BANNER in text[-700:]
    for r in price["statistics"]:
        row = text[text.index(r["statistic"], text.index("The price of each statistic")) :]
        for key in ("value", "noise_sd", "spread", "secret_gap"):
            assert _shown(r[key]) in row[:400], (r["statistic"], key)
        assert _shown(r["noise_sd_without_population"]) in row[:400]
    for line in price["lines"]:
        assert " ".join(line.split()) in text
    assert price["weights"] in text


def test_verify_html_is_the_private_page(verified):
    html = verified["page"].read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"(?:https?|wss?)://", html)
    text, metas = page_text(html)
    check_private_page(text, metas, verified["outcome"].private["price"])
    # the dry run's guarantee and check are there too
    g = verified["outcome"].public["guarantee"]
    assert f"(ε = {_shown(g['epsilon'])}, δ = {_shown(g['delta'])})" in text
    assert "Check on the data" in text and "How the mechanism was chosen" in text


def test_verify_page_in_chromium(verified, tmp_path):
    from browser import chromium_dom, chromium_executable, page_requests

    if chromium_executable() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed on CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    log = tmp_path / "net.json"
    text, metas = page_text(chromium_dom(verified["page"], net_log=log))
    check_private_page(text, metas, verified["outcome"].private["price"])
    assert page_requests(log) == []


def test_verify_page_escapes_statistic_names(verified):
    from distpriv.pipeline.outcomes import VerifyOutcome
    from distpriv.report.verify_page import verify_page

    out = verified["outcome"]
    evil = "<img src=x onerror=alert(1)>"
    price = json.loads(json.dumps(out.private["price"]))
    price["statistics"][0]["statistic"] = evil
    price["lines"] = [f"{evil}: the noise"]
    public = dict(out.public, title=f"{evil} & co", statistics=[evil, "b", "c", "d"])
    html = verify_page(VerifyOutcome(public, dict(out.private, price=price), ()))
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    with pytest.raises(dp.ParameterError, match="price"):
        verify_page(VerifyOutcome(public, {"kind": "verification-diagnostics"}, ()))


@pytest.fixture
def stubbed(verified, monkeypatch, tmp_path):
    """``distpriv verify`` answering at once with the clinic's outcome (no re-run)."""
    import distpriv.pipeline as pipeline

    calls = []

    def fake(config, **kwargs):
        calls.append(config)
        return verified["outcome"]

    monkeypatch.setattr(pipeline, "run_verify", fake)
    return {"calls": calls, "config": tmp_path / "clinic.toml"}


def test_verify_html_refusals_write_nothing(stubbed, tmp_path, capsys):
    page, out = tmp_path / "p.html", tmp_path / "o.json"
    # an existing page: refused before any work, the file untouched
    page.write_text("mine")
    status, _, err = run(["verify", stubbed["config"], "--html", page], capsys)
    one_line_error(status, err, "--html", "already exists")
    assert page.read_text() == "mine" and not stubbed["calls"]
    page.unlink()
    # --out and --html on one file: refused before any work
    status, _, err = run(["verify", stubbed["config"], "--html", page, "--out", page], capsys)
    one_line_error(status, err, "--out and --html must be different files")
    assert not page.exists() and not stubbed["calls"]
    # both, fine: the public report has no price, the page has it
    status, _, err = run(["verify", stubbed["config"], "--html", page, "--out", out], capsys)
    assert status in (0, 1), err
    assert "price" not in json.loads(out.read_text()) and "PRIVATE" in page.read_text()


@pytest.mark.parametrize("when", ["rendering", "writing"])
def test_verify_html_interrupted_leaves_no_file(stubbed, tmp_path, capsys, monkeypatch, when):
    import distpriv.report.output as output
    import distpriv.report.verify_page as verify_page

    page, out = tmp_path / "p.html", tmp_path / "o.json"
    if when == "rendering":

        def stop(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(verify_page, "verify_page", stop)
    else:  # Ctrl-C between the two renames: the first file is taken back
        renames = []
        real = os.replace

        def second_stops(src, dst):
            renames.append(dst)
            if len(renames) == 2:
                raise KeyboardInterrupt
            real(src, dst)

        monkeypatch.setattr(output.os, "replace", second_stops)
    status, _, err = run(["verify", stubbed["config"], "--html", page, "--out", out], capsys)
    assert status == 130 and err == "distpriv: interrupted; nothing was written\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []

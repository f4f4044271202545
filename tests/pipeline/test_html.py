"""render_html on contract-shaped reports, and the notebook summaries (_repr_html_)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from distpriv import GaussianQueryModel, calibrate
from distpriv.errors import AssumptionWarning, ParameterError, ParameterTypeError
from distpriv.pipeline.utility import utility_curve
from distpriv.report.html import render_html, utility_figure_svg
from distpriv.util.templates import CSP, fmt_number


class _Page(HTMLParser):
    """Text, tags and attributes of an HTML document (stdlib parser, no browser)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    @property
    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


@pytest.fixture(scope="module")
def model():
    # Equal covariances: every Gaussian mechanism's assumptions hold (Chen Thm 4.5 example).
    return GaussianQueryModel(
        [[100.0, 101.0], [99.0, 102.0]],
        [[22.0, -6.0], [-6.0, 13.0]],
        labels=["0.45", "0.55"],
        statistics=["avg_age", "n_female"],
    )


def release_report(mech, value, *, title="Adult <b>income</b>", utility=None, choice=None):
    sd = np.sqrt(np.diag(mech.noise_covariance))
    return {
        "kind": "release",
        "title": title,
        "secret": {
            "description": "the share of rows with income = '>50K'",
            "values": [0.45, 0.55],
            "pairs": [[0.45, 0.55]],
        },
        "statistics": [
            {
                "name": n,
                "expression": f"avg({n})",
                "value": float(v),
                "noise_sd": float(s),
                "interval95": [float(v - 1.96 * s), float(v + 1.96 * s)],
            }
            for n, v, s in zip(mech.statistics, value, sd, strict=True)
        ],
        "mechanism": {"name": mech.name, "summary": "s", "theorem": "t", "options": {}},
        "guarantee": mech.guarantee.to_dict(),
        "verification": None,
        "ledger": {"composed": {"epsilon": 1.7, "delta": 2e-3}, "budget": None, "n_releases": 2},
        "choice": choice,
        "provenance": {
            "version": "9.9.9",
            "time_utc": "2026-11-23T17:00:00Z",
            "data_sha256": "a" * 64,
            "model_data_sha256": "b" * 64,
            "sampler": "test sampler",
            "secure": False,
            "seed": 5,
        },
        "utility": utility,
    }


def test_release_page_content(model):
    mech = calibrate("eigm", model, epsilon=1.0, delta=1e-3)
    rep = json.loads(json.dumps(release_report(mech, [38.25, 31.5])))  # as saved on disk
    html = render_html(rep)
    page = parse(html)
    words = page.words
    # CSP meta, no script, no external reference of any kind.
    metas = [a for t, a in page.tags if t == "meta" and a.get("http-equiv")]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": CSP}]
    assert not [t for t, _ in page.tags if t in ("script", "link", "iframe", "img")]
    assert not re.search(r"(?:https?|wss?)://", html)
    # The user's title is escaped, not markup.
    assert "<b>income</b>" not in html and "Adult <b>income</b>" in words
    g = mech.guarantee
    assert f"(ε = {g.epsilon:.4g}, δ = 0.001)-distribution privacy" in words
    assert "2.72 times" in words  # e^ε in words
    for s in rep["statistics"]:
        assert s["name"] in words
        assert f"{s['value']:.5g}" in words
        lo, hi = s["interval95"]
        assert f"{lo:.5g} to {hi:.5g}" in words
    for a in g.assumptions:
        assert a.name in words
    assert "(ε = 1.7, δ = 0.002) for all of them together" in words  # ledger
    assert "a" * 64 in words and "test sampler" in words and "9.9.9" in words
    assert "do not publish" in words  # an insecure sampler is flagged
    assert "Terms used on this page" in words


def test_release_page_with_choice_and_figure(model):
    from distpriv.pipeline.stages.calibrate import choose_mechanism

    choice = choose_mechanism(model, epsilon=1.0, delta=1e-3)
    utility = utility_curve(model, delta=1e-3, epsilon=1.0, chosen=choice.name, epsilons=(0.5, 2.0))
    rep = release_report(choice.mechanism, [38.0, 31.0], choice=choice.rows(), utility=utility)
    html = render_html(rep)
    words = parse(html).words
    assert f"{choice.name} ← chosen" in words
    for row in choice.rows():
        assert row["mechanism"] in words
    # The figure is inline SVG with the chosen mechanism in its legend.
    assert html.count("<svg") == 1 and f"{choice.name} (chosen)" in html
    assert "requested ε = 1" in html
    assert not re.search(r"(?:https?|wss?)://", html)  # not even an SVG namespace


def test_utility_curve_matches_calibration(model):
    u = utility_curve(model, delta=1e-3, epsilon=0.7, mechanisms=["eigm", "expm-l", "apmqm"])
    assert u["epsilons"] == [0.1, 0.2, 0.5, 0.7, 1.0, 2.0, 5.0, 10.0]
    curves = {c["mechanism"]: c for c in u["curves"]}
    assert set(curves) == {"eigm", "expm-l"}
    assert (
        u["skipped"][0]["mechanism"] == "apmqm"
        and "AttributeNetworkModel" in (u["skipped"][0]["reason"])
    )
    # The default criterion: Σ Var(Z_k)/v_k, v_k each statistic's sampling variance.
    v = np.mean([np.diag(c) for c in model.covariances], axis=0)
    for name, c in curves.items():
        for eps, err in zip(u["epsilons"], c["errors"], strict=True):
            mech = calibrate(name, model, epsilon=eps, delta=1e-3)
            want = np.sqrt(np.sum(np.diag(mech.noise_covariance) / v))
            assert err == pytest.approx(want, rel=1e-9)
        # More privacy costs more noise.
        assert all(a >= b for a, b in zip(c["errors"], c["errors"][1:], strict=False))
    # The papers' E||Z||^2 when asked for.
    l2 = utility_curve(model, delta=1e-3, epsilons=(0.5,), mechanisms=["eigm"], objective="l2")
    mech = calibrate("eigm", model, epsilon=0.5, delta=1e-3)
    assert l2["curves"][0]["errors"][0] == pytest.approx(np.sqrt(np.trace(mech.noise_covariance)))
    svg = utility_figure_svg(u)
    assert svg.startswith("<svg") and "eigm" in svg and "expm-l" in svg


def test_render_bad_input(model):
    with pytest.raises(ParameterTypeError, match="report must be a dict"):
        render_html([1, 2])
    with pytest.raises(ParameterError, match=r"report\['kind'\].*'calibration'"):
        render_html({"kind": "calibration"})
    mech = calibrate("eigm", model, epsilon=1.0, delta=1e-3)
    rep = release_report(mech, [1.0, 2.0])
    del rep["guarantee"]
    with pytest.raises(ParameterError, match=r"missing key.*guarantee"):
        render_html(rep)
    with pytest.raises(ParameterError, match="epsilons"):
        utility_curve(model, delta=1e-3, epsilons=[0.5, -1.0])


def test_fmt_number():
    assert fmt_number(0.001) == "0.001"
    assert fmt_number(1.5e-7) == "1.5×10<sup>-7</sup>"
    assert fmt_number("inf") == "∞" and fmt_number("-inf") == "−∞"
    assert fmt_number(None) == "n/a" and fmt_number(float("nan")) == "n/a"
    assert fmt_number(2.718281828, 3) == "2.72"


# --- notebook summaries -------------------------------------------------------------------


def _guarantee_text(g) -> str:
    return f"(ε = {fmt_number(g.epsilon)}, δ = {fmt_number(g.delta)})-distribution privacy"


def test_repr_html_mechanism_and_guarantee(model):
    mech = calibrate("daum", model, epsilon=1.0, delta=1e-3)
    for obj in (mech, mech.guarantee):
        page = parse(obj._repr_html_())
        assert _guarantee_text(mech.guarantee) in page.words
        assert mech.guarantee.theorem in page.words
        assert "✓ holds" in page.words  # equal covariances: assumptions verified
    words = parse(mech._repr_html_()).words
    for name, sd in zip(mech.statistics, np.sqrt(np.diag(mech.noise_covariance)), strict=True):
        assert f"{name} {fmt_number(sd)}" in words


@pytest.mark.parametrize("name", ["eigm", "expm-l"])
def test_repr_html_release_report_shows_each_95_interval(name):
    # The 95 % interval of each statistic's noise around the released value (the
    # notebook display left the column empty); reference: scipy's quantiles.
    from scipy import stats

    from distpriv.pipeline import ReleaseReport

    far = GaussianQueryModel(  # means far apart for their spread: noise is needed
        [[100.0, 101.0], [90.0, 112.0]],
        [[22.0, -6.0], [-6.0, 13.0]],
        labels=["0.45", "0.55"],
        statistics=["avg_age", "n_female"],
    )
    mech = calibrate(name, far, epsilon=1.0, delta=1e-3)
    assert np.all(np.diag(mech.noise_covariance) > 1.0)
    true = np.array([100.0, 101.0])
    rel = mech.release(true, rng=7)
    report = ReleaseReport(rel, mech, far, true, n_rows=100)
    words = parse(report._repr_html_()).words
    for k, stat in enumerate(mech.statistics):
        if name == "eigm":  # Gaussian noise: 1.96 sd
            half = stats.norm.ppf(0.975) * np.sqrt(mech.noise_covariance[k, k])
        else:  # one Laplace term of scale b per coordinate: b ln 20
            (comp,) = mech.noise.components
            b = np.abs(comp.basis[k] * comp.scales).max()
            half = stats.laplace.ppf(0.975, scale=b)
        v = rel.value[k]
        shown = f"[{fmt_number(v - half, 5)}, {fmt_number(v + half, 5)}]"
        assert f"{stat} {fmt_number(v, 5)}" in words and shown in words
    assert "not shown ( .diagnostics() )" in words and "private_view" not in words
    assert fmt_number(true[0], 5) not in words  # never the true values


def test_repr_html_release_shows_failed_assumption():
    unequal = GaussianQueryModel(
        [[0.0, 0.0], [1.0, 0.0]], [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 1.0]]]
    )
    with pytest.warns(AssumptionWarning, match="translation"):
        mech = calibrate("expm-l", unequal, epsilon=1.0)
    rel = mech.release([5.0, 6.0], rng=3)
    words = parse(rel._repr_html_()).words
    assert _guarantee_text(rel.guarantee) in words
    assert "✗ fails" in words
    assert f"{rel.statistics[0]} {fmt_number(rel.value[0], 5)}" in words
    fb = rel.guarantee.fallback
    assert (
        fb is not None and f"Without the failed assumptions: (ε = {fmt_number(fb.epsilon)}" in words
    )


def test_repr_html_audit():
    from distpriv.attacks import audit
    from distpriv.datasets import paper_split
    from distpriv.modeling import model_query
    from distpriv.pipeline import ADULT_STATISTICS, INCOME_SECRET

    split = paper_split(rng=0)
    model = model_query(split["modeling"], ADULT_STATISTICS, INCOME_SECRET, subset_size=100)
    report = audit(
        model=model,
        auxiliary=split["auxiliary"],
        test=split["test"],
        query=ADULT_STATISTICS,
        secret=INCOME_SECRET,
        subset_size=100,
        mechanisms=["none", "expm-g"],
        epsilon=1.0,
        delta=1e-3,
        repetitions=1,
        n_shadow=40,
        n_test=40,
        rng=0,
    )
    words = parse(report._repr_html_()).words
    m = report.get("expm-g")
    assert "Audit of 0.45 vs 0.55: 1 repetitions, 40 shadow / 40 test datasets" in words
    assert f"expm-g (ε = {fmt_number(m.epsilon)}, δ = {fmt_number(m.delta)})" in words
    assert f"{fmt_number(m.epsilon_lower, 3)}" in words and m.verdict in words
    best = max(a.accuracy for a in m.attacks)
    assert fmt_number(best, 3) in words

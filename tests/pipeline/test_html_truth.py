"""The report tells the whole truth: warnings on the page and in the status,
plain tick labels, what the fingerprints are, intervals in the notebook summary."""

from __future__ import annotations

import json
import re
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import distpriv as dp
from distpriv.pipeline import run_release
from distpriv.pipeline.report import public_warnings
from distpriv.report.html import plain_tick_label, render_html, utility_figure_svg

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "examples" / "adult-income.toml"
GREEN = '<span class="badge ok">verified</span>'
CAUTION = '<span class="badge caution">verified on the model, with warnings</span>'


@pytest.fixture(scope="module")
def parts():
    from distpriv.datasets import paper_split

    return paper_split(rng=0)


def _small_model_config(tmp_path: Path, parts) -> Path:
    """Adult's release config on a 400-row modelling table: too few rows for n = 100."""
    parts["modeling"].iloc[:400].to_csv(tmp_path / "model.csv", index=False)
    parts["test"].iloc[:100].to_csv(tmp_path / "released.csv", index=False)
    text = ADULT.read_text(encoding="utf-8")
    text = re.sub(r'model = "adult:modeling"', 'model = "model.csv"', text)
    text = re.sub(r'release = "adult:test"', 'release = "released.csv"', text)
    path = tmp_path / "small.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _quiet_release(config, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_release(config, ledger=False, insecure_seed=7, **kw)


def test_warnings_reach_the_page_and_the_status(tmp_path, parts):
    out = _quiet_release(_small_model_config(tmp_path, parts))
    # The private file has the warning with its numbers (rows of the modelling table)...
    private_lines = out.private["warnings"]
    assert any(re.search(r"too few rows \(\d+ rows drawn from the \d+", w) for w in private_lines)
    # ... the public report states it without them.
    kinds = {w["kind"]: w for w in out.public["warnings"]}
    assert "too-few-rows" in kinds
    assert kinds["too-few-rows"]["text"].startswith("The model rests on too few rows")
    assert not re.search(r"\d+ rows drawn", json.dumps(out.public))
    assert out.public["guarantee"]["holds"] is True  # every assumption holds on the model
    page = render_html(out.public)
    assert '<section id="warnings">' in page
    assert kinds["too-few-rows"]["text"] in page
    # The status must not be the clean release's green "verified".
    assert GREEN not in page and CAUTION in page
    # A clean release: no warning, green status.
    clean = _quiet_release(ADULT)
    assert clean.public["warnings"] == [] and clean.private["warnings"] == []
    clean_page = render_html(clean.public)
    assert GREEN in clean_page and CAUTION not in clean_page
    assert '<section id="warnings">' not in clean_page
    # The notebook summary lists them too.
    assert kinds["too-few-rows"]["text"] in out._repr_html_()


def test_public_warnings_keep_data_facts_private():
    items = [
        (
            "the model rests on too few rows (45 rows drawn from the 96 with the property; "
            "want at least 10x): ...",
            "PrivacyLeakWarning",
        ),
        (
            "f_theta is not Gaussian: skewness of 'n' at p=0.55 is 0.135 (5.5 standard errors)",
            "AssumptionWarning",
        ),
        (
            "f_theta is not Gaussian: excess kurtosis of 'm' at p=0.45 is 3.1 (9 standard errors)",
            "AssumptionWarning",
        ),
        (
            "17 of the 100 released rows also appear in the modelling table: ...",
            "PrivacyLeakWarning",
        ),
        ("[data] missing = 'drop' removed 3 of the 100 released rows: ...", "AssumptionWarning"),
        ("daum: the noise covers 1 of 5 directions; the statistics' ...", "PrivacyLeakWarning"),
        (
            "statistic 'a': the noise standard deviation 3 exceeds its declared range [0, 1]: ...",
            "UtilityWarning",
        ),
        ("overflow encountered in exp 12345", "RuntimeWarning"),
    ]
    out = public_warnings(items)
    kinds = [w["kind"] for w in out]
    # The two non-Gaussian warnings become one public sentence; warnings about the released
    # rows (overlap, dropped rows) and unknown ones stay private.
    assert kinds == ["too-few-rows", "not-gaussian", "partial-noise", "noise-exceeds-range"]
    public = json.dumps(out)
    for private in ("45 rows", "96", "0.135", "released rows", "missing", "12345", "overflow"):
        assert private not in public
    # Texts made of public facts only are kept as they are.
    assert out[2]["text"] == items[5][0] and out[3]["text"] == items[6][0]
    # Accuracy warnings do not qualify the guarantee; every other one does.
    assert [w["qualifies_guarantee"] for w in out] == [True, True, True, False]


def test_a_utility_warning_alone_keeps_the_green_status(tmp_path):
    report = json.loads(json.dumps(_quiet_release(ADULT).public))
    report["warnings"] = public_warnings(
        [
            (
                "statistic 'a': the noise standard deviation 3 exceeds its declared range",
                "UtilityWarning",
            )
        ]
    )
    page = render_html(report)
    assert GREEN in page and "exceeds its declared range" in page


@pytest.mark.parametrize(
    ("text", "value", "plain"),
    [
        (r"$\mathdefault{10^{4}}$", 1e4, "10⁴"),
        (r"$\mathdefault{10^{-2}}$", 1e-2, "10⁻²"),
        (r"$\mathdefault{2\times10^{-1}}$", 0.2, "2×10⁻¹"),
        (r"$\mathdefault{10^{0}}$", 1.0, "10⁰"),
        ("", 3.0, ""),
        (r"$\frac{1}{2}$", 0.5, "0.5"),  # anything else that is not plain: %g
    ],
)
def test_plain_tick_label(text, value, plain):
    assert plain_tick_label(text, value) == plain


_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def _svg_texts(svg: str) -> list[str]:
    # svg.fonttype = none: every label is a <text> element, its content the label.
    return [re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<text\b.*?</text>", svg, re.S)]


def test_figure_has_no_mathtext():
    utility = {
        "epsilons": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
        "delta": 1e-3,
        "epsilon": 1.0,
        "chosen": "a",
        "metric": "root expected squared error",
        "curves": [
            {
                "mechanism": "a",
                "errors": [2e4, 9e3, 4e3, 2e3, 900, 400, 200],
                "verified": [True] * 7,
            },
            {"mechanism": "b", "errors": [3, 2.5, 2, 1.5, 1.2, 1.1, 1.0], "verified": [False] * 7},
        ],
    }
    svg = utility_figure_svg(utility)
    texts = _svg_texts(svg)
    assert "$" not in svg and "mathdefault" not in svg
    assert any("expected error" in t for t in texts)
    # The tick labels are powers of ten written plainly, and they read back as numbers
    # spanning the data (1 to 2e4 on the error axis, 0.1 to 10 on the epsilon axis).
    powers = [t for t in texts if re.fullmatch(r"10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+", t)]
    values = sorted(10.0 ** int(t[2:].translate(_DIGITS)) for t in powers)
    assert values[0] <= 0.1 and values[-1] >= 1e4


def _cells(html: str) -> list[list[str]]:
    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.rows: list[list[str]] = []
            self.cell: list[str] | None = None

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.cell = []

        def handle_endtag(self, tag):
            if tag in ("td", "th") and self.cell is not None:
                self.rows[-1].append("".join(self.cell).strip())
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell.append(data)

    p = Rows()
    p.feed(html)
    return p.rows


def test_release_report_repr_html_fills_the_interval_column(parts):
    rng = np.random.default_rng(3)
    data = parts["test"].iloc[rng.choice(len(parts["test"]), 100, replace=False)]
    query = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = dp.release(
            data,
            query,
            dp.ProportionSecret("income = '>50K'", values=[0.45, 0.55]),
            model_data=parts["modeling"],
            mechanism="expm-g",
            epsilon=1.0,
            delta=1e-3,
            rng=0,
        )
    rows = _cells(rep._repr_html_())
    header = next(r for r in rows if "95 % interval" in r)
    col = header.index("95 % interval")
    body = [r for r in rows if r and r[0] in query]
    assert len(body) == 2
    sd = np.sqrt(np.diag(rep.mechanism.noise_covariance))
    for k, r in enumerate(body):
        assert all(c != "" for c in r), r  # no empty cell
        lo, hi = (float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", r[col]))
        # Gaussian noise: released value ± 1.96 sd (5 significant digits on the page).
        value = float(rep.release.value[k])
        assert lo == pytest.approx(value - 1.959963984540054 * sd[k], rel=1e-4)
        assert hi == pytest.approx(value + 1.959963984540054 * sd[k], rel=1e-4)


def test_fingerprints_are_called_what_they_are():
    out = _quiet_release(ADULT)
    prov = out.public["provenance"]
    assert prov["data_sha256"].startswith("hmac-sha256:")
    page = render_html(out.public)
    assert "fingerprint (HMAC-SHA-256, keyed)" in page
    assert "fingerprint (SHA-256)" not in page and "SHA-256 fingerprint" not in page

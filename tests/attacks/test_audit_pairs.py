"""The audit of many pairs of Ψ (attacks/audit_pairs.py): every pair of a
several-attribute secret or a range, shared datasets, the choice of pairs, the CLI.

The release under audit is deliberately under-noised on ONE pair that is not the first:
noise calibrated for a pair 2 rows apart (which needs almost none: the subsets' own spread
hides it) claims (1, 1e-3) for a pair 20 rows apart too. The attacks must flag that pair,
and only it, while the first pair (all the single-pair audit looks at) stays consistent.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import one_line_error, run
from distpriv import ParameterError, calibrate, model_query
from distpriv.attacks import PairsAuditReport, audit_attributes, audit_pairs, choose_pairs
from distpriv.attacks.audit_pairs import AUTO_ALL_LIMIT, parse_pairs
from distpriv.datasets import paper_split
from distpriv.modeling import ProportionSecret, Query, SeveralSecrets
from distpriv.modeling.strata import StratifiedSampler

STATS = Query(
    {
        "avg_education_years": "avg(education_num)",
        "n_never_married": "count_if(marital_status = 'Never-married')",
        "avg_hours_per_week": "avg(hours_per_week)",
    }
)
N = 100
RICH = "income = '>50K'"
FEMALE = "sex = 'Female'"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def parts():
    return paper_split(rng=0)


@pytest.fixture(scope="module")
def weak(parts):
    """expm-g calibrated for the pair 0.30 vs 0.32 only: (1, 1e-3) there, far from it
    for 0.30 vs 0.50."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = model_query(
            parts["modeling"], STATS, ProportionSecret(RICH, [0.3, 0.32]), subset_size=N
        )
        return calibrate("expm-g", small, epsilon=1.0, delta=1e-3)


BROKEN = ProportionSecret(RICH, [0.3, 0.32, 0.5], pairs=[(0.3, 0.32), (0.3, 0.5)])


def _quiet(fn, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(auxiliary=kw.pop("aux"), test=kw.pop("test"), query=STATS, subset_size=N, **kw)


def test_under_noised_non_first_pair_is_flagged(parts, weak):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(parts["modeling"], STATS, BROKEN, subset_size=N)
    common = dict(aux=parts["auxiliary"], test=parts["test"], secret=BROKEN, model=model)
    rep = _quiet(
        audit_pairs, mechanisms=["none", weak], repetitions=2, rng=1, pairs="all", **common
    )
    assert isinstance(rep, PairsAuditReport)
    assert [r.pair for r in rep.reports] == [(0.3, 0.32), (0.3, 0.5)]
    first, second = rep.reports
    # Bonferroni over the two audited pairs.
    assert first.confidence == pytest.approx(0.975) and second.confidence == pytest.approx(0.975)
    assert first.get("expm-g").verdict == "consistent"
    assert second.get("expm-g").verdict == "violated"
    assert second.get("expm-g").epsilon_lower > 1.0
    combined = rep.get("expm-g")
    assert combined.verdict == "violated"
    assert combined.strongest.startswith("0.3 vs 0.5: ")
    # The single-pair audit (each attribute's first pair) misses it: what "first" keeps.
    only = _quiet(audit_pairs, mechanisms=[weak], repetitions=2, rng=1, pairs="first", **common)
    assert [r.pair for r in only.reports] == [(0.3, 0.32)]
    assert only.get("expm-g").verdict == "consistent"
    # "binding" finds the broken pair from the fitted model alone.
    bind = choose_pairs(model.secret, "binding", model=model, noises=[weak.noise_covariance])
    assert bind == [(RICH, [(0.3, 0.5)])]
    d = rep.to_dict()
    (block,) = d["attributes"]
    assert block["pairs_total"] == 2 and block["pairs_audited"] == 2
    assert [p["words"] for p in block["pairs"]] == ["0.3 vs 0.32", "0.3 vs 0.5"]
    assert [m["verdict"] for m in block["pairs"][1]["mechanisms"]] == ["undefended", "violated"]
    json.dumps(d)


def test_several_attributes_every_pair(parts, weak):
    """Each attribute's first pair is fine; the income attribute's second pair is not."""
    secret = SeveralSecrets([ProportionSecret(FEMALE, [0.3, 0.31]), BROKEN])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(parts["modeling"], STATS, secret, subset_size=N)
    ticks = []
    rep = _quiet(
        audit_attributes,
        aux=parts["auxiliary"],
        test=parts["test"],
        secret=secret,
        model=model,
        mechanisms=[weak],
        repetitions=2,
        rng=3,
        progress=lambda d, t: ticks.append((d, t)),
    )
    assert ticks[-1] == (4, 4)  # two attributes, two repetitions each
    assert rep.groups == (0, 1, 1) and rep.totals == (1, 2)
    verdicts = [r.get("expm-g").verdict for r in rep.reports]
    assert verdicts == ["consistent", "consistent", "violated"]
    assert rep.reports[2].labels == ("share[income = '>50K']=0.3", "share[income = '>50K']=0.5")
    assert all(r.confidence == pytest.approx(1 - 0.05 / 3) for r in rep.reports)
    assert rep.get("expm-g", attribute=0).verdict == "consistent"
    assert rep.get("expm-g", attribute=1).verdict == "violated"
    assert rep.get("expm-g").verdict == "violated"


def test_datasets_shared_between_pairs(parts, monkeypatch):
    """Within a repetition, a value's datasets are drawn once for all its pairs."""
    calls = []
    orig = StratifiedSampler.draw

    def counting(self, index, count, rng):
        calls.append((index, count))
        return orig(self, index, count, rng)

    monkeypatch.setattr(StratifiedSampler, "draw", counting)
    secret = ProportionSecret(RICH, [0.3, 0.32, 0.34])  # three pairs over three values
    rep = _quiet(
        audit_pairs,
        aux=parts["auxiliary"],
        test=parts["test"],
        secret=secret,
        mechanisms=["none"],
        repetitions=3,
        rng=0,
        pairs="all",
        likelihood_ratio=False,
    )
    assert len(rep.reports) == 3
    # Per repetition: 3 values x (shadow + test) draws, not 3 pairs x 2 values x 2.
    assert len(calls) == 3 * 3 * 2
    assert sorted(set(calls)) == [(0, 100), (1, 100), (2, 100)]


def test_choose_pairs_on_a_range(parts):
    secret = ProportionSecret(RICH, range=(0.2, 0.4), within=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(parts["modeling"], STATS, secret, subset_size=N)
    psi = list(model.secret.pairs)
    assert len(psi) > AUTO_ALL_LIMIT
    noise = np.eye(3) * 1e-2
    (name, every) = choose_pairs(model.secret, "all")[0]
    assert name == RICH and every == [tuple(p) for p in psi]
    (_, bind) = choose_pairs(model.secret, "binding", model=model, noises=[noise])[0]
    assert len(bind) == 1 and bind[0][1] - bind[0][0] == pytest.approx(0.05)
    (_, five) = choose_pairs(model.secret, 5, model=model, noises=[noise])[0]
    assert len(five) == 5 and bind[0] in five
    assert five[0] == tuple(psi[0]) and five[-1] == tuple(psi[-1])  # spread over Ψ
    (_, auto) = choose_pairs(model.secret, "auto", model=model, noises=[noise])[0]
    assert len(auto) == 8
    assert choose_pairs(model.secret, 10_000)[0][1] == every
    for bad in ("some", 0, -2, 1.5, True, None):
        with pytest.raises(ParameterError, match="pairs must be one of"):
            parse_pairs(bad)
    assert parse_pairs(" 7 ") == 7 and parse_pairs("ALL") == "all"


def _range_config(tmp_path: Path, extra: str = "") -> Path:
    text = (EXAMPLES / "adult-range.toml").read_text().replace('name = "auto"', 'name = "expm-g"')
    path = tmp_path / "range.toml"
    path.write_text(text + "\n[audit]\nn_shadow = 40\nn_test = 40\nseed = 0\n" + extra)
    return path


def test_cli_range_audit_pairs(tmp_path, capsys):
    out, html = tmp_path / "audit.json", tmp_path / "audit.html"
    status, text, err = run(
        ["audit", _range_config(tmp_path), "--repetitions", "1", "--pairs", "3",
         "--out", out, "--html", html],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    report = json.loads(out.read_text())
    (block,) = report["attributes"]
    assert block["pairs_total"] == 190 and block["pairs_audited"] == 3
    assert report["pairs_selection"] == "3"
    assert [m["mechanism"] for m in report["mechanisms"]] == ["none", "expm-g"]
    assert "audit of share[income = '>50K']: 3 of 190 pairs" in text
    assert "Each pair" in html.read_text()


def test_cli_pairs_errors(tmp_path, capsys):
    status, _, err = run(["audit", _range_config(tmp_path), "--pairs", "most"], capsys)
    one_line_error(status, err, "--pairs", "most")
    path = _range_config(tmp_path, 'pairs = "most"\n')
    status, _, err = run(["audit", path, "--out", tmp_path / "a.json"], capsys)
    one_line_error(status, err, "[audit]", "pairs", "most")
    assert not (tmp_path / "a.json").exists()


def test_event_and_mean_secrets_every_pair(parts):
    """Every pair of an event secret (indices of events) and of a mean secret, each with its
    own labels; the undefended release is told apart more easily for the farther pair."""
    from distpriv.modeling import EventSecret, MeanSecret

    events = EventSecret(RICH, events=[(0.15, 0.2), (0.25, 0.3), (0.4, 0.45)])
    rep = _quiet(
        audit_pairs,
        aux=parts["auxiliary"],
        test=parts["test"],
        secret=events,
        mechanisms=["none"],
        repetitions=2,
        rng=5,
        pairs="all",
    )
    assert [r.pair for r in rep.reports] == [(0.0, 1.0), (0.0, 2.0), (1.0, 2.0)]
    assert rep.reports[1].labels == (
        "the share of rows with income = '>50K' in [0.15, 0.2]",
        "the share of rows with income = '>50K' in [0.4, 0.45]",
    )
    acc = [max(a.accuracy for a in r.get("none").attacks) for r in rep.reports]
    assert acc[1] > max(acc[0], acc[2])
    means = MeanSecret("age", [36, 38, 40])
    rep = _quiet(
        audit_pairs,
        aux=parts["auxiliary"],
        test=parts["test"],
        secret=means,
        mechanisms=["none"],
        repetitions=1,
        n_shadow=60,
        n_test=60,
        rng=5,
        pairs="first",
    )
    assert [r.labels for r in rep.reports] == [("mean age = 36", "mean age = 38")]
    assert rep.kind == "mean" and rep.totals == (len(means.pairs),)

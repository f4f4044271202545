"""Several attributes hidden at once: config, CLI errors, report and ledger."""

from __future__ import annotations

import json
import warnings
from functools import lru_cache

import numpy as np
import pytest
from markupsafe import escape

from adult_setup import release_toml
from cli_helpers import one_line_error, run
from distpriv import ProportionSecret, SeveralSecrets
from distpriv.errors import ConfigError, ParameterError, ParameterTypeError
from distpriv.pipeline import release_with_ledger
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.ledger import Ledger
from distpriv.pipeline.report import secret_dict
from distpriv.pipeline.stages.steps import _secret

FEMALE = "sex = 'Female'"
RICH = "income = '>50K'"
QUERY = {"avg_age": "avg(age)", "avg_hours": "avg(hours_per_week)"}


TWO = """kind = "several"
[[secret.attributes]]
predicate = "sex = 'Female'"
values = [0.3, 0.4]
[[secret.attributes]]
predicate = "income = '>50K'"
values = [0.2, 0.3, 0.4]
within = 0.1
"""


def _write(tmp_path, secret: str):
    path = tmp_path / "c.toml"
    path.write_text(
        release_toml(model="adult:modeling", release="adult:test", query=QUERY, secret=secret)
    )
    return path


def test_config_builds_several_secrets(tmp_path):
    secret = _secret(load_release_config(_write(tmp_path, TWO)))
    assert isinstance(secret, SeveralSecrets)
    assert secret.predicates == (FEMALE, RICH)
    # Pairs only within an attribute: 1 for sex, 2 (within 0.1) for income.
    assert [(a.predicate, b.predicate) for a, b in secret.pairs] == [(FEMALE, FEMALE)] + [
        (RICH, RICH)
    ] * 2
    assert [(a.value, b.value) for a, b in secret.pairs] == [(0.3, 0.4), (0.2, 0.3), (0.3, 0.4)]
    shown = secret_dict(secret)
    assert shown["type"] == "several"
    assert [a["predicate"] for a in shown["attributes"]] == [FEMALE, RICH]
    assert shown["attributes"][1]["pairs"] == [[0.2, 0.3], [0.3, 0.4]]
    assert shown["keys"] == [FEMALE, RICH]
    assert shown["pairs"][0] == ["share[sex = 'Female']=0.3", "share[sex = 'Female']=0.4"]
    json.dumps(shown)


ONE = """kind = "several"
[[secret.attributes]]
predicate = "sex = 'Female'"
values = [0.3, 0.4]
"""
DUP = TWO.replace("income = '>50K'", "sex  =  'Female'")
NESTED = (
    TWO
    + """[[secret.attributes]]
kind = "several"
predicate = "age > 40"
values = [0.3, 0.4]
"""
)
UNKNOWN = TWO.replace("within = 0.1", "within = 0.1\ncolumn = 'age'")
NO_VALUES = TWO.replace("values = [0.3, 0.4]\n", "")
GRID = TWO.replace("values = [0.3, 0.4]", "values = [0.305, 0.4]")
FLAT = """kind = "several"
predicate = "sex = 'Female'"
values = [0.3, 0.4]
"""
NOT_TABLES = 'kind = "several"\nattributes = ["sex", "income"]'


@pytest.mark.parametrize(
    ("secret", "words"),
    [
        ('kind = "several"', ["[secret] needs 'attributes'"]),
        (ONE, ["[secret] attributes must list at least two", "got 1"]),
        (DUP, ["attributes[1]", "predicate", "already attributes[0]"]),
        (NESTED, ["attributes[2]", "cannot be nested"]),
        (UNKNOWN, ["attributes[1]", "unknown key 'column'"]),
        (NO_VALUES, ["attributes[0] needs 'values'"]),
        (GRID, ["attributes[0]", "0.305", "whole number of rows"]),
        (FLAT, ["'predicate' does not apply to kind 'several'"]),
        (NOT_TABLES, ["attributes must be an array of tables"]),
    ],
)
def test_config_errors_name_the_key(tmp_path, capsys, secret, words):
    path = _write(tmp_path, secret)
    with pytest.raises(ConfigError) as info:
        load_release_config(path)
    for w in words:
        assert w in str(info.value)
    assert "\n" not in str(info.value)
    status, _, err = run(["release", path, "--no-ledger", "--json"], capsys)
    one_line_error(status, err, *words)
    assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob("*.html"))


def test_bad_attribute_value_is_one_line_naming_the_attribute(tmp_path, capsys):
    path = _write(tmp_path, TWO.replace("values = [0.3, 0.4]", "values = [0.3, 1.5]"))
    status, _, err = run(["release", path, "--no-ledger", "--json"], capsys)
    one_line_error(status, err, "[secret] attributes[0]", "values")


def test_library_errors():
    a = ProportionSecret(FEMALE, [0.3, 0.4])
    b = ProportionSecret(RICH, [0.2, 0.3])
    with pytest.raises(ParameterError, match="at least two"):
        SeveralSecrets([a])
    with pytest.raises(ParameterError, match=r"attributes\[1\] repeats the predicate"):
        SeveralSecrets([a, ProportionSecret(" sex = 'Female' ", [0.5, 0.6])])
    with pytest.raises(ParameterTypeError, match=r"attributes\[1\] is itself a SeveralSecrets"):
        SeveralSecrets([a, SeveralSecrets([a, b])])
    with pytest.raises(ParameterTypeError, match=r"attributes\[0\] must be a ProportionSecret"):
        SeveralSecrets(["sex", b])  # type: ignore[list-item]
    with pytest.raises(ParameterTypeError, match="sequence"):
        SeveralSecrets(a)  # type: ignore[arg-type]
    s = SeveralSecrets([a, b])
    assert s.ledger_keys() == (FEMALE, RICH)
    assert s.ledger_key().startswith("several:") and s.ledger_key() not in (FEMALE, RICH)
    assert [s.attribute_of(i) for i in range(4)] == [0, 0, 1, 1]


# ---------------------------------------------------------------------------------------
# Ledger: a release hiding two attributes composes with releases about either one.
# ---------------------------------------------------------------------------------------

STATS = {"avg_age": "avg(age)", "avg_hours": "avg(hours_per_week)", "avg_edu": "avg(education_num)"}


@lru_cache(maxsize=1)
def _adult():
    from distpriv.experiments.paper import resolve_source

    model_data = resolve_source("adult:modeling", split_seed=0)
    release_data = resolve_source(
        "adult:test", split_seed=0, sample_rows=100, rng=np.random.default_rng(7)
    )
    return model_data, release_data


def _release(path, secret, seed, budget=None):
    model_data, data = _adult()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_with_ledger(
            data,
            STATS,
            secret,
            model_data=model_data,
            mechanism="expm-g",
            epsilon=1.0,
            delta=1e-3,
            ledger=path,
            data_name="adult-test-100",
            rng=seed,
            budget=budget,
        )


def test_ledger_composes_several_with_each_attribute(tmp_path):
    path = tmp_path / "l.sqlite"
    female = ProportionSecret(FEMALE, [0.3, 0.4])
    rich = ProportionSecret(RICH, [0.2, 0.3])
    both = SeveralSecrets([female, rich])
    first = _release(path, female, 1)
    assert first.composed.n_releases == 1
    # The release hiding both composes with the earlier one about the share of women.
    second = _release(path, both, 2)
    assert second.composed.n_releases == 2
    assert len(second.composed.pairs) == 2  # the pairs of both attributes are checked
    # It is recorded under each attribute's account: the high earners' account holds it
    # (and not the release about women).
    led = Ledger(path)
    assert [e.secret["keys"] for e in led.releases(secret=RICH)] == [[FEMALE, RICH]]
    assert len(led.releases(secret=FEMALE)) == 2
    # Every release of the data counts in every account of it: the release about women
    # too (an adversary after the high earners' share sees it).
    third = _release(path, rich, 3)
    assert third.composed.n_releases == 3
    # Composing again over both: the several release's two rows count once (4, not 5).
    fourth = _release(path, both, 4)
    assert fourth.composed.n_releases == 4
    # The several key finds the two releases that hid both together, each once.
    whole = led.releases(secret=both.ledger_key())
    assert [e.secret["key"] for e in whole] == [both.ledger_key()] * 2
    assert whole[0].id < whole[1].id and whole[0].released != whole[1].released
    assert led.releases(secret="several:" + FEMALE) == ()
    # Stacking more releases can only reveal more: the composed epsilon grows.
    assert fourth.composed.epsilon > second.composed.epsilon > first.composed.alone["epsilon"]


def test_release_report_per_attribute_json_and_html(tmp_path, capsys, short_utility_grid):
    """The release hides both shares: the JSON and HTML say what is hidden per attribute,
    with each attribute's guarantee (delta at epsilon over its own pairs <= the claim).
    The page's figure is on the one-point grid: nothing here reads the figure."""
    path = _write(tmp_path, TWO)
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    status, stdout, err = run(
        ["release", path, "--no-ledger", "--json", "--html", html, "--insecure-seed", "1"], capsys
    )
    assert status == 0, err
    report = json.loads(stdout)
    attrs = report["secret"]["attributes"]
    assert [a["predicate"] for a in attrs] == [FEMALE, RICH]
    assert attrs[0]["description"] == "the share of rows with sex = 'Female'"
    g = report["guarantee"]
    for a in attrs:
        assert a["guarantee"]["epsilon"] == g["epsilon"]
        assert 0 < a["guarantee"]["delta_at_epsilon"] <= g["delta"] * (1 + 1e-9)
    # The binding attribute meets the claim (the calibration is exact on its set).
    assert max(a["guarantee"]["delta_at_epsilon"] for a in attrs) == pytest.approx(
        g["delta"], rel=0.05
    )
    assert attrs[1]["guarantee"]["pairs"] == [
        ["share[income = '>50K']=0.2", "share[income = '>50K']=0.3"],
        ["share[income = '>50K']=0.3", "share[income = '>50K']=0.4"],
    ]
    text = html.read_text()
    assert "Several attributes are hidden at once" in text
    # As Jinja2's autoescape writes it (the quote as a numeric entity).
    assert str(escape("the share of rows with income = '>50K'")) in text
    assert not out.exists()


def test_verify_and_audit_run(tmp_path, capsys):
    path = _write(tmp_path, TWO)
    out = tmp_path / "check.json"
    status, _, err = run(["verify", path, "--out", out, "--quiet"], capsys)
    assert status == 0, err
    check = json.loads(out.read_text())
    assert check["secret"]["type"] == "several"
    assert check["verification"]["verdict"] != "violation"
    assert len(check["guarantee"]["pairs"]) == 3
    # The audit runs one audit per attribute (attacks/audit_several.py; it refused before).
    audit_out = tmp_path / "audit.json"
    status, _, err = run(
        ["audit", path, "--repetitions", "1", "--out", audit_out, "--quiet"], capsys
    )
    assert status == 0, err
    report = json.loads(audit_out.read_text())
    assert [a["predicate"] for a in report["attributes"]] == [FEMALE, RICH]
    for block in report["attributes"]:
        assert block["guarantees"]["expm-g"]["epsilon"] == 1.0


def test_budget_of_either_attribute_binds_the_several_release(tmp_path):
    """A budget recorded for one attribute is checked when a release hides both."""
    from distpriv.errors import BudgetExceededError
    from distpriv.pipeline.ledger import Budget

    path = tmp_path / "l.sqlite"
    female = ProportionSecret(FEMALE, [0.3, 0.4])
    both = SeveralSecrets([female, ProportionSecret(RICH, [0.2, 0.3])])
    _release(path, female, 1, budget=Budget(1.05, 1e-3))
    with pytest.raises(BudgetExceededError, match="1 earlier release"):
        _release(path, both, 2)
    assert len(Ledger(path)) == 1  # nothing recorded
    # With a budget that the composition meets, the release passes and the budget given
    # is recorded for the attribute that had none.
    path2 = tmp_path / "l2.sqlite"
    _release(path2, female, 1, budget=Budget(3.0, 1e-3))
    done = _release(path2, both, 2, budget=Budget(3.0, 1e-3))
    assert done.composed.n_releases == 2 and done.composed.epsilon <= 3.0
    led = Ledger(path2)
    account = led.releases()[0].data_account
    assert led.budget(account, RICH) == Budget(3.0, 1e-3)

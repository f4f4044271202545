"""Mean events in the config (``[secret] kind = "event"`` with ``expression``), the report's
words, and their one-line CLI errors."""

from __future__ import annotations

import json

import pytest

from adult_setup import release_toml
from cli_helpers import one_line_error, run
from distpriv.errors import ConfigError
from distpriv.modeling import EventSecret, MeanSecret
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.report import secret_dict
from distpriv.pipeline.stages.steps import _secret

QUERY = {"avg_hours": "avg(hours_per_week)", "n_rich": "count_if(income = '>50K')"}
AGE = 'kind = "event"\nexpression = "age"\nevents = [[36, 38], [41, 43]]'


def _write(tmp_path, secret: str):
    path = tmp_path / "c.toml"
    path.write_text(
        release_toml(model="adult:modeling", release="adult:test", query=QUERY, secret=secret)
    )
    return path


def test_mean_event_config_builds_the_grid_and_the_words(tmp_path):
    secret = _secret(load_release_config(_write(tmp_path, AGE + "\nstep = 1")))
    assert isinstance(secret, EventSecret) and isinstance(secret.value_secret(), MeanSecret)
    assert secret.values == (36.0, 37.0, 38.0, 41.0, 42.0, 43.0)
    assert len(secret.pairs) == 9 and (36.0, 43.0) in secret.pairs
    shown = secret_dict(secret)
    assert shown["description"].startswith(
        "whether the average of age is in [36, 38] vs in [41, 43]"
    )
    # Its own ledger key: composes with mean secrets about age, never with a predicate.
    assert shown["key"] == "mean:age" and shown["expression"] == "age"
    # Default step: a quarter of each event's width.
    default = _secret(load_release_config(_write(tmp_path, AGE)))
    assert default.values == (36.0, 36.5, 37.0, 37.5, 38.0, 41.0, 41.5, 42.0, 42.5, 43.0)


def test_release_reports_what_is_hidden(tmp_path, capsys, short_utility_grid):
    # short_utility_grid (tests/conftest.py): the --html figure on two epsilons, not eight;
    # the assertions read the secret's words on the report and the page, not the figure.
    page = tmp_path / "r.html"
    path = _write(tmp_path, AGE + "\nstep = 1")
    status, out, err = run(["release", path, "--json", "--html", page], capsys)
    assert status == 0, err
    report = json.loads(out)
    text = json.dumps(report)
    words = "whether the average of age is in [36, 38] vs in [41, 43]"
    assert words in text
    assert "Mean events" in text  # the premise between grid values, in the guarantee
    html = page.read_text()
    assert words in html and "stays hidden" in html
    assert "whether it is 36.0" not in html  # the ranges are hidden, not one grid value


@pytest.mark.parametrize(
    ("secret", "words"),
    [
        # an event no dataset's average can fall in (Adult's ages are 17 to 90)
        (
            'kind = "event"\nexpression = "age"\nevents = [[36, 38], [95, 99]]',
            ("events[1]", "holds no dataset"),
        ),
        # a range reaching outside the column's range
        (
            'kind = "event"\nexpression = "age"\nevents = [[10, 38], [41, 43]]',
            ("events[0]", "outside the range of age"),
        ),
        # a range whose grid has one value
        (AGE + "\nstep = 2.5", ("[secret]", "grid of one value")),
        (AGE + "\nstep = 0.01", ("[secret]", "more than 41 grid values")),
        (AGE + "\nstep = -1", ("step",)),
        (
            'kind = "event"\nexpression = "age"\npredicate = "x > 0"\nevents = [[1, 2], [3, 4]]',
            ("exactly one of 'predicate'", "'expression'"),
        ),
        (
            'kind = "event"\npredicate = "x > 0"\nstep = 0.1\nevents = [[0.1, 0.2], [0.3, 0.4]]',
            ("'step' applies only",),
        ),
        (
            'kind = "event"\nexpression = "age"\nevents = [[36, 39], [38, 43]]',
            ("overlap",),
        ),
        (
            'kind = "event"\nexpression = "no_such_column"\nevents = [[36, 38], [41, 43]]',
            ("no_such_column",),
        ),
    ],
)
def test_cli_one_line_errors(tmp_path, capsys, secret, words):
    path = _write(tmp_path, secret)
    status, _, err = run(["release", path, "--json"], capsys)
    one_line_error(status, err, *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]  # no partial output


def test_mean_event_kind_refuses_values(tmp_path):
    with pytest.raises(ConfigError, match="'values' does not apply to kind 'event'"):
        load_release_config(_write(tmp_path, AGE + "\nvalues = [37, 40]"))

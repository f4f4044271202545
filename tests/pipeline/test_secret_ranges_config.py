"""``[secret] range``/``within`` and ``kind = "event"`` in the config, and their CLI errors."""

from __future__ import annotations

import pytest

from adult_setup import release_toml
from cli_helpers import one_line_error, run
from distpriv.errors import ConfigError
from distpriv.modeling import EventSecret, ProportionSecret
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.report import secret_dict
from distpriv.pipeline.stages.steps import _secret


def _write(tmp_path, secret: str):
    path = tmp_path / "c.toml"
    path.write_text(
        release_toml(
            model="builtin:adult", query={"n_rich": "count_if(income = '>50K')"}, secret=secret
        )
    )
    return path


def test_range_config_builds_the_grid(tmp_path):
    cfg = load_release_config(
        _write(tmp_path, "predicate = \"income = '>50K'\"\nrange = [0.2, 0.6]\nwithin = 0.05")
    )
    secret = _secret(cfg)
    assert isinstance(secret, ProportionSecret)
    assert len(secret.values) == 41 and len(secret.pairs) == 190
    shown = secret_dict(secret)
    assert "anywhere between 0.2 and 0.6 to within 0.05" in shown["description"]


def test_event_config_builds_cross_pairs(tmp_path):
    cfg = load_release_config(
        _write(
            tmp_path,
            'kind = "event"\npredicate = "income = \'>50K\'"\nevents = [[0.2, 0.3], [0.4, 0.5]]',
        )
    )
    secret = _secret(cfg)
    assert isinstance(secret, EventSecret)
    assert len(secret.values) == 22 and len(secret.pairs) == 121
    assert secret_dict(secret)["description"].startswith("whether the share of rows with")


@pytest.mark.parametrize(
    ("secret", "words"),
    [
        ('predicate = "x > 0"\nrange = [0.2, 0.205]', ("[secret]", "only the value 0.2")),
        ('predicate = "x > 0"\nrange = [0.2, 0.6]\nwithin = 0.001', ("[secret]", "within=0.001")),
        ('predicate = "x > 0"', ("[secret]", "values", "range")),
        (
            'kind = "event"\npredicate = "x > 0"\nevents = [[0.2, 0.3], [0.25, 0.5]]',
            ("overlap",),
        ),
        (
            'kind = "event"\npredicate = "x > 0"\nevents = [[0.2, 0.3], [0.401, 0.405]]',
            ("[secret]", "no value of the grid"),
        ),
        ('kind = "event"\npredicate = "x > 0"\nrange = [0.2, 0.3]', ("range",)),
    ],
)
def test_cli_one_line_errors(tmp_path, capsys, secret, words):
    path = _write(tmp_path, secret)
    status, _, err = run(["release", path, "--json"], capsys)
    one_line_error(status, err, *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]  # no partial output


def test_event_kind_refuses_values(tmp_path):
    with pytest.raises(ConfigError, match="'values' does not apply to kind 'event'"):
        load_release_config(
            _write(
                tmp_path,
                'kind = "event"\npredicate = "x"\nevents = [[0, 0.1], [0.2, 0.3]]\nvalues = [0.1]',
            )
        )

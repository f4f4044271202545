"""The config's ``[secret] kind`` seam: a proportion by default, clear errors otherwise."""

from __future__ import annotations

import pytest

from adult_setup import release_toml
from distpriv.errors import ConfigError
from distpriv.modeling import ProportionSecret, Secret
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.report import secret_dict
from distpriv.pipeline.stages.steps import _secret


def _load(tmp_path, secret: str):
    path = tmp_path / "c.toml"
    path.write_text(
        release_toml(
            model="builtin:adult", query={"n_rich": "count_if(income = '>50K')"}, secret=secret
        )
    )
    return load_release_config(path)


def test_default_kind_is_proportion(tmp_path):
    plain = "predicate = \"sex = 'Female'\"\nvalues = [0.3, 0.4]"
    cfg = _load(tmp_path, plain)
    secret = _secret(cfg)
    assert isinstance(secret, ProportionSecret) and isinstance(secret, Secret)
    explicit = _secret(_load(tmp_path, 'kind = "proportion"\n' + plain))
    assert explicit == secret
    shown = secret_dict(secret)
    # The public report's secret block is unchanged by the seam.
    assert shown == {
        "description": "the share of rows with sex = 'Female'",
        "predicate": "sex = 'Female'",
        "values": [0.3, 0.4],
        "pairs": [[0.3, 0.4]],
    }
    assert secret.ledger_key() == "sex = 'Female'"


@pytest.mark.parametrize(
    ("secret", "match"),
    [
        ('kind = "median"\npredicate = "x"\nvalues = [0.3, 0.4]', "kind must be one of .*'median'"),
        ('kind = 3\npredicate = "x"\nvalues = [0.3, 0.4]', "kind must be one of"),
        ('kind = [1]\npredicate = "x"\nvalues = [0.3, 0.4]', "kind must be one of"),
        ('predicate = "x"\nvalues = [0.3, 0.4]\ncolumn = "age"', "unknown key.*column|'column'"),
        ("values = [0.3, 0.4]", "needs 'predicate'"),
    ],
)
def test_bad_secret_kind(tmp_path, secret, match):
    with pytest.raises(ConfigError, match=match):
        _load(tmp_path, secret)

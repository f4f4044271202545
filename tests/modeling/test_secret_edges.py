"""Secrets at the edges: a range inside several attributes, a mean secret of too many values."""

from __future__ import annotations

import itertools

import pytest

from distpriv.errors import ParameterError
from distpriv.modeling import ProportionSecret, SeveralSecrets


def test_several_secrets_refuses_an_unmaterialised_range_in_one_line():
    wide = ProportionSecret("sex = 'Female'", range=[0.3, 0.42], within=0.05)
    other = ProportionSecret("income = '>50K'", [0.2, 0.3])
    with pytest.raises(ParameterError) as info:
        SeveralSecrets([other, wide])
    msg = str(info.value)
    assert "\n" not in msg
    assert "attributes[1] is a range [0.3, 0.42]" in msg and ".grid(subset_size)" in msg


def test_several_secrets_takes_the_grid_the_refusal_names():
    s = SeveralSecrets(
        [
            ProportionSecret("sex = 'Female'", range=[0.3, 0.42], within=0.05).grid(100),
            ProportionSecret("income = '>50K'", [0.2, 0.3]),
        ]
    )
    grid = [k / 100 for k in range(30, 43)]  # every multiple of 1/100 in [0.3, 0.42]
    assert [v.value for v in s.values] == [*grid, 0.2, 0.3]
    within = [(a, b) for a, b in itertools.combinations(grid, 2) if b - a <= 0.05 + 1e-12]
    assert [(a.value, b.value) for a, b in s.pairs] == [*within, (0.2, 0.3)]


def test_mean_secret_caps_its_number_of_values():
    from distpriv.modeling import MeanSecret
    from distpriv.modeling.secret_mean import MAX_MEAN_VALUES

    ok = MeanSecret("age", [30 + k / 100 for k in range(MAX_MEAN_VALUES)], within=0.05)
    assert len(ok.values) == MAX_MEAN_VALUES
    with pytest.raises(ParameterError) as info:
        MeanSecret("age", [30 + k / 1000 for k in range(10_000)])
    msg = str(info.value)
    assert "\n" not in msg and "10000 means given" in msg and f"at most {MAX_MEAN_VALUES}" in msg

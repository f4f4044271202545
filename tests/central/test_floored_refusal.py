"""daum-floor's refusal names the real cause: a member of the population set, not the shape.

Reference: the exact profile itself. A rank-one family along the mean difference certifies
the fitted model (equal covariances), while a "member" whose covariances differ in the
direction the family leaves uncovered keeps δ(ε) high at every scale — so the message must
say that the fitted model is certified and name the member's pair, instead of only "no
scale meets the target".
"""

from __future__ import annotations

import numpy as np
import pytest

from distpriv import GaussianQueryModel
from distpriv.central.floored import set_refusal
from distpriv.errors import MechanismNotApplicableError
from distpriv.population.exact import pair_deltas, smallest_scale

EPS, DELTA = 1.0, 1e-3
E1 = np.diag([1.0, 0.0])


def _family(s: float) -> np.ndarray:
    return s * s * E1


def _model(var2: float, labels: list[str]) -> GaussianQueryModel:
    means = np.array([[0.0, 0.0], [3.0, 0.0]])
    covs = np.array([np.eye(2), np.diag([1.0, var2])])
    return GaussianQueryModel(means, covs, labels=labels)


def test_member_named_when_the_fitted_model_certifies():
    fitted = _model(1.0, ["0.45", "0.55"])
    member = _model(4.0, ["0.45 (worst member)", "0.55 (worst member)"])
    s, check = smallest_scale(fitted, _family, epsilon=EPS, delta=DELTA, start=1.0, name="x")
    assert check.worst <= DELTA
    with pytest.raises(MechanismNotApplicableError) as info:
        smallest_scale(member, _family, epsilon=EPS, delta=DELTA, start=s, name="daum-floor")
    # At the fitted model's scale the member's pair is far above δ (the independent check).
    assert pair_deltas(member, _family(s), epsilon=EPS).worst > 10 * DELTA
    text = set_refusal(
        "daum-floor", fitted, (_family, 1.0), lambda cov: member, (EPS, DELTA), str(info.value)
    )
    assert "fitted model is certified" in text
    assert "worst member" in text and "0.55 (worst member)" in text
    assert "beta=None" in text
    assert f"{s:.6g}" in text


def test_message_kept_when_the_fitted_model_refuses_too():
    fitted = _model(4.0, ["0.45", "0.55"])
    with pytest.raises(MechanismNotApplicableError) as info:
        smallest_scale(fitted, _family, epsilon=EPS, delta=DELTA, start=1.0, name="daum-floor")
    text = set_refusal(
        "daum-floor", fitted, (_family, 1.0), lambda cov: fitted, (EPS, DELTA), str(info.value)
    )
    assert text == str(info.value)

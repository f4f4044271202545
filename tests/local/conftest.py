"""Small domains shared by the local-obfuscation tests."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import random_domain


@pytest.fixture
def small():
    """Six points in the plane (X = Y) and two distributions over them."""
    rng = np.random.default_rng(7)
    dom = random_domain(rng, 6)
    return dom, rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))

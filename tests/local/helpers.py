"""Helpers shared by the local-obfuscation tests."""

from __future__ import annotations

import numpy as np

from distpriv.local import Domain


def random_domain(
    rng: np.random.Generator, n_x: int, n_y: int | None = None, dim: int = 2
) -> Domain:
    """Random points in [0, 3]^dim; with ``n_y``, outputs separate from the inputs."""
    x = rng.uniform(0, 3, size=(n_x, dim))
    y = None if n_y is None else rng.uniform(0, 3, size=(n_y, dim))
    return Domain(x, y)

"""A two-hypothesis Gaussian model in 2-D with its exact δ: the reference of the sequential
check's tests. Its draws are exactly Gaussian, so the check's estimates can be compared with
the exact δ(1) of the released pair (``gaussian_pair_delta``), and a mechanism's noise can
be scaled to land just under or over the target."""

from __future__ import annotations

import dataclasses

import numpy as np

from distpriv import Noise, gaussian_pair_delta

G_MEANS = np.array([[0.0, 0.0], [1.0, -0.5]])
G_COVS = np.array([[[1.0, 0.3], [0.3, 1.0]], [[1.2, 0.2], [0.2, 0.9]]])


def gaussian_draw(n, g):
    """``n`` exact draws of the statistics under each hypothesis (a verify ``draw``)."""
    return [g.multivariate_normal(G_MEANS[k], G_COVS[k], n, method="eigh") for k in (0, 1)]


def exact_delta(mech):
    """The exact δ(1) of ``mech``'s release of the model, the worse of both directions."""
    nz = mech.noise_covariance
    return max(
        float(
            gaussian_pair_delta(G_MEANS[a], G_COVS[a] + nz, G_MEANS[b], G_COVS[b] + nz, epsilon=1)
        )
        for a, b in ((0, 1), (1, 0))
    )


def scaled(mech, c):
    """``mech`` with its noise covariance multiplied by ``c``."""
    vals, vecs = np.linalg.eigh(mech.noise_covariance)
    return dataclasses.replace(mech, noise=Noise.along("gaussian", vecs, np.sqrt(vals * c)))

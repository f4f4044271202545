"""Composition: every release of the same data, judged as one mechanism.

Distribution privacy does not compose by adding ε's (Kifer & Machanavajjhala 2014): releases
of one dataset are correlated through the data. The exact statement treats all releases as
one mechanism on the stacked query, with the joint query model of all their statistics.

* :mod:`.events` — one release as the composition sees it (:class:`ReleaseSpec`) and its
  noise law as recorded;
* :mod:`.accountant` — the composed guarantee of the stacked releases
  (:func:`compose`): the exact Gaussian accountant per pair;
* :mod:`.joint` — the joint query model of the stacked releases, built as
  :class:`JointModelling` says (the caller's builder, or :func:`distpriv.model_query`);
* :mod:`.laplace` — Chen & Ohrimenko 2023 Thm 3.1 for Laplace noise along a complete basis.

This package evaluates a joint model; it stores nothing (that is
:mod:`distpriv.pipeline.ledger`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .accountant import ComposedGuarantee, compose, gaussian_pair_composition
    from .events import ReleaseSpec, noise_from_dict, noise_to_dict
    from .joint import JointModelling, joint_model
    from .laplace import laplace_composition

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)

"""The population layer: what "true on the population with confidence 1 − β" means.

A query model built from a modelling table has estimated moments. Its guarantee is exact on
the fitted model (the accountant, :mod:`distpriv.accounting`) and, through this package, true
on the population the table was drawn from with confidence 1 − β: the moments' uncertainty
becomes a confidence set of models (the box, joint and tight sets, or a bootstrap set), and a
mechanism is calibrated so that every member of the set meets (ε, δ).

* :mod:`.sets` — which set a calibration uses (``population_set``; box is the default) and
  the joint set's corners;
* :mod:`.confidence` — the set's worst members for a noise (``population_model``), the
  premise reported with a guarantee, and β;
* :mod:`.bootstrap` — the set of a Monte Carlo model, from bootstrap replicates;
* :mod:`.exact` — the exact δ of every pair of a model (the accountant per pair) and the
  least scale of a noise shape that meets δ;
* :mod:`.member_search` — that search over the set's members with an active set;
* :mod:`.pair_pruning` — pairs that cannot be the worst, skipped with a certificate;
* private steps of the set: ``_stack`` (batched matrix square roots and the gap bound),
  ``_tight`` (the tight set's design and premise), ``_corr`` (its correlated variance
  statement), ``_direction`` (its gap statement in δ's own distance).

Chen & Ohrimenko 2023 §4.4 state the model-level guarantee; the population layer is
distpriv's (docs/guarantees.md gives the argument and its measured coverage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .confidence import (
        DEFAULT_BETA,
        check_beta,
        checked_members,
        marginal,
        population_model,
        population_premise,
    )
    from .exact import (
        PairCheck,
        pair_deltas,
        search_tolerance,
        smallest_scale,
        verified_headline,
        what_if_accuracy,
    )
    from .member_search import moments_model, smallest_scale_on_set, worst_member_delta
    from .pair_pruning import dominating_pairs, implied_constraints
    from .sets import POPULATION_SETS, population_set, selected_set, set_method

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)

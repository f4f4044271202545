"""Local distribution obfuscation (Kawamoto & Murakami 2019a, 2019b).

Each user perturbs one point (a location, a record) before sending it, so that the
collector cannot tell which distribution λ (e.g. the locations of men or of women) the
point came from: distribution privacy (DistP) is the DP of the lifted mechanism
A#(λ) = λA. The flow (docs/architecture.md §2): ``Domain + distributions λ → local mechanism →
DistP profile / quality loss / attack``.

Modules: :mod:`~distpriv.local.domains` (X, Y, metric, grids, scenarios),
:mod:`~distpriv.local.mechanisms` (RR, planar Laplace/Gaussian, restricted Laplace),
:mod:`~distpriv.local.tupling` (Alg. 1, exact DistP by enumeration),
:mod:`~distpriv.local.montecarlo` (Monte Carlo DistP with confidence intervals),
:mod:`~distpriv.local.bounds` (Thm 3 of KM 2019a),
:mod:`~distpriv.local.coupling` (Def. 16, KM 2019b Thm 3),
:mod:`~distpriv.local.profiles` (exact profiles, divergence DistP, Thms 1–2),
:mod:`~distpriv.local.utility` (expected loss, Bayes attack),
:mod:`~distpriv.local.evaluate` (one call: a scenario and a mechanism → a report).

The ``sample`` methods draw with numpy generators: they simulate what each user's device
would do, for evaluation and attacks. They are not a secure sampler for deployed
obfuscation (that would need OS entropy and exact samplers, as :mod:`distpriv.noise` uses for
central releases).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .bounds import TuplingBound, theorem3_bound, tupling_bound
    from .coupling import (
        COUPLING_METHODS,
        CouplingGuarantee,
        CouplingMechanism,
        coupling_guarantee,
        coupling_mechanism,
        north_west_corner,
        optimal_coupling,
        winf_coupling,
    )
    from .domains import METRICS, Domain, Grid, LocalScenario, build_grid, lift
    from .evaluate import MECHANISM_NAMES, LocalEvaluation, build_mechanism, evaluate
    from .mechanisms import (
        MatrixMechanism,
        matrix_mechanism,
        planar_gaussian,
        planar_laplace,
        randomized_response,
        restricted_laplace,
    )
    from .montecarlo import DistPEstimate, TuplingMonteCarlo, tupling_distp, tupling_monte_carlo
    from .profiles import (
        DIVERGENCE_NAMES,
        DistPProfile,
        Divergences,
        distp_delta,
        distp_epsilon,
        distp_profile,
        divergence_distp,
        theorem1_guarantee,
        theorem2_guarantee,
    )
    from .tupling import TuplingMechanism, tupling_exact, tupling_mechanism
    from .utility import AttackResult, attack_success, bayes_attack, expected_loss

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)

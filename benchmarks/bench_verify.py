"""Benchmark: the corrected data-level check against the previous plug-in, in one run.

Baseline: the previous :func:`verify_on_data` (plug-in of the finite-mixture density with a
CLT interval), pinned: its source is read from git at commit ``bdff0f1`` (the last commit
before the corrected check replaced it; ``git show bdff0f1:src/distpriv/attacks/verify.py``), its
relative imports made absolute, and loaded as a module beside today's package, so the
benchmark needs a git checkout with history. Ours: held-out sets with Clopper–Pearson
bounds (DP-Sniper style), with and without the null control.

Three settings, each printed with time, ratio, the estimates, and — where it is known —
the exact δ of the release:

* ``spreads``: draws from a Gaussian model with statistics on very different spreads
  (sd 1e-3, 1, 30, 1e3, as in a survey table) and optimal-g noise calibrated at (1, 1e-4)
  on it: the exact δ(1) of the release is at most 1e-4 by construction;
* ``adult expm-g`` and ``adult daum``: Monte Carlo subsets of Adult (what ``release
  --verify`` runs);
* ``hospital expm-g`` / ``hospital daum``: the synthetic hospital table (50 records,
  values rounded to 0.1), a non-Adult lattice.

Run: ``python -m benchmarks.bench_verify [--samples N]``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import types
import warnings

import numpy as np

from distpriv import (
    GaussianQueryModel,
    ProportionSecret,
    SampledQueryModel,
    calibrate,
    gaussian_pair_delta,
    model_query,
)
from distpriv.attacks import verify_on_data
from distpriv.datasets import generate_hospital, paper_split
from distpriv.pipeline.commands.demo import ADULT_STATISTICS, INCOME_SECRET

from ._common import ROOT, timed

# The previous check, pinned by commit (see the module docstring).
BASELINE_COMMIT = "bdff0f1f5c1f20540ee8a48ff309a7796af96f3f"
BASELINE_PATH = "src/distpriv/attacks/verify.py"


def load_baseline() -> types.ModuleType:
    """The pinned previous ``verify.py`` as a module (relative imports made absolute)."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:{BASELINE_PATH}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"bench_verify: the pinned baseline needs git history ({exc})")
    source = re.sub(r"^from \.\.(\w)", r"from distpriv.\1", source, flags=re.M)
    source = re.sub(r"^from \.(\w)", r"from distpriv.attacks.\1", source, flags=re.M)
    # the private validation module has since become the public distpriv.util.validation
    source = source.replace(
        "from distpriv._validation import", "from distpriv.util.validation import"
    )
    module = types.ModuleType("_verify_baseline")
    module.__file__ = f"{BASELINE_COMMIT[:7]}:{BASELINE_PATH}"
    sys.modules[module.__name__] = module  # dataclasses resolve their module by name
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


baseline = load_baseline()


def exact_delta(model, mech):
    nz = mech.noise_covariance
    eps = mech.guarantee.epsilon
    vals = []
    for a, b in ((0, 1), (1, 0)):
        vals.append(
            gaussian_pair_delta(
                model.means[a],
                model.covariances[a] + nz,
                model.means[b],
                model.covariances[b] + nz,
                epsilon=eps,
            )
        )
    return max(vals)


def row(name, old, t_old, new, t_new, new_nonull, t_nonull, exact=None):
    ex = "" if exact is None else f" exact {exact:.3g};"
    print(
        f"{name:16s}{ex} previous: estimate {old.delta_estimate:.3g} "
        f"(lower {old.delta_lower:.3g}) in {t_old:.1f} s | new: {new.verdict}, estimate "
        f"{new.delta_estimate:.3g} [{new.per_pair[0].interval[0]:.2g}, "
        f"{max(p.interval[1] for p in new.per_pair):.2g}], lower {new.delta_lower:.3g}, "
        f"detectable {new.detectable_delta:.3g}, null bias "
        f"{'n/a' if new.null is None else f'{new.null.bias:+.2g}'}, recovery "
        f"{new.recovery} in {t_new:.1f} s (x{t_new / t_old:.2f}); without null control "
        f"{t_nonull:.1f} s (x{t_nonull / t_old:.2f})"
    )


def run(name, samples, mech, exact=None, n_eval=10_000):
    old, _, t_old = timed(lambda: baseline.verify_on_data(samples, mech, rng=1, n_eval=n_eval))
    new, _, t_new = timed(lambda: verify_on_data(samples, mech, rng=1, n_eval=n_eval))
    nn, _, t_nn = timed(
        lambda: verify_on_data(samples, mech, rng=1, n_eval=n_eval, null_control=False)
    )
    row(name, old, t_old, new, t_new, nn, t_nn, exact)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=6_000, help="draws per value (--verify: 20000)")
    args = ap.parse_args()
    n = args.samples
    rng = np.random.default_rng(0)

    # 1. A Gaussian model with very different spreads: the exact delta is known.
    sd = np.array([1e-3, 1.0, 30.0, 1e3])
    corr = np.full((4, 4), 0.3) + 0.7 * np.eye(4)
    cov0 = corr * np.outer(sd, sd)
    cov1 = (
        cov0
        * np.array([1.1, 0.95, 1.05, 0.9])[:, None] ** 0.5
        * np.array([1.1, 0.95, 1.05, 0.9])[None, :] ** 0.5
    )
    means = np.stack([np.zeros(4), 0.4 * sd * np.array([1.0, -0.5, 0.8, 0.3])])
    model = GaussianQueryModel(means, np.stack([cov0, cov1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate("optimal-g", model, epsilon=1.0, delta=1e-4)
    samples = SampledQueryModel(
        [rng.multivariate_normal(means[k], model.covariances[k], n) for k in (0, 1)]
    )
    run("spreads opt-g", samples, mech, exact_delta(model, mech), n_eval=n // 2)

    # 2. Adult (what release --verify runs).
    parts = paper_split(rng=0)
    kw = dict(subset_size=100, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        an = model_query(
            parts["modeling"], ADULT_STATISTICS, INCOME_SECRET, method="analytic", **kw
        )
        mc = model_query(
            parts["modeling"],
            ADULT_STATISTICS,
            INCOME_SECRET,
            method="montecarlo",
            n_samples=n,
            **kw,
        ).to_sampled()
        for name in ("expm-g", "daum"):
            m = calibrate(name, an, epsilon=1.0, delta=1e-3)
            run(f"adult {name}", mc, m, n_eval=n // 2)

    # 3. The hospital example (values rounded to 0.1, 50 records).
    table = generate_hospital(3000, rng=1).round(1)
    query = {
        "avg_height": "avg(height)",
        "avg_weight": "avg(weight)",
        "avg_blood_pressure": "avg(blood_pressure)",
    }
    secret = ProportionSecret("gender = 'female'", values=[0.5, 0.6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        an = model_query(table, query, secret, subset_size=50, method="analytic", rng=0)
        mc = model_query(
            table, query, secret, subset_size=50, method="montecarlo", n_samples=n, rng=0
        ).to_sampled()
        for name in ("expm-g", "daum"):
            m = calibrate(name, an, epsilon=1.0, delta=1e-3)
            run(f"hospital {name}", mc, m, n_eval=n // 2)


if __name__ == "__main__":
    main()

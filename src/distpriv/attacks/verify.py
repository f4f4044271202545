"""Data-level verification of a calibrated mechanism: δ(ε) of f_θ + Z on resampled f_θ.

The Gaussian-family guarantees of Chen & Ohrimenko 2023 (Thm 4.2–4.5) hold for the
Gaussian model N(μ_θ, Σ_θ) of the statistics. The true f_θ of a small subset is not
Gaussian (counts are integers, means of integer columns lie on a grid). This module
checks the privacy profile of the *actual* outputs Y = f_θ + Z, with f_θ given by a large
resampled model (:class:`~distpriv.SampledQueryModel`, e.g. the Monte Carlo draws of
:func:`distpriv.model_query`) and Z the mechanism's noise.

Method (DP-Sniper, Bichsel et al. 2021, with the sets of Chen & Ohrimenko's attacks).
δ_{i→j}(ε) = sup_S P_i(S) − e^ε P_j(S) (the hockey-stick divergence). For any set S
fixed *before* looking at the evaluation draws, P_i(S) − e^ε P_j(S) ≤ δ_{i→j}(ε), and its
empirical value on fresh i.i.d. draws is unbiased with exact binomial (Clopper–Pearson)
bounds. The samples of each hypothesis are split three ways:

1. **fit**: the Gaussian moments of the statistics and the centres of a kernel
   (mixture-density) classifier;
2. **train**: fresh releases (one noise draw each) on which each candidate set and its
   threshold is chosen — the Gaussian likelihood ratio of the fitted moments plus the
   known noise ({log-ratio > t}), the mixture-density log-ratio, and, on lattice-valued
   statistics with one main noise direction, the lattice decoder followed by the
   noise-free Gaussian test (:mod:`distpriv.modeling.lattice`) or by sets of lattice
   points (the fit split's histograms of f, joint and per statistic; when the decoder
   recovers every training release, f is sufficient and the mixture density is skipped);
   the set maximising a Clopper–Pearson lower bound of P_i(S) − e^ε P_j(S) on this split
   wins; with Gaussian noise the half-space of Fisher's discriminant is evaluated too, by
   its *expected* hits (:mod:`distpriv.attacks.verify_expected`: per dataset the exact
   normal-tail probability that its release falls in the set, a Rao–Blackwellised count,
   with an empirical-Bernstein bound), and is the primary set when its train criterion
   is the best;
3. **eval**: fresh releases on which the chosen sets' P_i(S), P_j(S) are counted once
   (:mod:`distpriv.attacks.verify_stream`: batch by batch in a sequential check).

The estimate is unbiased for δ_S ≤ δ; its only bias is the choice of S (the set is
optimal when the release really is the fitted Gaussian, up to the error of the fitted
moments). The **null control** measures that bias in every check: the fitted Gaussian
model (moments of all samples) is known, so its exact δ is known
(:func:`distpriv.gaussian_pair_delta`, generalised chi-square); the same estimator is run
on draws of the same sizes from that model and compared with the exact value.

Verdict: ``violation`` when the certified lower bound exceeds the target δ (joint
confidence over pairs, directions and tests, Bonferroni); ``inconclusive`` when the
estimate exceeds the target by more than about one standard error (its one-sided 84 %
Clopper–Pearson bound is above the target) but nothing is certified; ``no evidence``
otherwise (an estimate within one standard error of the target is not evidence), with the
smallest δ the check detects with 80 % power (:func:`detectable_delta`).

:func:`distpriv.attacks.verify_sequential` runs this check on more and more resampled
datasets until it decides or reaches a sample or time budget (Bonferroni over looks).

What this does *not* certify: an upper bound on δ (a check can refute a guarantee, never
prove it); anything about the population beyond the model — the resampled subsets
approximate the true f_θ only as well as the modelling table represents the data (Chen &
Ohrimenko 2023 App. C.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..central import CalibratedMechanism
from ..errors import ParameterError, ParameterTypeError
from ..modeling.lattice import decoder_ruled_out, detect_sample_lattice, lattice_decoder
from ..querymodel import SampledQueryModel
from ..util.validation import check_positive_int, check_real, check_rng
from ._verify_stats import (
    _noise_frame,
    _NoiseFrame,
    _split,
    detectable_delta,
)
from .verify_results import POWER, DataLevelCheck, DirectionCheck, NullControl
from .verify_stream import Tally, direction_checks, make_plans
from .verify_stream import null_control as _null

__all__ = ["DataLevelCheck", "DirectionCheck", "NullControl", "detectable_delta", "verify_on_data"]


def _check_inputs(
    samples: object, mechanism: object, n_eval: object, confidence: object
) -> tuple[int, float]:
    if not isinstance(samples, SampledQueryModel):
        raise ParameterTypeError(
            f"samples must be a SampledQueryModel (e.g. model.to_sampled() of a Monte Carlo "
            f"model), got {type(samples).__name__}"
        )
    if not isinstance(mechanism, CalibratedMechanism):
        raise ParameterTypeError(
            f"mechanism must be a CalibratedMechanism, got {type(mechanism).__name__}"
        )
    if mechanism.dim != samples.samples[0].shape[1]:
        raise ParameterError(
            f"mechanism releases {mechanism.dim} statistics, samples have "
            f"{samples.samples[0].shape[1]}"
        )
    eps = mechanism.guarantee.epsilon
    if not (math.isfinite(eps) and eps >= 0):
        raise ParameterError(
            f"mechanism {mechanism.name!r} claims epsilon = {eps}; the data-level check "
            "needs a finite epsilon"
        )
    n = check_positive_int(n_eval, "n_eval", minimum=2)
    conf = check_real(
        confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    return n, conf


def verify_on_data(
    samples: SampledQueryModel,
    mechanism: CalibratedMechanism,
    *,
    rng: np.random.Generator | int | None = None,
    n_eval: int = 10_000,
    confidence: float = 0.95,
    null_control: bool = True,
) -> DataLevelCheck:
    """Check δ(ε) of the actual outputs f_θ + Z on a resampled model, with a verdict.

    See the module docstring for the method and for what is and is not certified.

    Parameters
    ----------
    samples : SampledQueryModel
        Resampled f_θ per hypothesis, shape (n_θ, m) each (thousands of draws; e.g.
        ``model_query(..., method="montecarlo", n_samples=20000).to_sampled()``). Pairs are
        taken from it.
    mechanism : CalibratedMechanism
        Gaussian noise (any rank, any number of components) or one Laplace component.
    rng : int, Generator or None
        Sample splits, the noise of the train and evaluation draws, the null control.
    n_eval : int
        Evaluation draws per hypothesis (at most half of its samples; the rest is split
        in two halves, fit and train). Values with more samples than others are evaluated
        on as many draws as the smallest (the expected-hit differences pair the k-th
        evaluation datasets of two values).
    confidence : float
        Joint confidence of the certified lower bound (Bonferroni over every pair,
        direction and evaluated set); also the level of each estimate's interval.
    null_control : bool
        Run the estimator on the fitted Gaussian model too (doubles the cost); only
        possible for Gaussian noise.

    Returns
    -------
    DataLevelCheck

    Raises
    ------
    ParameterTypeError, ParameterError
        Wrong types, mismatched dimensions, too few samples, bad ``n_eval``/``confidence``.
    MechanismNotApplicableError
        Noise that is a sum of Laplace components or of Laplace and Gaussian ones.

    Notes
    -----
    δ(ε) = sup_S P_i(S) − e^ε P_j(S) is the hockey-stick divergence (Balle & Wang 2018);
    held-out sets give unbiased, certifiable lower bounds (Bichsel et al. 2021,
    DP-Sniper). The Gaussian mechanisms' guarantees are those of Chen & Ohrimenko 2023,
    Thm 4.2–4.5 under the Gaussian model; this checks them against the resampled model of
    their App. C.1.
    """
    n_ev, conf = _check_inputs(samples, mechanism, n_eval, confidence)
    gen = check_rng(rng)
    labels = [str(x) for x in samples.labels]
    data = [np.asarray(s, dtype=np.float64) for s in samples.samples]
    pairs = [(int(p[0]), int(p[1])) for p in samples.pairs]
    return _check_arrays(data, labels, pairs, mechanism, n_ev, conf, 1, gen, null_control)


def _check_arrays(
    data: list[np.ndarray],
    labels: list[str],
    pairs: list[tuple[int, int]],
    mechanism: CalibratedMechanism,
    n_ev: int,
    conf: float,
    looks: int,
    gen: np.random.Generator,
    null_control: bool,
) -> DataLevelCheck:
    """One look of the check: its bounds at level (1 − conf) / looks (Bonferroni over looks).

    ``looks`` is the number of looks a sequential check may take
    (:func:`distpriv.attacks.verify_sequential`); 1 for :func:`verify_on_data`.
    """
    frame = _noise_frame(mechanism)
    eps = float(mechanism.guarantee.epsilon)
    sp = _split(data, labels, n_ev, mechanism, gen)
    decoding = _decoding(mechanism, sp.fit, np.max(np.abs(np.vstack(data)), axis=0))
    tally = Tally(make_plans(sp, pairs, mechanism, frame, decoding.decoder, eps), math.exp(eps))
    # The expected-hit differences pair the k-th evaluation datasets of two values.
    k = min(e.shape[0] for e in sp.ev)
    tally.add([e[:k] for e in sp.ev], [t[:k] for t in sp.ev_truth], decoding.decoder)
    null = None
    if null_control and frame.kind == "gaussian":
        null = _null(data, pairs, labels, mechanism, frame, n_ev, eps, conf, looks, gen)
    return _conclude(tally, labels, mechanism, frame, decoding, conf, looks, null)


@dataclass(frozen=True)
class _Decoding:
    """The lattice of the statistics (or None), its decoder (or None) and whether a
    decoder was ruled out before looking for the lattice."""

    lattice: tuple[np.ndarray, np.ndarray] | None
    decoder: Any
    ruled_out: bool


def _decoding(
    mechanism: CalibratedMechanism, fit: list[np.ndarray], magnitude: np.ndarray
) -> _Decoding:
    """The lattice decoder of the fit split's statistics, when one can follow.

    ``magnitude``: the largest |value| of each statistic (the decoder's float-error
    bound); a streamed check passes a margin over the values it has seen.
    """
    # The exact lattice detection only when a decoder could follow (or no noise is added).
    ruled_out = not mechanism.noise.is_zero and decoder_ruled_out(mechanism.noise, fit)
    lattice = None if ruled_out else detect_sample_lattice(fit)
    decoder: Any = None
    if lattice is not None and not mechanism.noise.is_zero:
        decoder = lattice_decoder(mechanism.noise, lattice, magnitude)
        decoder = None if decoder is None else _Cached(decoder)
    elif lattice is not None:
        # No noise: the release is f itself, "decoded" by reading it (the
        # lattice-point sets also apply to a noiseless release).
        decoder = _Identity(*lattice)
    return _Decoding(lattice, decoder, ruled_out)


def _conclude(
    tally: Tally,
    labels: list[str],
    mechanism: CalibratedMechanism,
    frame: _NoiseFrame,
    decoding: _Decoding,
    conf: float,
    looks: int,
    null: NullControl | None,
) -> DataLevelCheck:
    """The verdict of the evaluation counts so far, every test at level
    (1 − conf) / (tests · looks) (Bonferroni over pairs, directions, tests and looks)."""
    eps = float(mechanism.guarantee.epsilon)
    target = float(mechanism.guarantee.delta)
    alpha = (1.0 - conf) / (tally.n_tests * looks)
    per_pair, detects = direction_checks(tally, labels, eps, target, alpha)
    recovery = None if decoding.decoder is None else tally.recovery
    worst = max(per_pair, key=lambda p: p.estimate)
    lower = max(p.lower for p in per_pair)
    estimate = worst.estimate
    if lower > target:
        verdict = "violation"
    elif estimate > target and max(p.lower_1se for p in per_pair) > target:
        # Above the target by more than about one standard error, but not certified; an
        # estimate within one standard error of the target is no evidence either way.
        verdict = "inconclusive"
    else:
        verdict = "no evidence"
    notes = _notes(mechanism, frame, decoding, recovery, null, conf)
    return DataLevelCheck(
        mechanism.name,
        eps,
        target,
        estimate,
        lower,
        worst.interval[1],
        verdict,
        max(detects),
        POWER,
        null,
        recovery,
        conf,
        frame.rank,
        tuple(per_pair),
        notes,
        n_samples=min(tally.n) + min(p.n_fit + p.n_train for p in tally.plans),
    )


# Release arrays whose decoding :class:`_Cached` keeps (one batch's: both values' releases).
_MEMO_ARRAYS = 8


class _Cached:
    """The decoder with its results kept per release array (each is decoded once)."""

    def __init__(self, decoder: Any) -> None:
        self.decoder, self.steps, self.floor_steps = decoder, decoder.steps, decoder.floor_steps
        self.origin = decoder.origin
        self._memo: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def decode(self, y: np.ndarray) -> np.ndarray:
        hit = self._memo.get(id(y))
        if hit is None or hit[0] is not y:
            if len(self._memo) >= _MEMO_ARRAYS:
                # A streamed check decodes batch after batch: keep only the recent ones.
                self._memo.clear()
            hit = (y, self.decoder.decode(y))
            self._memo[id(y)] = hit
        return hit[1]


class _Identity:
    """The decoder of a noiseless release on a lattice: the release is the statistics."""

    floor_steps = 0.0

    def __init__(self, origin: np.ndarray, steps: np.ndarray) -> None:
        self.origin, self.steps = origin, steps

    def decode(self, y: np.ndarray) -> np.ndarray:
        return self.origin + np.rint((y - self.origin) / self.steps) * self.steps


def _notes(
    mechanism: CalibratedMechanism,
    frame: _NoiseFrame,
    decoding: _Decoding,
    recovery: float | None,
    null: NullControl | None,
    conf: float,
) -> tuple[str, ...]:
    m = mechanism.dim
    lattice, decoder, ruled_out = decoding.lattice, decoding.decoder, decoding.ruled_out
    notes = [
        f"delta_lower is certified at joint confidence {conf:g} for the resampled model "
        "(sets chosen on a training split, one-sided Clopper-Pearson bounds of "
        "P_i(S) - e^eps P_j(S) on fresh held-out draws, Bonferroni over pairs, directions "
        "and sets); it says nothing about how well the model's subsets represent the "
        "population",
        "delta_estimate is unbiased for the chosen set's P_i(S) - e^eps P_j(S), which is at "
        "most delta; its only bias is the choice of set, measured by the null control",
    ]
    if frame.kind == "gaussian" and frame.rank:
        notes.append(
            "'expected hits (half-space)' counts, for each evaluation dataset, the exact "
            "probability that its release falls in a half-space (a normal tail given the "
            "statistics) instead of a 0/1 hit; its bound is an empirical-Bernstein bound for "
            "averages in [-e^eps, 1] (Maurer & Pontil 2009, Thm 4), certified like the counts"
        )
    if null is not None:
        notes.append(
            f"null control: on draws from the fitted Gaussian model (exact delta "
            f"{null.exact_delta:.3g}) the same estimator measured a bias of {null.bias:+.2g}; "
            f"the exact values {'lie' if null.covered else 'do NOT all lie'} inside the "
            "intervals"
        )
    if frame.rank == 0:
        notes.append("the mechanism adds no noise: only the statistics themselves are tested")
    elif frame.rank < m:
        notes.append(
            f"the noise covers {frame.rank} of {m} directions: the other {m - frame.rank} "
            "are released as computed"
        )
    if isinstance(decoder, _Identity):
        notes.append(
            "every statistic lies on a lattice and no noise is added: the release is the "
            "statistics themselves; 'lattice points' and 'lattice decoding' bound delta with "
            "sets of lattice points"
        )
    elif decoder is not None and recovery is not None and lattice is not None:
        notes.append(
            f"every statistic lies on a lattice (steps {np.round(lattice[1], 12).tolist()}) "
            f"and the noise has one main direction (floor {decoder.floor_steps:.3g} steps in "
            f"the others): the lattice decoder recovered the statistics exactly in "
            f"{recovery:.1%} of the evaluation releases; 'lattice decoding' bounds delta with "
            "this attack"
        )
    elif ruled_out and frame.rank:
        notes.append(
            "lattice decoding was not attempted: the noise is not Gaussian or has several "
            "main directions (above 2 grid steps even on the coarsest grid the statistics "
            "could lie on)"
        )
    elif lattice is not None and frame.rank:
        notes.append(
            "the statistics lie on a lattice, but the noise has several main directions or a "
            "floor above 2 grid steps: lattice decoding was not attempted"
        )
    return tuple(notes)

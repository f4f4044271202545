"""The two things a release writes: the public report and the curator's private diagnostics.

What is published is only what is protected: the public report holds the
noisy values, the noise each statistic carries, the mechanism and its guarantee, and
provenance without data-derived counts. Model moments, stratum sizes, calibration
internals and (on request) the true values are facts about the data that no guarantee
covers; they go to the private diagnostics, marked as such.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ..central import CalibratedMechanism, mechanism_info
from ..errors import UtilityWarning
from ..guarantees import Release, to_jsonable
from ..modeling import Query, Secret
from ..util.version import __version__

__all__ = [
    "PRIVATE_BANNER",
    "SECURE_SAMPLER_FALLBACK",
    "intervals95",
    "lead_with_accounts",
    "noise_to_spread",
    "provenance",
    "public_release",
    "public_warnings",
    "secret_dict",
]

PRIVATE_BANNER = (
    "PRIVATE curator diagnostics: facts about the data that no guarantee covers. Do not publish."
)
# What CalibratedMechanism.release uses when the Release does not say (before the secure
# sampler records itself): numpy floats from a fresh OS-entropy seed.
SECURE_SAMPLER_FALLBACK = "numpy PCG64 floating-point draws, fresh OS-entropy seed"
_Z975 = 1.959963984540054
_LAPLACE_975 = math.log(20.0)  # P(|L| > b ln 20) = 0.05 for L ~ Laplace(b)


def intervals95(mech: CalibratedMechanism) -> tuple[np.ndarray, list[str]]:
    """Half-width of a 95 % interval of each coordinate's noise, and how it was obtained.

    Exact for Gaussian coordinates (1.96 σ) and for a coordinate carrying one Laplace term
    (b ln 20); otherwise Chebyshev's bound √20 · sd, valid for any noise but wide.
    """
    m = mech.dim
    gauss_var = np.zeros(m)
    lap_terms: list[list[float]] = [[] for _ in range(m)]
    for comp in mech.noise.components:
        weighted = comp.basis * comp.scales  # (m, d): coefficient × scale of each Y_j
        if comp.kind == "gaussian":
            gauss_var += np.sum(weighted**2, axis=1)
        else:
            for k in range(m):
                lap_terms[k] += [abs(v) for v in weighted[k] if abs(v) > 0.0]
    sd = np.sqrt(np.clip(np.diag(mech.noise_covariance), 0.0, None))
    half, how = np.empty(m), []
    for k in range(m):
        if not lap_terms[k]:
            half[k], method = _Z975 * math.sqrt(gauss_var[k]), "gaussian"
        elif len(lap_terms[k]) == 1 and gauss_var[k] == 0.0:
            half[k], method = lap_terms[k][0] * _LAPLACE_975, "laplace"
        else:
            half[k], method = math.sqrt(20.0) * sd[k], "chebyshev"
        how.append(method)
    return half, how


def secret_dict(secret: Secret) -> dict[str, Any]:
    """The secret as the public report shows it: its description, then its own fields
    (:meth:`~distpriv.modeling.secrets.Secret.to_dict`, without the ``type`` tag of a
    proportion secret, as reports before secret kinds showed it)."""
    out: dict[str, Any] = {"description": secret.describe()}
    fields = secret.to_dict()
    if fields.get("type") == "proportion":
        fields.pop("type")
    out.update(fields)
    return out


def provenance(
    *,
    rel: Release | None,
    data_sha256: str | None,
    model_data_sha256: str | None,
    insecure_seed: int | None,
) -> dict[str, Any]:
    """Version, UTC time, fingerprints, sampler; the seed only when one was used.

    The fingerprints are keyed, order-blind multiset fingerprints
    (:func:`distpriv.modeling.identity.multiset_fingerprint`, ``"hmac-sha256:<hex>"``): no
    one without the key (the ledger's, or the per-release key in the PRIVATE diagnostics)
    can confirm a guessed table against them. The modelling table's covers the columns the
    release reads.
    """
    sampler = getattr(rel, "sampler", None) or SECURE_SAMPLER_FALLBACK
    secure = bool(getattr(rel, "secure", False)) and insecure_seed is None
    out: dict[str, Any] = {
        "version": __version__,
        "time_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data_sha256": data_sha256,
        "data_sha256_salted": data_sha256 is not None,
        "model_data_sha256": model_data_sha256,
        "fingerprint_scheme": "keyed multiset fingerprint (HMAC-SHA256, order-blind)",
        "sampler": sampler if insecure_seed is None else "numpy PCG64, seeded (insecure_seed)",
        "secure": secure,
    }
    if insecure_seed is not None:
        out["seed"] = insecure_seed
    return out


def public_release(
    *,
    title: str,
    secret: Secret | None,
    query: Query,
    rel: Release,
    mech: CalibratedMechanism,
    prov: dict[str, Any],
    verification: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The public release report (keys described in docs/user-guide.md §5;
    rendered to HTML by ``report``)."""
    half, how = intervals95(mech)
    sd = np.sqrt(np.clip(np.diag(mech.noise_covariance), 0.0, None))
    raw = np.asarray(rel.value, dtype=float)
    # Declared ranges: clamp the value and intersect the interval (post-processing of the
    # noisy release: no privacy cost, Dwork & Roth 2014 Prop. 2.1), and say so.
    value, clamped = query.clamp(raw)
    lo, hi = query.range_bounds()
    stats: list[dict[str, Any]] = []
    for k, s in enumerate(query.statistics):
        entry: dict[str, Any] = {
            "name": s.name,
            "expression": s.expression,
            "value": float(value[k]),
            "noise_sd": float(sd[k]),
            # The interval projected on the range (a single bound when they do not meet).
            "interval95": [
                float(np.clip(raw[k] - half[k], lo[k], hi[k])),
                float(np.clip(raw[k] + half[k], lo[k], hi[k])),
            ],
            "interval95_method": how[k],
        }
        if s.name in query.ranges:
            width = float(hi[k] - lo[k])
            entry["range"] = [float(lo[k]), float(hi[k])]
            entry["clamped"] = bool(clamped[k])
            entry["noise_sd_over_range"] = float(sd[k] / width) if np.isfinite(width) else 0.0
            if sd[k] > width:
                warnings.warn(
                    f"statistic {s.name!r}: the noise standard deviation {sd[k]:.4g} exceeds "
                    f"its declared range [{lo[k]:g}, {hi[k]:g}]: the released value carries "
                    "little information about it (consider weights, fewer statistics or a "
                    "larger epsilon)",
                    UtilityWarning,
                    stacklevel=2,
                )
        stats.append(entry)
    spec = mechanism_info(mech.name)
    # "secure_noise": the noise came from the secure sampler (a private release); not a flag
    # that the report itself is private.
    secure_noise = bool(prov.get("secure"))
    out: dict[str, Any] = {
        "kind": "release",
        "title": title,
        "secure_noise": secure_noise,
        "secret": None if secret is None else secret_dict(secret),
        "statistics": stats,
        "mechanism": {
            "name": mech.name,
            "summary": spec.summary,
            "theorem": spec.theorem,
            "options": _public_options(mech),
            "noise_covariance": mech.noise_covariance,
            "expected_l2_error": mech.expected_l2_error(),
        },
        "guarantee": rel.guarantee.to_dict(),
        "verification": verification,
        "ledger": None,
        "choice": None,
        "provenance": prov,
    }
    if "floor" in mech.diagnostics:  # floored mechanisms: why a little noise goes everywhere
        # Imported here: central.floored pulls the optimal-g solver and scipy.linalg, which
        # `distpriv verify` of another mechanism never uses.
        from ..central.floored import FLOOR_SENTENCE

        out["mechanism"]["floor"] = {
            "grid_steps": mech.diagnostics["floor"],
            "lattice_steps": mech.diagnostics["lattice_steps"],
            "why": FLOOR_SENTENCE.format(floor=mech.diagnostics["floor"]),
        }
    if query.ranges:
        out["ranges_note"] = (
            "statistics with a declared range are clamped to it and their 95 % intervals "
            "intersected with it, after the noise is added (post-processing: no privacy "
            "cost); clamped: " + (", ".join(s["name"] for s in stats if s.get("clamped")) or "none")
        )
    if not secure_noise:
        out["not_private"] = (
            "NOT PRIVATE: the noise was drawn with a seed (insecure_seed), anyone who knows it "
            "can subtract it"
            if "seed" in prov
            else "NOT PRIVATE: the noise did not come from the secure sampler"
        )
    return to_jsonable(out)


def lead_with_accounts(public: dict[str, Any]) -> dict[str, Any]:
    """The public report led by the composed guarantee of every account of the data.

    When the ledger holds earlier releases of the same data, what an adversary learns is
    bounded by the composed guarantee, not by this release's own: the report then opens
    (after ``kind`` and ``title``) with ``composed`` — ``n_releases``, ``accounts`` (each
    secret recorded for these data: its composed ε, δ, releases and budget, this
    release's secret first), ``this_release_alone`` and a ``note`` — and the release's own
    guarantee follows further down. Unchanged for a first release or no ledger.
    """
    led = public.get("ledger") or {}
    if not led.get("recorded") or int(led.get("n_releases", 1)) < 2:
        return public
    accounts = led.get("accounts") or [
        {
            "secret": led.get("secret_key"),
            "account": led.get("secret_account"),
            "this_release": True,
            "epsilon": led["composed"]["epsilon"],
            "delta": led["composed"]["delta"],
            "n_releases": led["n_releases"],
            "budget": led.get("budget"),
        }
    ]
    lead = {
        "n_releases": led["n_releases"],
        "accounts": accounts,
        "this_release_alone": led.get("alone"),
        "note": (
            f"{led['n_releases']} releases of these data are recorded in the ledger: "
            "together they give the composed guarantee of each secret above (exactly, on "
            "their joint model); the guarantee further down is this release's alone"
        ),
    }
    head: dict[str, Any] = {k: public[k] for k in ("kind", "title") if k in public}
    return {**head, "composed": lead, **{k: v for k, v in public.items() if k not in head}}


def _public_options(mech: CalibratedMechanism) -> dict[str, Any]:
    g = mech.guarantee
    return {"calibration": g.calibration} if g.calibration else {}


def noise_to_spread(mech: CalibratedMechanism, model: Any) -> list[float]:
    """Each statistic's noise sd over its spread under the model (curator-private).

    The spread is the statistic's standard deviation across datasets, pooled over the
    hypotheses θ (root of the mean of the model's variances): a ratio of 1 means the noise
    is as large as the natural variation of the statistic from one dataset to another.
    Statistics that never vary under the model have ratio ``inf`` (or 0 without noise).
    """
    sd = np.sqrt(np.clip(np.diag(mech.noise_covariance), 0.0, None))
    cov = np.asarray(model.covariances, dtype=float)
    spread = np.sqrt(np.mean(np.diagonal(cov, axis1=-2, axis2=-1).reshape(-1, sd.size), axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(
            spread > 0, sd / np.where(spread > 0, spread, 1.0), np.where(sd > 0, np.inf, 0.0)
        )
    return [float(x) for x in ratio]


# What the public report says about each warning raised during a release.
# Warnings about the model, the modelling table (public data, SECURITY.md), the mechanism
# or the configuration are stated publicly: in a fixed sentence where their own text holds
# numbers of the modelling table (stratum sizes, moments), as they are where it holds only
# public facts (the noise rank, declared ranges, epsilon). Warnings about the released rows
# themselves (their overlap with the modelling table, rows dropped for missing values) are
# facts about the private data that no guarantee covers, and unknown warnings may be: both
# stay in the PRIVATE diagnostics (and on stderr) only.
# (kind, pattern of the one-line text, public sentence or None to keep the text).
_PUBLIC_WARNINGS: tuple[tuple[str, re.Pattern[str], str | None], ...] = (
    (
        "too-few-rows",
        re.compile(r"^the model rests on too few rows"),
        "The model rests on too few rows of the modelling table for datasets of this size: "
        "the modelled datasets overlap heavily, so the guarantee depends on a shaky model.",
    ),
    (
        "not-gaussian",
        re.compile(r"^f_theta is not Gaussian"),
        "The statistics are visibly not Gaussian under the model (skewness or kurtosis far "
        "from a Gaussian's), while the Gaussian mechanisms' guarantee rests on that "
        "approximation.",
    ),
    (
        "assumption-fails",
        re.compile(r"assumption '[^']*' does not hold"),
        "An assumption of the mechanism's theorem does not hold on the model (see the "
        "assumptions table).",
    ),
    ("partial-noise", re.compile(r"the noise covers \d+ of \d+ directions"), None),
    ("no-noise", re.compile(r"^[\w-]+: no noise is added: "), None),
    ("verification", re.compile(r"^--verify on "), None),
    ("classical-constant", re.compile(r"^the classical Gaussian constant"), None),
    ("noise-exceeds-range", re.compile(r"^statistic .* exceeds its declared range"), None),
)


def public_warnings(items: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """The warnings of a release that the public report states, in public words.

    Parameters
    ----------
    items : iterable of (text, category name)
        Each distinct warning raised while the release was made (one line each).

    Returns
    -------
    list of dict
        ``kind``, ``category`` and ``text`` (public) per warning about the model, the
        modelling table, the mechanism or the configuration, in order; warnings about the
        released rows, and unknown ones, are left out (private diagnostics only).
        ``qualifies_guarantee`` is ``False`` only for a
        :class:`~distpriv.errors.UtilityWarning` (accuracy, not privacy): every other
        warning keeps the report's status from showing a clean, verified release.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for text, category in items:
        found = next((w for w in _PUBLIC_WARNINGS if w[1].search(text)), None)
        if found is None:
            continue  # about the released rows, or unknown: private only
        kind, _, sentence = found
        public = text if sentence is None else sentence
        if public in seen:  # e.g. two statistics not Gaussian: one sentence
            continue
        seen.add(public)
        out.append(
            {
                "kind": kind,
                "category": category,
                "text": public,
                "qualifies_guarantee": category != UtilityWarning.__name__,
            }
        )
    return out


class Caught:
    """The warnings :func:`collect_warnings` recorded (filled when its block exits)."""

    lines: tuple[str, ...] = ()
    # (one-line text, category name) of each distinct warning, for the public report.
    items: tuple[tuple[str, str], ...] = ()


@contextmanager
def collect_warnings() -> Iterator[Caught]:
    """Record warnings as one-line strings, then re-emit them for the caller.

    The commands put them in their reports (:func:`public_warnings` for the public one);
    the re-emitted ones still reach the CLI's stderr or a notebook's warning display.
    """
    box = Caught()
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        yield box
    seen: dict[str, type[Warning]] = {}
    for w in log:
        seen.setdefault(" ".join(str(w.message).split()), w.category)
    box.lines = tuple(seen)
    box.items = tuple((text, cat.__name__) for text, cat in seen.items())
    for text, cat in seen.items():
        warnings.warn(text, cat, stacklevel=3)

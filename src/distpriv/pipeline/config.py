"""Release and audit configurations (``distpriv release``, ``distpriv audit``): the TOML file
read into a :class:`ReleaseConfig` and its typed :class:`~distpriv.pipeline.plan.ReleasePlan`.

The only reader of a release configuration's raw tables: every stage takes the plan.
Unknown keys are errors, named with the nearest known key (:mod:`.toml_file`); the layout
is :func:`load_release_config`'s and docs/user-guide.md's. Model files of ``distpriv
calibrate``: :mod:`.model_file`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..central import MECHANISMS, mechanism_info
from ..errors import ConfigError, ParameterError
from .plan import (
    DEFAULT_BETA,
    DEFAULT_BOOTSTRAP,
    DEFAULT_METHOD,
    DEFAULT_N_SAMPLES,
    DEFAULT_POPULATION_SET,
    DEFAULT_SEED,
    MIN_VERIFY_SAMPLES,
    AuditSpec,
    CalibrationSpec,
    LedgerSpec,
    ModelSpec,
    OutputSpec,
    ReleasePlan,
    VerifySpec,
)
from .sources import BUILTIN_PREFIX, DUCKDB_PREFIX, SPARK_PREFIX
from .toml_file import check_keys, nearest, read_toml

__all__ = [
    "BUILTIN_PREFIX",
    "ReleaseConfig",
    "load_release_config",
]

# ---------------------------------------------------------------------------------------
# Release and audit configurations (distpriv release / distpriv audit)
# ---------------------------------------------------------------------------------------


_RELEASE_TOP = {
    "title",
    "insecure_seed",
    "data",
    "query",
    "secret",
    "model",
    "mechanism",
    "output",
    "audit",
    "ledger",
    "ranges",
    "verify",
}
_RELEASE_DATA = {
    "model", "release", "split_seed", "auxiliary", "test", "missing",
    "allow_overlap",  # the released rows may also be modelling rows (refused by default)
}  # fmt: skip
# [secret] keys per ``kind`` (default "proportion"): (allowed, required).
SECRET_KEYS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "proportion": (
        frozenset({"kind", "predicate", "values", "pairs", "within", "range"}),
        ("predicate",),  # and values or range (checked where the secret is built)
    ),
    "mean": (
        frozenset({"kind", "expression", "values", "pairs", "within"}),
        ("expression", "values"),
    ),
    # several attributes at once: [[secret.attributes]] tables (pipeline/config_several.py)
    "several": (frozenset({"kind", "attributes"}), ("attributes",)),
    # Ranges of a proportion (modeling/secret_events.py): events = [[low, high], ...],
    # pairs = [[i, j], ...] of event indices (default every pair). With ``expression``
    # instead of ``predicate``: ranges of the dataset's average of that expression, on a
    # grid of spacing ``step`` (modeling/secret_mean_events.py); one of the two is required
    # (checked where the secret is built).
    "event": (
        frozenset({"kind", "predicate", "expression", "step", "events", "pairs"}),
        ("events",),
    ),
}
_RELEASE_SECRET = frozenset().union(*(allowed for allowed, _ in SECRET_KEYS.values()))
_RELEASE_MODEL = {"subset_size", "method", "n_samples", "seed", "population", "bootstrap"}
_RELEASE_OUTPUT = {"include_true"}
_LEDGER = {"path", "budget", "data_name", "enabled"}
# What bounds the data-level check (distpriv verify, release --verify): the flags'
# configuration twins (--max-samples, --no-early-stop, --batch-mib).
_VERIFY = {"max_samples", "early_stop", "batch_mib"}
_AUDIT = {
    "mechanisms", "repetitions", "classifiers", "confidence", "n_shadow", "n_test", "seed",
    "pairs",  # which pairs of the secret the audit attacks (attacks/audit_pairs.py)
}  # fmt: skip
MISSING_POLICIES = ("error", "drop")


@dataclass(frozen=True)
class ReleaseConfig:
    """A parsed release/audit configuration (see ``examples/`` and docs/user-guide.md).

    Paths of data sources are already resolved against the directory of the config file.
    ``insecure_seed`` is ``None`` unless the file asks for a reproducible, NOT private
    release.
    """

    title: str
    insecure_seed: int | None
    model_source: str
    release_source: str | None
    split_seed: int
    auxiliary_source: str | None
    test_source: str | None
    missing: str
    query: dict[str, str]
    secret: dict[str, Any]
    model: dict[str, Any]
    mechanism: str
    epsilon: float
    delta: float
    options: dict[str, Any]
    include_true: bool
    audit: dict[str, Any]
    path: str
    ledger: dict[str, Any] = field(default_factory=dict)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    # [verify]: what bounds the data-level check, checked (VerifySpec).
    verify: VerifySpec = field(default_factory=VerifySpec)
    # [mechanism] population_set: the population confidence set the commands calibrate,
    # compose and report with (distpriv.population_set; "box" by default).
    population_set: str = DEFAULT_POPULATION_SET
    # [data] allow_overlap: the curator accepts released rows in the modelling table.
    allow_overlap: bool = False

    @cached_property
    def plan(self) -> ReleasePlan:
        """The release's settings, typed and with their defaults (:mod:`.plan`): the one
        place the raw [model], [mechanism], [ledger] and [output] tables are read."""
        return _plan(self)


def _plan(cfg: ReleaseConfig) -> ReleasePlan:
    mod, led, aud, opts = cfg.model, cfg.ledger, cfg.audit, dict(cfg.options)
    audit_defaults = AuditSpec()
    bootstrap = mod.get("bootstrap", DEFAULT_BOOTSTRAP)
    budget = led.get("budget")
    beta = opts.pop("beta", DEFAULT_BETA)
    return ReleasePlan(
        model=ModelSpec(
            subset_size=mod["subset_size"],
            method=mod.get("method", DEFAULT_METHOD),
            n_samples=mod.get("n_samples", DEFAULT_N_SAMPLES),
            seed=mod.get("seed", DEFAULT_SEED),
            population=bool(mod.get("population", False)),
            missing=cfg.missing,
            bootstrap=None if bootstrap in (None, "none") else int(bootstrap),
        ),
        calibration=CalibrationSpec(
            mechanism=cfg.mechanism,
            epsilon=cfg.epsilon,
            delta=cfg.delta,
            beta=beta,
            population_set=cfg.population_set,
            options=opts,
        ),
        ledger=LedgerSpec(
            enabled=led.get("enabled", True),
            path=led.get("path"),
            budget=None if budget is None else (float(budget[0]), float(budget[1])),
            data_name=led.get("data_name"),
        ),
        output=OutputSpec(
            title=cfg.title, include_true=cfg.include_true, insecure_seed=cfg.insecure_seed
        ),
        verify=cfg.verify,
        audit=AuditSpec(
            mechanisms=tuple(aud.get("mechanisms") or ()),
            repetitions=aud.get("repetitions", audit_defaults.repetitions),
            n_shadow=aud.get("n_shadow", audit_defaults.n_shadow),
            n_test=aud.get("n_test", audit_defaults.n_test),
            classifiers=tuple(aud.get("classifiers") or audit_defaults.classifiers),
            confidence=aud.get("confidence", audit_defaults.confidence),
            seed=aud.get("seed"),
            pairs=aud.get("pairs"),
        ),
    )


def _table(
    data: dict[str, Any],
    key: str,
    allowed: set[str] | frozenset[str],
    path: str,
    required: bool = True,
) -> dict[str, Any]:
    tab = data.get(key)
    if tab is None and not required:
        return {}
    if not isinstance(tab, dict):
        raise ConfigError(f"{path}: missing [{key}] table")
    check_keys(tab, allowed, f"[{key}]", path)
    return tab


def _bootstrap(value: Any, where: str) -> None:
    """``[model] bootstrap``: resamples of the non-linear statistics' population layer
    (an integer >= 20) or ``"none"``."""
    if value is None or value == "none":
        return
    from ..modeling.bootstrap import MIN_BOOTSTRAP

    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_BOOTSTRAP:
        raise ConfigError(
            f"{where} must be an integer >= {MIN_BOOTSTRAP} (resamples of the modelling "
            f'table) or "none", got {value!r}'
        )


def _seed(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"{where} must be a non-negative integer, got {value!r}")
    return value


def _source(value: Any, key: str, base: Path, where: str) -> str | None:
    """A data source: ``adult:<split>`` as is, a path resolved against the config's folder."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: [data] {key} must be a non-empty string, got {value!r}")
    if value.startswith((BUILTIN_PREFIX, SPARK_PREFIX)):
        return value
    if value.startswith(DUCKDB_PREFIX):
        db, sep, table = value[len(DUCKDB_PREFIX) :].rpartition("#")
        if not sep or not db or not table:
            raise ConfigError(
                f"{where}: [data] {key} {value!r} must read 'duckdb:<database file>#<table>'"
            )
        path = _expanduser(db, f"{where}: [data] {key}")
        return f"{DUCKDB_PREFIX}{path if path.is_absolute() else base / path}#{table}"
    path = _expanduser(value, f"{where}: [data] {key}")
    return str(path if path.is_absolute() else base / path)


def _expanduser(value: str, what: str) -> Path:
    """``~`` and ``~user`` expanded; an unknown user is a config error, not a RuntimeError."""
    try:
        return Path(value).expanduser()
    except RuntimeError:  # pathlib: "Could not determine home directory."
        raise ConfigError(
            f"{what} {value!r}: cannot expand {value.split('/')[0]!r} (no such user or no "
            "home directory); give the full path"
        ) from None


def _objective(value: Any, name: str, where: str) -> None:
    """[mechanism] objective: what the shaped mechanisms and auto minimise
    (distpriv.central.objective); only they take it."""
    from ..central.objective import OBJECTIVES

    if not isinstance(value, str) or value not in OBJECTIVES:
        raise ConfigError(
            f"{where}: [mechanism] objective must be one of "
            f"{', '.join(map(repr, OBJECTIVES))}, got {value!r}"
        )
    takers = [n for n in MECHANISMS if "objective" in mechanism_info(n).options]
    if name != "auto" and name not in takers:
        raise ConfigError(
            f"{where}: [mechanism] objective does not apply to name = {name!r} (its noise "
            f"shape is fixed by its theorem); it applies to auto, {', '.join(takers)}"
        )


def _mechanism(data: dict[str, Any], where: str) -> tuple[str, float, float, dict[str, Any]]:
    mech = data.get("mechanism")
    if not isinstance(mech, dict):
        raise ConfigError(f"{where}: missing [mechanism] table")
    mech = dict(mech)
    # Other keys are mechanism options, checked by the mechanism; one that is no option
    # of any mechanism but nearly a key of this table is a misspelling, named here.
    base = ("name", "epsilon", "delta", "beta", "population_set")
    options = set().union(*(mechanism_info(m).options for m in MECHANISMS))
    for key in sorted(set(mech) - set(base) - options):
        if near := nearest(key, base, mech):
            raise ConfigError(
                f"{where}: unknown key {key!r} in [mechanism]; did you mean {near!r}?"
            )
    for key in ("name", "epsilon"):
        if key not in mech:
            raise ConfigError(f"{where}: [mechanism] needs {key!r}")
    name = mech.pop("name")
    if name not in (*MECHANISMS, "auto"):  # "auto": distpriv.pipeline.stages.calibrate
        raise ConfigError(
            f"{where}: [mechanism] name {name!r} is not one of {', '.join(MECHANISMS)} or auto"
        )
    epsilon = mech.pop("epsilon")
    delta = mech.pop("delta", 0.0)
    if "beta" in mech:
        # Confidence 1 − β that the guarantee holds on the population.
        beta = mech["beta"]
        if beta == "none":
            mech["beta"] = None
        elif isinstance(beta, bool) or not isinstance(beta, int | float) or not 0 < beta < 1:
            raise ConfigError(
                f'{where}: [mechanism] beta must be a number in (0, 1) or "none", got {beta!r}'
            )
    for key, val in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(val, bool) or not isinstance(val, int | float):
            raise ConfigError(f"{where}: [mechanism] {key} must be a number, got {val!r}")
    if "objective" in mech:
        _objective(mech["objective"], name, where)
    # The population confidence set (distpriv.population_set): not a mechanism
    # option, load_release_config takes it out.
    if "population_set" in mech:
        from ..population import POPULATION_SETS  # the confidence sets' module (scipy): only then

        pset = mech["population_set"]
        if not isinstance(pset, str) or pset not in POPULATION_SETS:
            raise ConfigError(
                f"{where}: [mechanism] population_set must be one of "
                f"{', '.join(map(repr, POPULATION_SETS))}, got {pset!r}"
            )
    return name, float(epsilon), float(delta), mech


def _query(data: dict[str, Any], where: str, model_source: str, split_seed: int) -> dict[str, str]:
    query = data.get("query")
    if not isinstance(query, dict) or not query:
        raise ConfigError(f"{where}: [query] must map statistic names to SQL aggregates")
    for name, expr in query.items():
        if not name.strip():  # TOML allows "" = "...": a statistic no report could name
            raise ConfigError(f"{where}: [query] statistic names must not be empty, got {name!r}")
        if not isinstance(expr, str) and name not in ("histogram", "marginal"):
            raise ConfigError(f"{where}: [query] {name} must be a SQL string, got {expr!r}")
    if "histogram" not in query and "marginal" not in query:
        return dict(query)
    # Histograms and marginals expand to their cells here; a range or values they do not
    # list come from the modelling table (opened only then).
    from ..modeling.cells import expand_cells
    from .stages.data import open_table

    def model_table() -> Any:
        return open_table(model_source, split_seed=split_seed, what=f"{where}: [data] model")

    try:
        return expand_cells(query, table=model_table, where=f"{where}: [query]")[0]
    except ParameterError as exc:
        raise ConfigError(str(exc)) from exc


def load_release_config(path: str | Path) -> ReleaseConfig:
    """Read a release/audit configuration (TOML); unknown keys are errors.

    Layout (docs/user-guide.md describes every key)::

        title = "..."
        # insecure_seed = 7               # reproducible noise: the release is NOT private
        [data]
        model = "model.csv"               # modelling table: a path (relative to this file)
                                          # or "adult:<split>" of the bundled Adult data
        release = "released.csv"          # the table to release (a path, released as is,
                                          # or "adult:<split>": a random subset_size-row sample)
        split_seed = 0                    # seed of the paper's Adult split
        auxiliary = "aux.csv"             # distpriv audit: the attacker's shadow data
        test = "test.csv"                 # distpriv audit: where test datasets come from
        missing = "error"                 # NULL policy: "error" or "drop"
        [query]                           # name = SQL aggregate
        avg_age = "avg(age)"
        [secret]
        predicate = "income = '>50K'"
        values = [0.45, 0.55]             # and optionally pairs = [[...]] or within = k
        [model]
        subset_size = 100
        method = "analytic"               # or "montecarlo"
        n_samples = 1000
        seed = 0                          # Monte Carlo modelling only, never the noise
        population = false                # true: the model table IS the whole population
        bootstrap = 50                    # non-linear statistics: resamples of the table
                                          # for the population layer ("none": off)
        [mechanism]
        name = "daum"
        epsilon = 1.0
        delta = 1e-3
        calibration = "analytic"          # any other key is a mechanism option
        beta = 0.05                       # confidence 1 - beta on the population ("none")
        population_set = "box"            # the confidence set: "box", "joint" or "tight"
        [ranges]                          # optional: valid range of a statistic; released
        avg_age = [17, 90]                # values are clamped to it (post-processing)
        [output]
        include_true = false              # true values in the private diagnostics
        [audit]                           # defaults of distpriv audit
        repetitions = 10
        seed = 0
        pairs = "auto"                    # all | binding | first | N per attribute | auto
        [verify]                          # optional: what bounds the data-level check
        max_samples = 160000              # datasets per value at its last look (--max-samples)
        early_stop = true                 # more only when suspicious (--no-early-stop)
        batch_mib = 256                   # memory of one batch of datasets (--batch-mib)
        [ledger]                          # optional: judge releases together (docs/composition.md)
        path = "curator.ledger"           # default: distpriv-ledger.sqlite next to this file
        enabled = true                    # false: record nothing (the report says so)
        budget = [2.0, 1e-3]              # (epsilon, delta) for this data and secret
        data_name = "adult-2024"          # optional: key the data by name, not by SHA-256

    Raises
    ------
    ConfigError
        Missing file, invalid TOML, unknown or invalid key (naming file and key).
    """
    p, data = read_toml(path, "config file")
    where = str(p)
    if "seed" in data:
        raise ConfigError(
            f"{where}: 'seed' is not accepted: a release draws its noise from the secure "
            "sampler; use insecure_seed for a reproducible run that is NOT private, "
            "[model] seed for the Monte Carlo modelling, or [audit] seed"
        )
    check_keys(data, _RELEASE_TOP, "the top level", where)
    dat = _table(data, "data", _RELEASE_DATA, where)
    sec = _table(data, "secret", _RELEASE_SECRET, where)
    mod = _table(data, "model", _RELEASE_MODEL, where)
    out = _table(data, "output", _RELEASE_OUTPUT, where, required=False)
    aud = _table(data, "audit", _AUDIT, where, required=False)
    led = _table(data, "ledger", _LEDGER, where, required=False)
    verify = _verify(_table(data, "verify", _VERIFY, where, required=False), where)
    name, epsilon, delta, options = _mechanism(data, where)
    population_set = options.pop("population_set", DEFAULT_POPULATION_SET)
    kind = sec.get("kind", "proportion")
    if not isinstance(kind, str) or kind not in SECRET_KEYS:
        raise ConfigError(
            f"{where}: [secret] kind must be one of {', '.join(sorted(SECRET_KEYS))}, got {kind!r}"
        )
    allowed, required = SECRET_KEYS[kind]
    for key in sorted(set(sec) - allowed):
        raise ConfigError(f"{where}: [secret] key {key!r} does not apply to kind {kind!r}")
    for key in required:
        if key not in sec:
            raise ConfigError(f"{where}: [secret] needs {key!r}")
    if "subset_size" not in mod:
        raise ConfigError(f"{where}: [model] needs 'subset_size'")
    if "model" not in dat:
        raise ConfigError(f"{where}: [data] needs 'model' (the modelling table)")
    _seed(mod.get("seed"), f"{where}: [model] seed")
    _seed(aud.get("seed"), f"{where}: [audit] seed")
    split_seed = _seed(dat.get("split_seed", 0), f"{where}: [data] split_seed")
    missing = dat.get("missing", "error")
    if missing not in MISSING_POLICIES:
        raise ConfigError(
            f"{where}: [data] missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}"
        )
    if not isinstance(dat.get("allow_overlap", False), bool):
        raise ConfigError(f"{where}: [data] allow_overlap must be true or false")
    if not isinstance(mod.get("population", False), bool):
        raise ConfigError(f"{where}: [model] population must be true or false")
    _bootstrap(mod.get("bootstrap"), f"{where}: [model] bootstrap")
    include_true = out.get("include_true", False)
    if not isinstance(include_true, bool):
        raise ConfigError(f"{where}: [output] include_true must be true or false")
    if kind == "proportion":
        _check_grid(sec.get("values"), mod.get("subset_size"), where)
    elif kind == "several":
        from .config_several import check_several_table

        check_several_table(sec, mod.get("subset_size"), where, _check_grid)
    title = data.get("title", p.stem)
    if not isinstance(title, str):
        raise ConfigError(f"{where}: title must be a string, got {title!r}")
    base = p.resolve().parent
    model_source = _source(dat["model"], "model", base, where)
    # TOML has no null, so neither is None here; checked to narrow the types.
    if model_source is None or split_seed is None:
        raise ConfigError(f"{where}: [data] model and split_seed must be given")
    return ReleaseConfig(
        title=title,
        insecure_seed=_seed(data.get("insecure_seed"), f"{where}: insecure_seed"),
        model_source=model_source,
        release_source=_source(dat.get("release"), "release", base, where),
        split_seed=split_seed,
        auxiliary_source=_source(dat.get("auxiliary"), "auxiliary", base, where),
        test_source=_source(dat.get("test"), "test", base, where),
        missing=missing,
        query=_query(data, where, model_source, split_seed),
        secret=dict(sec),
        model=dict(mod),
        mechanism=name,
        epsilon=epsilon,
        delta=delta,
        options=options,
        include_true=include_true,
        audit=dict(aud),
        path=where,
        ledger=_ledger_table(led, base, where),
        ranges=_ranges(data, where),
        population_set=population_set,
        allow_overlap=dat.get("allow_overlap", False),
        verify=verify,
    )


def _verify(table: dict[str, Any], where: str) -> VerifySpec:
    """The ``[verify]`` table, checked: the same bounds as its command-line twins."""
    max_samples, early_stop, batch_mib = (
        table.get(k) for k in ("max_samples", "early_stop", "batch_mib")
    )
    if max_samples is not None and (
        isinstance(max_samples, bool)
        or not isinstance(max_samples, int)
        or max_samples < MIN_VERIFY_SAMPLES
    ):
        raise ConfigError(
            f"{where}: [verify] max_samples must be an integer of at least "
            f"{MIN_VERIFY_SAMPLES}, got {max_samples!r}"
        )
    if early_stop is not None and not isinstance(early_stop, bool):
        raise ConfigError(f"{where}: [verify] early_stop must be true or false, got {early_stop!r}")
    if batch_mib is not None and (
        isinstance(batch_mib, bool)
        or not isinstance(batch_mib, int | float)
        or not math.isfinite(batch_mib)
        or batch_mib <= 0
    ):
        raise ConfigError(
            f"{where}: [verify] batch_mib must be a positive number of MiB, got {batch_mib!r}"
        )
    return VerifySpec(
        max_samples=max_samples,
        early_stop=early_stop,
        batch_mib=None if batch_mib is None else float(batch_mib),
    )


def _check_grid(values: Any, subset_size: Any, where: str) -> None:
    """Every secret value must be a whole number of rows of the subset: θ_p is a dataset of
    ``subset_size`` rows of which p·n satisfy the predicate, and the model would otherwise
    round p·n silently (0.305 × 100 → 31) while the report states 0.305.
    Types and ranges are checked where the secret is built; only well-typed values here."""
    n = subset_size
    if isinstance(values, list):
        big = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if any(v > 1 for v in big):  # 75 for 75 %: say what a share is, in the file's words
            raise ConfigError(
                f"{where}: [secret] values {values!r}: a share secret's values are fractions "
                f"of the rows in [0, 1] (0.75 for 75 %), got {max(big)!r}"
            )
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0 or not isinstance(values, list):
        return
    for p in values:
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            continue
        rows = p * n
        if abs(rows - round(rows)) > 1e-9 * max(1.0, rows):
            lo, hi = math.floor(rows), math.ceil(rows)
            raise ConfigError(
                f"{where}: [secret] value {p!r} is not a whole number of rows of [model] "
                f"subset_size {n} ({p!r} x {n} = {rows:.6g}); a dataset of {n} rows has a "
                f"proportion that is a multiple of 1/{n}: use {lo / n:g} or {hi / n:g}"
            )


def _ranges(data: dict[str, Any], where: str) -> dict[str, tuple[float, float]]:
    """``[ranges]``: statistic name = [low, high], the valid range of a released value."""
    tab = data.get("ranges", {})
    if not isinstance(tab, dict):
        raise ConfigError(f"{where}: [ranges] must map statistic names to [low, high]")
    query = data.get("query") or {}
    out = {}
    for name, bounds in tab.items():
        if name not in query:
            raise ConfigError(f"{where}: [ranges] {name} is not a statistic of [query]")
        ok = (
            isinstance(bounds, list)
            and len(bounds) == 2
            and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
            and bounds[0] < bounds[1]  # NaN fails this too
        )
        if not ok:
            raise ConfigError(
                f"{where}: [ranges] {name} must be [low, high] with low < high, got {bounds!r}"
            )
        out[name] = (float(bounds[0]), float(bounds[1]))
    return out


def _ledger_table(led: dict[str, Any], base: Path, where: str) -> dict[str, Any]:
    """Check ``[ledger]``: path (resolved like the data), budget, data_name, enabled."""
    out = dict(led)
    if "path" in out:
        if not isinstance(out["path"], str) or not out["path"]:
            raise ConfigError(f"{where}: [ledger] path must be a non-empty string")
        path = _expanduser(out["path"], f"{where}: [ledger] path")
        out["path"] = str(path if path.is_absolute() else base / path)
    if "budget" in out:
        bud = out["budget"]
        if (
            not isinstance(bud, list)
            or len(bud) != 2
            or any(isinstance(v, bool) or not isinstance(v, int | float) for v in bud)
        ):
            raise ConfigError(f"{where}: [ledger] budget must be [epsilon, delta], got {bud!r}")
    if "data_name" in out and (not isinstance(out["data_name"], str) or not out["data_name"]):
        raise ConfigError(f"{where}: [ledger] data_name must be a non-empty string")
    if not isinstance(out.get("enabled", True), bool):
        raise ConfigError(f"{where}: [ledger] enabled must be true or false")
    return out

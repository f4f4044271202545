"""No function in the package takes more than ten parameters, but the public keyword API.

A long signature is a sign that settings travel loose instead of as the typed spec they
form (docs/architecture.md §3: a release's settings are one ``ReleasePlan``, grouped in frozen
dataclasses); functions that pass the same fifteen keywords along drift apart, as two
routes to one query model once did. The exceptions are the user-facing functions whose
keywords *are* the interface a researcher types (``distpriv.release(..., epsilon=1.0,
delta=1e-3, ...)``): they build the spec once and hand it on.

The count is of every parameter a caller can pass (positional, keyword-only, ``*args``,
``**kwargs``); ``self`` and ``cls`` are not counted. Read from the source (ast), so the test
sees private functions and nested ones too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "distpriv"

MAX_PARAMETERS = 10

# The user-facing keyword API: public functions whose keywords are what the user types.
# Each builds its typed spec once and passes it on; none is called by the package with
# its keywords spelt out again. (path relative to src/distpriv, function name)
PUBLIC_KEYWORD_API = {
    # distpriv.release / distpriv.release_with_ledger: the library's release, in keywords
    ("pipeline/commands/release.py", "release"),
    ("pipeline/commands/release_ledger.py", "release_with_ledger"),
    # distpriv.pipeline.build_model: the model a mechanism is calibrated on, in keywords
    ("pipeline/commands/release.py", "build_model"),
    # distpriv.model_query: every modelling option of the library, in keywords
    ("modeling/model.py", "model_query"),
    # distpriv.attacks.audit / audit_pairs: the attack's settings, in keywords
    ("attacks/audit.py", "audit"),
    ("attacks/audit_pairs.py", "audit_pairs"),
    # distpriv.local.evaluate: a local mechanism's evaluation, in keywords
    ("local/evaluate.py", "evaluate"),
}


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return [n for n in names if n not in ("self", "cls")]


def long_signatures(src: Path = SRC) -> list[tuple[str, str, int]]:
    """(path, function, parameters) of every function with more than MAX_PARAMETERS."""
    out = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = len(_parameters(node))
                if n > MAX_PARAMETERS:
                    out.append((rel, node.name, n))
    return out


def test_no_function_takes_more_than_ten_parameters():
    found = long_signatures()
    offenders = [f for f in found if (f[0], f[1]) not in PUBLIC_KEYWORD_API]
    assert not offenders, (
        "functions with more than ten parameters (group them in a frozen spec): "
        + ", ".join(f"{p}:{name} ({n})" for p, name, n in offenders)
    )


def test_the_allowlist_names_only_long_public_functions():
    # An entry that no longer needs the exception (shortened, renamed or removed) goes.
    found = {(p, name) for p, name, _ in long_signatures()}
    assert not PUBLIC_KEYWORD_API - found, sorted(PUBLIC_KEYWORD_API - found)


def test_the_scan_counts_what_a_caller_passes(tmp_path):
    # self/cls excluded; *args, **kwargs and keyword-only parameters counted.
    (tmp_path / "m.py").write_text(
        "class C:\n"
        "    def ok(self, a, b, c, d, e, f, g, h, i, j): ...\n"
        "def long(a, b, c, d, e, f, g, h, i, *args, k, **kw): ...\n"
        "def outer():\n"
        "    def inner(a, b, c, d, e, f, g, h, i, j, k): ...\n"
    )
    assert sorted(long_signatures(tmp_path)) == [("m.py", "inner", 11), ("m.py", "long", 12)]

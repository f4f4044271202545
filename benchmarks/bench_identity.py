"""Benchmark: the price of identity by meaning, against the first-version fingerprint.

A release through the ledger fingerprints the released rows (now in their canonical
encoding: text cells that read as numbers, booleans and their words, dates) and digests
what the secret computes on them (a query for the secret's span and mean, then the
fingerprint with the secret's value as one more column). Both are timed here against the
first-version fingerprint (text cells hashed as typed), the baseline, on the same table in
the same run: a pandas frame of ``--rows`` rows with an integer, a float, a yes/no text,
a date and a category column, scanned by DuckDB in place. Best of ``--repeat``.

Checks (exit status 1 if any fails): the canonical fingerprint of the frame equals that of
the same rows with the yes/no column as booleans and the integers as floats (and the first
version's does not); the secret's digest equals that of its complement.

Run: ``python -m benchmarks.bench_identity [--rows 1000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from distpriv.modeling import ProportionSecret
from distpriv.modeling.identity import multiset_fingerprint
from distpriv.modeling.secret_identity import secret_accounts
from distpriv.modeling.tables import as_table

KEY = bytes(range(32))


def frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, rows),
            "income": rng.normal(5e4, 1e4, rows).round(2),
            "smoker": rng.choice(["yes", "no"], rows),
            "visit": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, rows), "D"),
            "town": rng.choice(["north", "south", "east", "west"], rows),
        }
    )


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = frame(args.rows)
    table = as_table(data)
    secret = ProportionSecret("smoker = 'yes' AND age > 40", [0.2, 0.3])
    ok = True
    other = as_table(data.assign(smoker=data["smoker"] == "yes", age=data["age"].astype(float)))
    same = multiset_fingerprint(other, key=KEY) == multiset_fingerprint(table, key=KEY)
    old_same = multiset_fingerprint(other, key=KEY, canonical=False) == multiset_fingerprint(
        table, key=KEY, canonical=False
    )
    complement = ProportionSecret("NOT (smoker = 'yes' AND age > 40)", [0.7, 0.8])
    merged = secret_accounts(table, secret, key=KEY) == secret_accounts(table, complement, key=KEY)
    for name, passed in [
        ("canonical fingerprint: yes/no text = booleans, ints = floats", same),
        ("first-version fingerprint told them apart", not old_same),
        ("secret and complement one account", merged),
    ]:
        print(f"check {name}: {'ok' if passed else 'FAILED'}")
        ok = ok and passed
    base = best(lambda: multiset_fingerprint(table, key=KEY, canonical=False), args.repeat)
    canon = best(lambda: multiset_fingerprint(table, key=KEY), args.repeat)
    meaning = best(lambda: secret_accounts(table, secret, key=KEY), args.repeat)
    print(f"rows {args.rows}: first-version fingerprint {base:.3f} s (baseline)")
    print(f"  canonical fingerprint  {canon:.3f} s  ratio {canon / base:.2f}")
    print(f"  secret meaning digest  {meaning:.3f} s  ratio {meaning / base:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

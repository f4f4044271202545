"""Benchmarks of distpriv against baselines measured in the same run (README.md indexes them).

Run each from the repository root as a module: ``python -m benchmarks.bench_x``.
"""

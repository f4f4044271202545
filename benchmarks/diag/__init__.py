"""Diagnostics of the price of the population layer (benchmarks/README.md lists them).

Run each from the repository root as a module: ``python -m benchmarks.diag.diag_x``.
"""

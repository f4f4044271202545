"""What every layer of distpriv uses, and nothing of distpriv itself: the bottom layer.

* :mod:`.validation` — one check per kind of parameter (ε, δ, probabilities, arrays, rng),
  raising :mod:`distpriv.errors` with the parameter's name and value;
* :mod:`.threads` — one BLAS thread around the accountant's loops, and :mod:`.context`, a
  function run inside a context manager (the decorators of both);
* :mod:`.lazy` — the lazy re-exports of the package ``__init__`` files, and :mod:`.import_gc`,
  the collector off while a command imports;
* :mod:`.text` — terminal-safe text and plain ASCII numbers;
* :mod:`.templates` — the Jinja2 templates of ``_repr_html_`` and the reports;
* :mod:`.distributions` and :mod:`.roots` — the few scipy functions the cold path needs,
  without importing scipy.stats or scipy.optimize;
* :mod:`.records` — frozen dataclass results as dicts (each ``to_dict`` names its fields once);
* :mod:`.version` — the package's version (read statically by setuptools).

Nothing here is imported by ``import distpriv`` until a module needs it.
"""

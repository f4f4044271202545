"""One module per command of the curator: a configuration in, a frozen outcome out.

:mod:`.release` (the library's :func:`release`), :mod:`.run` (``distpriv release``),
:mod:`.verify`, :mod:`.audit` and :mod:`.audit_kinds`, :mod:`.calibrate` (``distpriv
calibrate`` and ``distpriv demo``) and :mod:`.demo` (the paper's Adult setting).
"""

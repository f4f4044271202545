"""``python -m distpriv`` and the ``distpriv`` console script.

Deliberately tiny: it handles Ctrl-C *before* the real command line (:mod:`distpriv.cli`) and
whatever it imports are loaded, so an interrupt in the first second still exits with status
130 and one line instead of a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Run ``distpriv`` with ``sys.argv``; return the exit status."""
    try:
        from .cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("distpriv: interrupted; nothing was written\n")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

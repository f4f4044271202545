"""Execute docs/tutorial.ipynb and write it back with fresh outputs.

    python docs/make_tutorial.py

runs every cell of the notebook in a fresh Jupyter kernel of *this* Python (the one running
the script, so the kernel sees the same environment and the same distpriv) and writes the
outputs into docs/tutorial.ipynb, so that GitHub renders it. tests/test_notebook.py runs it
the same way and fails when a cell raises or when the committed outputs no longer match what
the code produces (after the normalisation below); the fix is to run this script and commit
the notebook.

What is compared, output by output, cell by cell (:func:`compare`):

* stream text (stdout, stderr), ``text/plain`` and the visible text of ``text/html``
  (tags and attributes dropped: the markup of a pandas table changes between pandas
  releases, its content does not). The ``text/plain`` fallback of an output that also has
  HTML is not what a reader sees, and is compared only for presence;
* images (``image/png`` ...) only by presence and type: their bytes change with every
  matplotlib or font release;
* first every match of :data:`VOLATILE` (timestamps, memory addresses, hex digests, version
  numbers, temporary paths, timings) is replaced by a placeholder;
* then numbers are compared with the tolerance of the cell's tag (:data:`TOLERANCES`):
  untagged cells are deterministic (one unit in the last printed digit of a number with a
  fraction, a relative 1e-6, or an absolute 1e-9 for numbers at the level of numerical
  error); cells tagged
  ``seeded`` are seeded simulations (an audit, a Monte Carlo resample), identical on one
  platform, but another BLAS or numpy release may flip a borderline decision, so numbers
  agree within 0.05 (absolute or relative); cells tagged ``secure-noise`` draw from the
  secure sampler, so their numbers change on every run and are not compared (their words
  are).

Everything else — every word, every table row and column, every warning — must match.
"""

from __future__ import annotations

import html.parser
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"
REGENERATE = "python docs/make_tutorial.py"
#: Seconds one cell may run before the execution is abandoned (the whole notebook takes
#: well under a minute; a hang should fail, not block CI).
CELL_TIMEOUT = 600
KERNEL_NAME = "distpriv-tutorial"

#: Parts of an output that legitimately differ between runs, and their placeholders.
VOLATILE: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "ISO 8601 timestamps (provenance, ledger rows)",
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<TIME>",
    ),
    ("memory addresses in reprs", re.compile(r"\b0x[0-9a-fA-F]+\b"), "<ADDRESS>"),
    (
        "hex digests and keys (keyed fingerprints, identity keys)",
        re.compile(r"\b[0-9a-f]{16,}\b"),
        "<HEX>",
    ),
    (
        "version numbers (distpriv, OpenDP, ...: the newest-releases CI run has others)",
        re.compile(r"\b\d+\.\d+\.\d+(?:[.+-]?[0-9A-Za-z]+)*\b"),
        "<VERSION>",
    ),
    (
        "temporary paths",
        re.compile(re.escape(tempfile.gettempdir()) + r"[^\s'\"<>]*"),
        "<TMP>",
    ),
    ("timings", re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s)\b"), "<TIME>"),
)

#: Cell tag -> (relative, absolute) tolerance for numbers, or None: not compared.
TOLERANCES: dict[str, tuple[float, float] | None] = {
    "": (1e-6, 1e-9),
    "seeded": (0.05, 0.05),
    "secure-noise": None,
}

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b")
_IMAGE = re.compile(r"image/")


class _Text(html.parser.HTMLParser):
    """The visible text of an HTML fragment (not the content of style or script)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hidden += tag in ("style", "script")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def html_text(fragment: str) -> str:
    """The text a reader sees in ``fragment``, words joined by single spaces."""
    parser = _Text()
    parser.feed(fragment)
    parser.close()
    return " ".join(" ".join(parser.parts).split())


def normalise(text: str) -> str:
    """``text`` with every :data:`VOLATILE` match replaced and whitespace squeezed."""
    for _, pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return " ".join(text.split())


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def output_views(output: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is compared of one output: (kind, normalised text) pairs, in a fixed order."""
    kind = output["output_type"]
    if kind == "stream":
        return [(f"stream:{output['name']}", normalise(_text(output["text"])))]
    if kind == "error":
        return [("error", normalise(f"{output['ename']}: {output['evalue']}"))]
    data = output.get("data", {})
    views = []
    for mime in sorted(data):
        if _IMAGE.match(mime):
            views.append((mime, "<image>"))
        elif mime == "text/html":
            views.append((mime, normalise(html_text(_text(data[mime])))))
        elif mime == "text/plain" and "text/html" in data:
            views.append((mime, "<fallback of the HTML>"))
        else:
            views.append((mime, normalise(_text(data[mime]))))
    return views


def _ulp(token: str) -> float:
    """One unit in the last printed digit of a number printed with a fraction or exponent;
    0 for an integer (a count: 5 statistics are not 6)."""
    if not any(c in token for c in ".eE"):
        return 0.0
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_agree(a: str, b: str, tolerance: tuple[float, float] | None) -> bool:
    """Whether two printed numbers agree within ``tolerance`` (None: any two numbers)."""
    if tolerance is None:
        return True
    x, y = float(a), float(b)
    if x == y or (math.isnan(x) and math.isnan(y)):
        return True
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    rel, absolute = tolerance
    allowed = max(rel * max(abs(x), abs(y)), absolute, _ulp(a), _ulp(b))
    return abs(x - y) <= allowed * (1 + 1e-12)


def texts_agree(old: str, new: str, tolerance: tuple[float, float] | None) -> bool:
    """Equal words, and numbers equal within ``tolerance``."""
    if _NUMBER.sub("#", old) != _NUMBER.sub("#", new):
        return False
    pairs = zip(_NUMBER.findall(old), _NUMBER.findall(new), strict=True)
    return all(numbers_agree(a, b, tolerance) for a, b in pairs)


def cell_tolerance(cell: Mapping[str, Any]) -> tuple[float, float] | None:
    """The tolerance of a code cell, from its tag (at most one of :data:`TOLERANCES`)."""
    tags = [t for t in cell.get("metadata", {}).get("tags", []) if t in TOLERANCES]
    if len(tags) > 1:
        raise ValueError(f"a cell carries more than one comparison tag: {tags}")
    return TOLERANCES[tags[0] if tags else ""]


@dataclass(frozen=True)
class Difference:
    """One output of one code cell that differs."""

    cell: int
    what: str
    committed: str
    fresh: str

    def __str__(self) -> str:
        return (
            f"code cell {self.cell} ({self.what}):\n"
            f"  committed: {self.committed[:400]}\n"
            f"  fresh:     {self.fresh[:400]}"
        )


def _code_cells(nb: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    return (c for c in nb["cells"] if c["cell_type"] == "code")


def _merged(views: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Consecutive pieces of one stream as one: how a kernel splits a cell's printed text
    into stream outputs depends on flush timing (ipykernel versions differ), not on it."""
    out: list[tuple[str, str]] = []
    for kind, text in views:
        if out and kind.startswith("stream:") and out[-1][0] == kind:
            out[-1] = (kind, f"{out[-1][1]} {text}".strip())
        else:
            out.append((kind, text))
    return out


def compare(committed: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[Difference]:
    """Every difference between the outputs of two runs of the same notebook."""
    old_cells, new_cells = list(_code_cells(committed)), list(_code_cells(fresh))
    if [_text(c["source"]) for c in old_cells] != [_text(c["source"]) for c in new_cells]:
        return [Difference(0, "the code itself", "committed code", "different code")]
    diffs = []
    for i, (old, new) in enumerate(zip(old_cells, new_cells, strict=True), start=1):
        tolerance = cell_tolerance(old)
        olds = _merged([v for out in old.get("outputs", []) for v in output_views(out)])
        news = _merged([v for out in new.get("outputs", []) for v in output_views(out)])
        old_kinds, new_kinds = [k for k, _ in olds], [k for k, _ in news]
        if old_kinds != new_kinds:
            diffs.append(Difference(i, "kinds of output", str(old_kinds), str(new_kinds)))
            continue
        for (kind, a), (_, b) in zip(olds, news, strict=True):
            if not texts_agree(a, b, tolerance):
                diffs.append(Difference(i, kind, a, b))
    return diffs


def _kernel_manager(spec_dir: Path) -> Any:
    """A kernel manager whose kernel is ipykernel on ``sys.executable``.

    A private kernelspec in ``spec_dir`` rather than the installed ``python3`` one: that
    may point at another Python (a user-wide spec), and CI runs the suite as
    ``.venv/bin/python -m pytest`` without activating the environment.
    """
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    kernel_dir = spec_dir / "kernels" / KERNEL_NAME
    kernel_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"distpriv tutorial ({sys.executable})",
        "language": "python",
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir / "kernels")], ensure_native_kernel=False)
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)


def execute(path: Path = NOTEBOOK) -> Any:
    """Run every cell of the notebook at ``path`` in a fresh kernel; the executed notebook.

    Raises ``nbclient.exceptions.CellExecutionError`` when a cell raises. The kernel runs
    in docs/ (relative paths as when a reader opens the notebook there) on this checkout's
    sources, with the inline
    matplotlib backend, RuntimeWarnings as errors (as the test suite's pytest
    configuration), one BLAS thread, and a private IPython directory.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="distpriv-kernel-") as tmp:
        env = {
            **os.environ,
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "PYTHONWARNINGS": "error::RuntimeWarning",
            "IPYTHONDIR": str(Path(tmp) / "ipython"),
            "JUPYTER_PLATFORM_DIRS": "1",
            # one BLAS thread, as in the test suite's xdist workers: the same arithmetic
            # (sums in the same order) when the notebook is regenerated and when it is tested
            **dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), "1"),
            # this checkout's distpriv, whatever the environment has installed
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p
            ),
        }
        client = NotebookClient(
            nb,
            km=_kernel_manager(Path(tmp)),
            timeout=CELL_TIMEOUT,
            record_timing=False,  # no timestamps in the committed cell metadata
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute(env=env)
    return nb


def committed(path: Path = NOTEBOOK) -> Any:
    import nbformat

    return nbformat.read(path, as_version=4)


def regenerate(path: Path = NOTEBOOK) -> None:
    """Execute the notebook and write it back with its fresh outputs.

    HTML numeric entities (Jinja2 escapes an apostrophe as a decimal entity) are stored with
    the JSON escape ``\\u0023`` for their ``#``: the notebook reads back the same, and a search
    of the repository for issue-number citations (``#`` and two digits) does not match them.
    """
    import nbformat

    text = nbformat.writes(execute(path))
    text = re.sub(r"&#(?=[0-9])", lambda _: "&\\u0023", text)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    regenerate()
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}")

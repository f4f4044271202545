"""docs/tutorial.ipynb runs, and its committed outputs are what the code produces.

The notebook is committed with its outputs (GitHub renders them). The first test executes
it in a fresh kernel of this Python and fails when a cell raises or when an output differs
from the committed one after docs/make_tutorial.py's normalisation (volatile parts such as
timestamps and versions replaced; numbers compared with the tolerance of the cell's tag;
images by presence). When it fails, run ``python docs/make_tutorial.py`` and commit the
notebook. The other tests check the comparison itself on the committed notebook: that it
catches an altered output and lets through only what is documented as volatile.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import sys
from pathlib import Path

import pytest

if os.environ.get("CI"):  # .ci/run installs the test extra: a missing kernel is a failure
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401
else:
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("make_tutorial", ROOT / "docs" / "make_tutorial.py")
tutorial = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tutorial  # its dataclass looks its module up while being defined
_spec.loader.exec_module(tutorial)


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _first(nb, tag, predicate):
    """The first code cell with comparison tag ``tag`` ('' for none) having an output
    that satisfies ``predicate``, and that output."""
    for cell in _code_cells(nb):
        tags = [t for t in cell.metadata.get("tags", []) if t in tutorial.TOLERANCES]
        if (tags[0] if tags else "") != tag:
            continue
        for out in cell.outputs:
            if predicate(out):
                return cell, out
    raise AssertionError(f"no {tag or 'untagged'} cell with such an output")


def _html(out):
    return out.get("data", {}).get("text/html")


def _stdout(out):
    return out.output_type == "stream" and out.name == "stdout"


@pytest.fixture(scope="module")
def committed():
    return tutorial.committed()


def test_notebook_runs_and_its_outputs_are_current(committed):
    fresh = tutorial.execute()  # raises CellExecutionError when a cell raises
    diffs = tutorial.compare(committed, fresh)
    assert not diffs, (
        f"docs/tutorial.ipynb is stale: run `{tutorial.REGENERATE}` and commit the notebook\n"
        + "\n".join(str(d) for d in diffs)
    )


def test_committed_with_outputs(committed):
    cells = _code_cells(committed)
    assert cells and all(c.execution_count is not None for c in cells)
    kinds = {k for c in cells for out in c.outputs for k, _ in tutorial.output_views(out)}
    assert {"text/html", "stream:stdout"} <= kinds
    assert any(k.startswith("image/") for k in kinds), "the figure is missing"
    assert "error" not in kinds
    assert "stream:stderr" not in kinds, "a committed cell wrote to stderr (a warning?)"


def test_identical_notebooks_agree(committed):
    assert tutorial.compare(committed, copy.deepcopy(committed)) == []


def _cell_decimals(o):
    """Decimals shown as whole table cells (``>1.23<``) of an HTML output."""
    html = _html(o) or ""
    text = tutorial.html_text(html) if html else ""
    return [n for n in tutorial._NUMBER.findall(text) if "." in n and f">{n}<" in html]


def test_an_altered_number_in_a_deterministic_cell_is_caught(committed):
    # The first decimal table cell of the first untagged HTML output having one, moved by
    # half (far beyond the untagged cells' last-digit tolerance).
    altered = copy.deepcopy(committed)
    _, out = _first(altered, "", _cell_decimals)
    number = _cell_decimals(out)[0]
    moved = f"{float(number) * 1.5:.6g}"
    out.data["text/html"] = out.data["text/html"].replace(f">{number}<", f">{moved}<", 1)
    diffs = tutorial.compare(committed, altered)
    assert len(diffs) == 1 and diffs[0].what == "text/html"
    assert moved in diffs[0].fresh and number in diffs[0].committed


def test_an_altered_word_is_caught_even_where_numbers_are_noise(committed):
    altered = copy.deepcopy(committed)
    _, out = _first(altered, "secure-noise", lambda o: _html(o) and "released" in _html(o))
    out.data["text/html"] = out.data["text/html"].replace("released", "published", 1)
    assert len(tutorial.compare(committed, altered)) == 1


def test_fresh_secure_noise_passes_but_a_changed_seeded_result_does_not(committed):
    # The secure release: any other numbers (fresh noise) are the same output.
    noisy = copy.deepcopy(committed)
    _, out = _first(noisy, "secure-noise", lambda o: _html(o) and "<td" in _html(o))
    html = out.data["text/html"]
    numbers = tutorial._NUMBER.findall(tutorial.html_text(html))
    for number in set(numbers):
        html = html.replace(f">{number}<", f">{float(number) + 3.25:.5g}<")
    assert html != out.data["text/html"]
    out.data["text/html"] = html
    assert tutorial.compare(committed, noisy) == []
    # The seeded audit: a result that moves by more than the tolerance is stale.
    changed = copy.deepcopy(committed)
    _, out = _first(changed, "seeded", lambda o: _html(o) and "undefended" in _html(o))
    text = tutorial.html_text(out.data["text/html"])
    accuracy = tutorial._NUMBER.findall(text.split("undefended")[0])[-1]  # the best accuracy
    out.data["text/html"] = out.data["text/html"].replace(
        f">{accuracy}<", f">{float(accuracy) - 0.2:.3g}<"
    )
    assert len(tutorial.compare(committed, changed)) == 1


def test_images_are_compared_by_presence_only(committed):
    other = copy.deepcopy(committed)
    _, out = _first(other, "seeded", lambda o: "image/png" in o.get("data", {}))
    out.data["image/png"] = out.data["image/png"][::-1]  # other bytes: fine
    assert tutorial.compare(committed, other) == []
    del out.data["image/png"]  # no figure: stale
    assert tutorial.compare(committed, other)


def test_an_added_or_missing_output_is_caught(committed):
    fewer = copy.deepcopy(committed)
    cell, _ = _first(fewer, "", _stdout)
    cell.outputs = []
    assert tutorial.compare(committed, fewer)
    edited = copy.deepcopy(committed)
    _code_cells(edited)[0].source += "\n# edited"
    assert tutorial.compare(committed, edited)[0].what == "the code itself"


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ("at 2026-11-23T23:48:20Z", "at 2027-01-02T03:04:05Z", True),
        ("obj at 0x7f3a9c", "obj at 0x55d0e1", True),
        ("hmac-sha256:c2628a83f1df1131", "hmac-sha256:029c8ffbea075a1c", True),
        ("OpenDP 0.16.0 discrete", "OpenDP 0.17.1 discrete", True),
        ("took 1.5 s", "took 12 ms", True),
        ("delta 0.000999819", "delta 0.000999820", True),  # one unit in the last digit
        ("delta 0.000999819", "delta 0.000999822", False),
        ("5 statistics", "6 statistics", False),
        ("error 616.7", "error 616.70000001", True),  # relative 1e-6
        ("bound 4.6e-16", "bound 9.1e-16", True),  # numerical-error level (absolute 1e-9)
        ("holds", "fails", False),
    ],
)
def test_volatile_parts_and_number_tolerance(old, new, same):
    tolerance = tutorial.TOLERANCES[""]
    agree = tutorial.texts_agree(tutorial.normalise(old), tutorial.normalise(new), tolerance)
    assert agree is same


def test_a_stream_split_into_two_outputs_is_the_same_output(committed):
    # Newer ipykernel releases flush a cell's prints as several stream outputs; the text is
    # what is compared, not how the kernel chunked it.
    import nbformat

    split = copy.deepcopy(committed)
    cell, out = _first(split, "", lambda o: _stdout(o) and len(o.text.split("\n")) > 2)
    first, rest = out.text.split("\n", 1)
    out.text = first + "\n"
    cell.outputs.insert(
        cell.outputs.index(out) + 1, nbformat.v4.new_output("stream", name="stdout", text=rest)
    )
    assert tutorial.compare(committed, split) == []
    out.text = "something else\n"
    assert len(tutorial.compare(committed, split)) == 1

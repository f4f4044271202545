"""`distpriv audit` on the example configurations of mean, event and several-attribute
secrets, their reports, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import one_line_error, run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = "\n[audit]\nn_shadow = 60\nn_test = 60\nseed = 0\n"


def _small(tmp_path: Path, name: str, replace: tuple[str, str] | None = None) -> Path:
    """The example with a small audit (and one line replaced)."""
    text = (EXAMPLES / name).read_text()
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path = tmp_path / name
    path.write_text(text + SMALL)
    return path


@pytest.mark.parametrize(
    ("name", "labels"),
    [
        ("adult-mean.toml", ["mean age = 37", "mean age = 40"]),
        (
            "adult-events.toml",
            [
                "the share of rows with income = '>50K' in [0.2, 0.3]",
                "the share of rows with income = '>50K' in [0.4, 0.5]",
            ],
        ),
    ],
)
def test_audit_example(name, labels, tmp_path, capsys):
    out, html = tmp_path / "audit.json", tmp_path / "audit.html"
    path = _small(tmp_path, name)
    status, text, err = run(
        ["audit", path, "--repetitions", "2", "--out", out, "--html", html], capsys
    )
    assert status == 0, err
    report = json.loads(out.read_text())
    assert report["labels"] == labels
    assert report["secret"]["type"] == {"adult-mean.toml": "mean"}.get(name, "event")
    names = [m["mechanism"] for m in report["mechanisms"]]
    assert names == ["none", "expm-g"]
    assert report["mechanisms"][1]["accuracy_allowed"] == pytest.approx(0.7313, abs=1e-3)
    assert "accuracy the guarantee allows any attack: expm-g" in text
    assert labels[0] in text
    page = html.read_text()
    assert "Accuracy the claim allows" in page


def test_audit_several_example(tmp_path, capsys):
    out, html = tmp_path / "audit.json", tmp_path / "audit.html"
    path = _small(tmp_path, "adult-two-secrets.toml", ('name = "auto"', 'name = "expm-g"'))
    status, text, err = run(
        ["audit", path, "--repetitions", "1", "--out", out, "--html", html], capsys
    )
    assert status == 0, err
    report = json.loads(out.read_text())
    attrs = report["attributes"]
    assert [a["predicate"] for a in attrs] == ["sex = 'Female'", "income = '>50K'"]
    for a in attrs:
        g = a["guarantees"]["expm-g"]
        assert (g["epsilon"], g["delta"]) == (1.0, 1e-3)
        assert 0 < g["delta_at_epsilon"] <= 1e-3 * (1 + 1e-6)
        assert [m["mechanism"] for m in a["mechanisms"]] == ["none", "expm-g"]
    # One table per attribute in the text, and each attribute's guarantee line.
    assert text.count("audit of share[") == 2
    assert "the share of rows with sex = 'Female': expm-g guarantees (epsilon 1" in text
    page = html.read_text()
    assert "Each attribute" in page and "Largest δ at ε over its pairs" in page


def test_mean_value_too_rare_is_one_line(tmp_path, capsys):
    out = tmp_path / "audit.json"
    path = _small(tmp_path, "adult-mean.toml", ("values = [37, 40]", "values = [21, 40]"))
    status, _, err = run(["audit", path, "--repetitions", "1", "--out", out], capsys)
    one_line_error(status, err, "too rare to audit")
    assert not out.exists()

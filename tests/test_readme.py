"""The README's Python example and its Adult table are what the code prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from pufferfish import calibrate, compare, estimate_priors
from pufferfish.tables.estimate import with_prior_sets

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme() -> str:
    if not README.is_file():  # pragma: no cover - tests run from a checkout
        pytest.skip("README.md not found")
    return README.read_text()


def test_python_example_prints_what_the_comment_says() -> None:
    block = re.search(r"```python\n(.*?)```", _readme(), re.S)
    assert block is not None
    code = block.group(1)
    expected = next(line for line in code.splitlines() if line.startswith("# l1"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert " / ".join(out.getvalue().strip().splitlines()) == expected.lstrip("# ")


def test_adult_table_matches_calibrate() -> None:
    rows = re.findall(r"^\| (0\.1|0\.5|1) \| (.+) \|$", _readme(), re.M)
    assert len(rows) == 6  # the mechanisms on the point estimate, then optimal under prior sets
    est = estimate_priors(
        "adult", secret="marital-status", public="workclass", pairs=[("Married-civ-spouse", "Never-married")]
    )
    for eps_text, cells in rows[:3]:
        got = {c.mechanism: c.scale for c in compare(est.scenario, float(eps_text))}
        printed = [float(v) for v in cells.split(" | ")]
        for mech, value in zip(
            ("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal"), printed, strict=True
        ):
            assert float(f"{got[mech]:.4g}") == value, (eps_text, mech)
    for eps_text, cells in rows[3:]:
        printed = [float(v) for v in cells.split(" | ")]
        for kind, value in zip(("none", "dkw", "l1"), printed, strict=True):
            got = calibrate(with_prior_sets(est, kind).scenario, float(eps_text)).scale
            assert float(f"{got:.4g}") == value, (eps_text, kind)


def test_multiuser_table_matches_reproductions() -> None:
    from pufferfish.reproduce import seed000_fig5a, seed000_fig9a

    rows = re.findall(r"^\| Fig (5\(a\)|9\(a\)) (\S+) \| (.+) \|$", _readme(), re.M)
    assert len(rows) == 6
    eps = (0.1, 0.5, 1.0, 2.0)
    curves = {"5(a)": seed000_fig5a(epsilons=eps), "9(a)": seed000_fig9a(epsilons=eps)}
    for fig, mech, cells in rows:
        got = curves[fig].column(mech)
        printed = [float(v) for v in cells.split(" | ")]
        assert [float(f"{g:.4g}") for g in got] == printed, (fig, mech)

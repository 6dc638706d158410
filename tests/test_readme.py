"""The README's and its reference's (docs/reference.md) Python example and Adult table are what
the code prints; the README's tour and ledger commands do what they say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from pufferfish import calibrate, compare, estimate_priors
from pufferfish.tables.estimate import with_prior_sets

README = Path(__file__).resolve().parents[1] / "README.md"
REFERENCE = README.parent / "docs" / "reference.md"


def _readme() -> str:
    """The README and the reference it links to (the README keeps the commands and the tour)."""
    if not README.is_file():  # pragma: no cover - tests run from a checkout
        pytest.skip("README.md not found")
    return README.read_text() + "\n" + REFERENCE.read_text()


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


def test_adult_table_command_prints_the_table() -> None:
    """Issue 44: the command the README gives for its Adult table prints the table's mechanisms
    (a categorical column's default is its mappings: the command needs --mechanism all)."""
    import json

    from typer.testing import CliRunner

    from pufferfish.cli.app import app

    text = " ".join(_readme().split())
    found = re.search(r"\(`pufferfish calibrate (adult --secret marital-status [^`]*)`", text)
    assert found is not None
    args = ["calibrate", *found.group(1).split(), "--json"]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    got = {(r["epsilon"], r["mechanism"]): r.get("scale") for r in json.loads(run.output)["results"]}
    rows = re.findall(r"^\| (0\.1|0\.5|1) \| (.+) \|$", _readme(), re.M)
    for eps_text, cells in rows[:3]:
        for mech, value in zip(("l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal"),
                               (float(v) for v in cells.split(" | ")), strict=True):  # fmt: skip
            assert float(f"{got[(float(eps_text), mech)]:.4g}") == value, (eps_text, mech)


@pytest.mark.slow
def test_ledger_commands_do_what_the_readme_says(tmp_path, monkeypatch) -> None:
    """Issue 42: the README's three ledger commands, run as written in a fresh folder: the second
    release is calibrated against the first to meet its budget of 0.6 together."""
    import json

    from typer.testing import CliRunner

    from pufferfish.cli.app import app

    text = _readme()
    start = text.index("## Releasing more than once")
    block = text[
        text.index("```bash", start) + len("```bash") : text.index("```", text.index("```bash", start) + 7)
    ]
    commands = [line.split()[1:] for line in block.strip().splitlines()]
    assert [c[0] for c in commands] == ["release", "release", "ledger"]
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in commands[:2]:
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*commands[2], "--json"])
    assert res.exit_code == 0, res.output
    (together,) = json.loads(res.output)["together"]
    assert together["rule"] == "exact joint check"
    assert 0.6 - 1e-6 < together["epsilon"] <= 0.6
    assert "0.621" in text and "0.658" in text and "9.19" in text


def test_the_tour_runs_the_commands_the_script_draws() -> None:
    """Issue 46: each stop of the README's tour shows the command ``scripts/tour_figures.py`` runs
    for its figure, the figure is in the repository, and the numbers quoted are the script's."""
    import runpy

    root = README.parent
    stops = runpy.run_path(str(root / "scripts" / "tour_figures.py"))["STOPS"]
    text = _readme()
    tour = text[text.index("## A tour") : text.index("## Contents")]
    blocks = re.findall(r"```bash\n(.*?)\n```", tour, re.S)
    assert blocks == [commands[0] for _, commands, _ in stops]
    for name, _, _ in stops:
        assert (
            f"](docs/figures/tour-{name}.svg)" in tour
            and (root / "docs" / "figures" / f"tour-{name}.svg").is_file()
        )
    printed = (root / "docs" / "figures" / "tour.txt").read_text()
    pairs = [("8.638", "8.638"), ("0.8024", "0.80235"), ("0.646", "0.6460"), ("24.17", "24.17"),
             ("1.095", "1.0947"), ("0.621", "0.6213"), ("0.658", "0.6578"), ("9.992", "9.9917")]  # fmt: skip
    for quoted, written in pairs:
        assert quoted in tour and written in printed, quoted

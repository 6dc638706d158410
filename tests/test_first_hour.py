"""Issue 56 (a user's first hour), the items done: refusals in one line before any work, nothing
left behind."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pufferfish.cli.app import app
from pufferfish.tables.domain import check_bounds

runner = CliRunner()
ADULT = ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
         "--public", "age", "--epsilon", "0.5"]  # fmt: skip


def _one_line(res) -> str:
    lines = res.output.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize("output", [".", ".."])
def test_an_output_that_is_a_folder_is_one_line(output, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(runner.invoke(app, [*ADULT, "--output", output]))
    assert "output must be a file such as out.csv" in line and repr(output) in line
    assert list(tmp_path.iterdir()) == []


def test_bounds_beyond_the_floats_integers_are_refused_naming_them(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(runner.invoke(app, [*ADULT, "--bounds", "0,1e200", "--output", "r.csv"]))
    assert "bounds must lie within +-2^53" in line and "'0,1e200'" in line
    assert list(tmp_path.iterdir()) == []
    assert check_bounds("0,9007199254740992") == (0.0, 2.0**53)
    with pytest.raises(ValueError, match="within"):
        check_bounds((-1e16, 0))


@pytest.mark.parametrize("ledger", ["r.csv", "r.report.json"])
def test_a_ledger_that_is_the_output_or_its_report_is_refused_before_any_work(
    ledger, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(runner.invoke(app, [*ADULT, "--output", "r.csv", "--ledger", ledger]))
    assert "ledger must differ from the output" in line
    assert list(tmp_path.iterdir()) == []  # no ledger created, nothing released


def test_a_series_ledger_that_is_the_output_is_refused_before_any_work(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["markov", "release", "mvad", "--id", "id", "--time", "month", "--state", "activity",
            "--target-state", "joblessness", "--epsilon", "1", "--output", "m.csv",
            "--ledger", "m.csv"]  # fmt: skip
    res = runner.invoke(app, args)
    assert "ledger must differ from the output" in _one_line(res)
    assert list(tmp_path.iterdir()) == []


def test_tour_stop_5_runs_in_an_empty_folder_with_the_shipped_system(tmp_path, monkeypatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    args = ["multiuser", "seed000-4users", "--user", "u4", "--pair-set", "P-Q", "--epsilon", "1", "--json"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = {r["mechanism"]: r for r in json.loads(res.stdout)["results"]}
    assert round(rows["optimal"]["scale"], 3) == 1.095  # the README's figure
    assert list(tmp_path.iterdir()) == []
    # a file of that name in the folder is read instead (a path wins)
    (tmp_path / "seed000-4users").write_text("{}")
    assert runner.invoke(app, args).exit_code == 1

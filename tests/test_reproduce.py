"""Reproductions of seed 000 Fig 4, 5(a), 8 and 9(a) (scale versus epsilon)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from pufferfish.reproduce import seed000_fig4, seed000_fig5a, seed000_fig8, seed000_fig9a, write_curves

EPS = (0.1, 0.5, 1.0, 2.0)


def test_fig5a_adult_education_white() -> None:
    """Fig 5(a): eq (14) is max|t|/eps = 16/eps (education-num 1..16); eq (13) is the optimum."""
    res = seed000_fig5a(epsilons=EPS)
    assert res.column("thm3-eq14") == pytest.approx(16.0 / np.array(EPS))
    assert res.column("thm3-eq13") == pytest.approx(res.column("optimal"), rel=1e-6)
    assert np.all(res.column("thm3-eq13") < res.column("thm3-eq14"))
    for e, eps in enumerate(EPS):
        assert np.nanmax(res.losses[e]) <= eps


def test_fig9a_adult_married_api_vs_aie() -> None:
    """Fig 9(a): Lemma 1 is 1/eps; Lemma 2 is below it; the optimum is below both."""
    res = seed000_fig9a(epsilons=EPS)
    assert res.column("lemma1") == pytest.approx(1.0 / np.array(EPS))
    assert np.all(res.column("lemma2") < res.column("lemma1"))
    assert np.all(res.column("optimal") <= res.column("lemma2"))


def test_fig4_and_fig8_four_users(tmp_path: Path) -> None:
    fig4 = seed000_fig4(epsilons=EPS)
    assert fig4.column("thm3-eq14") == pytest.approx(5.0 / np.array(EPS))
    fig8 = seed000_fig8(epsilons=EPS)
    assert np.all(fig8.column("lemma2") < fig8.column("lemma1"))
    paths = write_curves(fig8, tmp_path)
    assert [p.suffix for p in paths] == [".csv", ".md", ".svg"]
    csv_lines = paths[0].read_text().splitlines()
    assert csv_lines[0] == "epsilon,lemma1,lemma2,thm4,kantorovich,relaxed,optimal"
    assert len(csv_lines) == len(EPS) + 1
    root = ET.parse(paths[2]).getroot()
    assert root.tag.endswith("svg")
    assert "| 0.5 | 2 |" in paths[1].read_text()


@pytest.mark.slow
def test_cli_reproduce_writes_an_index_of_printed_and_our_values(tmp_path: Path) -> None:
    """`pufferfish reproduce`: seed 001 Table 4 rows with printed values, differences and agreement."""
    from typer.testing import CliRunner

    from pufferfish.cli.app import app
    from pufferfish.reproduce import reproduce

    res = CliRunner().invoke(app, ["reproduce", "--paper", "001", "--output", str(tmp_path)])
    assert res.exit_code == 0, res.output
    index = (tmp_path / "index.md").read_text()
    assert "| printed | ours | difference | agrees to printed digits |" in index
    assert "Student Performance" in index and "data set not shipped: not reproduced" in index
    rep = reproduce("001", tmp_path)
    rows = {(v.item, v.setting): v for v in rep.values}
    for eps in ("0.1", "0.5", "1"):
        for sim in ("Simulation (Figure 2b)", "Simulation (Figure 3b)"):
            for mech in ("l1", "kantorovich"):
                assert rows[(f"Table 4, {sim}, {mech}", f"eps = {eps}")].agrees
        assert rows[("Table 4, Simulation (Figure 3b), relaxed", f"eps = {eps}")].agrees
    # Finding: at eps = 0.2 the printed Alg. 1 value 0.54 is above the exact root 0.5327 (Alg. 1
    # returns the safe end of its final bracket); every other printed relaxed value of Fig 2b rounds.
    fig2b = [
        rows[("Table 4, Simulation (Figure 2b), relaxed", f"eps = {e:g}")] for e in (0.1, 0.2, 0.3, 0.4, 0.5)
    ]
    assert [v.agrees for v in fig2b] == [True, False, True, True, True]
    assert fig2b[1].ours == pytest.approx(0.5327, abs=1e-4) and fig2b[1].ours < fig2b[1].printed
    # Census Income: same data, different alphabet and unstated pair; Kantorovich agrees anyway.
    assert rows[("Table 4, Census Income, kantorovich", "eps = 0.5")].agrees
    assert not rows[("Table 4, Census Income, l1", "eps = 0.5")].agrees

    for paper, item in (("000", "Table 4 / Table 6 example"), ("002", "Appendix C")):
        rep = reproduce(paper, tmp_path / paper)
        v = next(v for v in rep.values if v.item.startswith(item))
        assert v.agrees and v.ours == v.printed
    # Seed 002 Fig 4 on Adult: Thm 2 (relaxed) below Thm 1 (Kantorovich) at every eps, as the paper says.
    fig4 = np.loadtxt(tmp_path / "002" / "seed002_fig4.csv", delimiter=",", skiprows=1)
    assert fig4.shape == (10, 4)
    assert np.all(fig4[:, 3] <= fig4[:, 2]) and np.all(fig4[:, 2] < fig4[:, 1])
    assert "not reproduced" in (tmp_path / "002" / "index.md").read_text()
    bad = CliRunner().invoke(app, ["reproduce", "--paper", "999", "--output", str(tmp_path)])
    assert (
        bad.exit_code == 1
        and "paper must be one of 000, 001, 002, 003, 004, markov, chen2023, got '999'" in bad.output
    )


def test_reproduce_markov_grid_of_song_et_al(tmp_path: Path) -> None:
    """`pufferfish reproduce markov`: the MATLAB code's figures at p0 = p1 = 0.9 and 0.6 (T = 100,
    eps 1) to 4 decimals, the exact optimum below MQMExact on every chain, table and figure."""
    from typer.testing import CliRunner

    from pufferfish.cli.app import app
    from pufferfish.reproduce import _markov

    values, files = _markov(tmp_path, (0.3, 0.6, 0.9))
    compared = [v for v in values if v.printed is not None]
    assert len(compared) == 6 and all(v.agrees for v in compared)
    optimum = {v.setting.split(",")[0]: v.ours for v in values if v.item.endswith("optimal (this project)")}
    assert optimum["p0 = 0.9"] == pytest.approx(8.6404, abs=5e-5)
    assert optimum["p0 = 0.6"] == pytest.approx(1.4673, abs=5e-5)
    grid = np.genfromtxt(files[0], delimiter=",", names=True)
    assert grid.size == 9 and set(grid.dtype.names) >= {"p0", "p1", "optimal", "mqmexact", "groupdp"}
    assert np.all(grid["optimal"] <= grid["mqmexact"] * (1 + 1e-9))
    assert np.all(grid["mqmexact"] <= grid["groupdp"] * (1 + 1e-12))
    assert files[1].read_text().startswith("<?xml")
    both = CliRunner().invoke(app, ["reproduce", "markov", "--paper", "001", "--output", str(tmp_path)])
    assert both.exit_code == 1 and "give the paper once" in both.output


def test_reproduce_chen2023_adult(tmp_path: Path) -> None:
    """`pufferfish reproduce chen2023`: Chen and Ohrimenko's mechanisms on their Adult release, the
    lower bounds of their true losses, and the certified row-composition and wasserstein-coupling."""
    from pufferfish.reproduce import reproduce
    from pufferfish.reproduce.chen2023 import chen2023_adult

    found = chen2023_adult(draws=2000, epsilons=(2.0,))
    rows = {(r.shares, r.mechanism): r for r in found.rows}
    # one direction of noise tells the two counts: far above the eps claimed
    assert found.count_loss[(0.45, 0.55)][1] > 15.0
    dirm = rows[((0.45, 0.55), "DirM (L)")]
    assert dirm.bound.startswith("eps ") and float(dirm.bound.split()[1]) > 15.0
    dau = rows[((0.45, 0.55), "DauM (G)")]
    assert float(dau.bound.split()[1]) > 1e-3 and dau.ours is None  # their delta 1e-3 refuted
    coupled = rows[((0.45, 0.55), "wasserstein-coupling")]
    gdp = rows[((0.45, 0.55), "GDP (L), k = n")]
    assert coupled.bound == "certified" and coupled.l2_error < gdp.l2_error / 5
    expm = rows[((0.45, 0.55), "ExpM (L)")]
    assert expm.l2_error == pytest.approx(10.75, rel=0.05)  # theirs printed 10.1
    # ExpM (L) adds product Laplace noise: the composition theorem bounds its loss from above too,
    # and at their eps 2 that bound is above 2 (neither refuted nor certified)
    assert float(expm.bound.split()[1]) < 2.0 < expm.upper < 2.2
    # the goal: certified at eps 2 with less L2 error than every mechanism not refuted
    ours = rows[((0.45, 0.55), "row-composition")]
    assert ours.bound == "certified" and ours.l2_error < expm.l2_error < coupled.l2_error / 5
    for name in ("ExpM (G)", "EigM (G)", "GDP (G), k = n", "GDP (L), k = n"):
        assert ours.l2_error < rows[((0.45, 0.55), name)].l2_error
    rep = reproduce("chen2023", tmp_path)
    assert {p.name for p in rep.files} == {"index.md", "chen2023-adult.md", "chen2023-adult.csv"}
    assert sum(v.printed is not None for v in rep.values) == 5

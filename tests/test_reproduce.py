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

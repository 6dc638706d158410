"""Validation of DiscretePrior, AdversaryPrior and Scenario."""

from __future__ import annotations

import numpy as np
import pytest

from pufferfish import AdversaryPrior, DiscretePrior, Scenario


def test_renormalises_within_tolerance() -> None:
    p = DiscretePrior([0.0, 2.5], [0.5 + 4e-10, 0.5])
    assert p.pmf.sum() == pytest.approx(1.0, abs=1e-15)
    assert p.support.tolist() == [0.0, 2.5]


def test_arrays_are_read_only() -> None:
    p = DiscretePrior([0, 1], [0.5, 0.5])
    with pytest.raises(ValueError):
        p.pmf[0] = 1.0


@pytest.mark.parametrize(
    ("support", "pmf", "message"),
    [
        ([0, 1], [0.6, 0.6], "pmf must sum to 1 (within 1e-9), got a sum of 1.2"),
        ([0, 1], [1.1, -0.1], "pmf must be >= 0, got -0.1 at index 1"),
        ([1, 0], [0.5, 0.5], "support must be strictly increasing, got 1.0 then 0.0 at index 0"),
        ([0, 0], [0.5, 0.5], "support must be strictly increasing"),
        ([0, np.inf], [0.5, 0.5], "support must be finite, got inf at index 1"),
        ([0, 1], [np.nan, 1.0], "pmf must be finite, got nan at index 0"),
        ([0, 1, 2], [0.5, 0.5], "support and pmf must have the same length, got 3 and 2"),
        ([], [], "support must have at least one entry"),
        ([[0, 1]], [[0.5, 0.5]], "support must be 1-D"),
        (["a", "b"], [0.5, 0.5], "support must be a 1-D array of real numbers"),
    ],
)
def test_bad_priors_name_argument_rule_and_value(support, pmf, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DiscretePrior(support, pmf)


def test_from_counts_and_on_grid() -> None:
    p = DiscretePrior.from_counts([1, 3], [3, 1])
    assert p.pmf.tolist() == [0.75, 0.25]
    assert p.on([0, 1, 2, 3]).tolist() == [0, 0.75, 0, 0.25]
    with pytest.raises(ValueError, match="support must contain 3.0"):
        p.on([0, 1, 2])
    with pytest.raises(ValueError, match="counts must have a positive sum"):
        DiscretePrior.from_counts([0, 1], [0, 0])


def test_scenario_validation() -> None:
    a = DiscretePrior([0, 1], [0.5, 0.5])
    rho = AdversaryPrior("rho", {"x": a, "y": a})
    with pytest.raises(ValueError, match="pairs must hold at least one"):
        Scenario((), (rho,))
    with pytest.raises(ValueError, match="two distinct secrets"):
        Scenario((("x", "x"),), (rho,))
    with pytest.raises(ValueError, match="lacks \\['z'\\]"):
        Scenario((("x", "z"),), (rho,))
    with pytest.raises(ValueError, match="distinct names"):
        Scenario((("x", "y"),), (rho, rho))
    with pytest.raises(TypeError, match="must be a DiscretePrior"):
        AdversaryPrior("bad", {"x": [0.5, 0.5]})  # type: ignore[dict-item]
    sc = Scenario((("x", "y"), ("y", "x")), (rho,))
    assert sc.secrets == ("x", "y")
    assert len(list(sc.iter_pairs())) == 2

"""Shared fixtures, hypothesis profiles and strategies.

Hypothesis profiles: ``quick`` (default, used by CI) and ``thorough`` (10,000 examples per
property). Select with ``PUFFERFISH_HYPOTHESIS_PROFILE=thorough pytest``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pufferfish import DiscretePrior, Scenario

settings.register_profile(
    "quick", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("PUFFERFISH_HYPOTHESIS_PROFILE", "quick"))


@pytest.fixture(autouse=True)
def _signal_handlers() -> Iterator[None]:
    """Restore SIGINT and SIGTERM after each test: the command line's ``main()``, called in-process
    by some tests, ignores both when its command ends (as a process about to exit), which child
    processes would inherit (a pool of workers that ignore SIGTERM cannot be terminated)."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@st.composite
def discrete_priors(draw: st.DrawFn, max_size: int = 7, integer: bool | None = None) -> DiscretePrior:
    """A prior on 1..max_size points: integers or reals in [-10, 10], some masses zero or tiny."""
    n = draw(st.integers(1, max_size))
    use_int = draw(st.booleans()) if integer is None else integer
    if use_int:
        values = draw(st.lists(st.integers(-10, 10), min_size=n, max_size=n, unique=True))
    else:
        values = draw(
            st.lists(
                st.floats(-10, 10, allow_nan=False).map(lambda v: round(v, 3)),
                min_size=n,
                max_size=n,
                unique=True,
            )
        )
    support = np.sort(np.asarray(values, dtype=float))
    weights = draw(
        st.lists(
            st.one_of(st.just(0.0), st.just(1e-6), st.floats(0.01, 1.0)),
            min_size=support.size,
            max_size=support.size,
        )
    )
    w = np.asarray(weights)
    if w.sum() <= 0:
        w[draw(st.integers(0, support.size - 1))] = 1.0
    return DiscretePrior(support, w / w.sum())


@st.composite
def prior_pairs(draw: st.DrawFn, max_size: int = 7) -> Scenario:
    """A one-pair scenario; half the time both priors share one support."""
    p = draw(discrete_priors(max_size=max_size))
    if draw(st.booleans()):
        w = np.asarray(draw(st.lists(st.floats(0.0, 1.0), min_size=p.size, max_size=p.size)))
        if w.sum() <= 0:
            w[0] = 1.0
        q = DiscretePrior(p.support, w / w.sum())
    else:
        q = draw(discrete_priors(max_size=max_size))
    return Scenario.single(p, q)


epsilons = st.floats(0.01, 3.0, allow_nan=False)


def brute_force_log_density(prior: DiscretePrior, ys: np.ndarray, scale: float) -> np.ndarray:
    """O(n * len(ys)) oracle: log sum_l p_l e^{-|y - x_l|/scale} / (2 scale), by logsumexp."""
    from scipy.special import logsumexp

    with np.errstate(divide="ignore"):
        logp = np.log(prior.pmf)
    terms = logp[None, :] - np.abs(ys[:, None] - prior.support[None, :]) / scale
    return logsumexp(terms, axis=1) - np.log(2 * scale)


def brute_force_loss(scenario: Scenario, scale: float, extra: np.ndarray | None = None) -> float:
    """Max |log-ratio| over the union support (and ``extra`` points), by the O(n^2) oracle."""
    worst = 0.0
    for _, _, p, q in scenario.iter_pairs():
        ys = np.union1d(p.support, q.support)
        if extra is not None:
            ys = np.union1d(ys, extra)
        diff = brute_force_log_density(p, ys, scale) - brute_force_log_density(q, ys, scale)
        worst = max(worst, float(np.abs(diff).max()))
    return worst

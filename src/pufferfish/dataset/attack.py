"""A property-inference attack on the released statistics: a shadow classifier guesses the share.

Chen and Ohrimenko (2023; their code ``mgcsls/mechanisms-global-properties``) train scikit-learn's
logistic regression on statistics of data sets drawn at each of two shares and measure its
accuracy on fresh ones (0.91-0.925 on Adult's five statistics, n = 100, 0.4 vs 0.6, no noise).
Here each data set is drawn as the model says (SPEC sec 8): ``K ~ Bin(n, theta)`` rows drawn with
replacement from the table's rows with the property, ``n - K`` from those without; its statistics
get a release's calibrated noise (:func:`~pufferfish.dataset.release.plan_release`; a seeded
NumPy sampler: this is a simulation, not a release). The
classifier (standardised features, then logistic regression) is trained on noisy shadow data
sets of both shares, as an adversary who knows the mechanism would, and scored on fresh noisy
ones.

The bound: with two equally likely shares, eps-pufferfish privacy caps any guess's accuracy at
``e^eps / (1 + e^eps)`` (a test between the two shares with type I and II errors ``a, b`` must
have ``1 - a <= e^eps b`` and ``1 - b <= e^eps a``; the sum gives ``(1 - a) + (1 - b) <=
2 e^eps / (1 + e^eps)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import check_epsilon
from pufferfish.dataset.calibrate import property_request
from pufferfish.dataset.model import PropertyModel
from pufferfish.dataset.release import plan_release
from pufferfish.dataset.spec import PropertySpec, StatisticSpec
from pufferfish.dataset.table import RowVectors, read_property_table


@dataclass(frozen=True)
class AttackResult:
    """The shadow classifier's accuracy without and with the calibrated noise.

    Attributes
    ----------
    shares : (float, float)
    rows : int
        ``n``, the rows of each simulated data set.
    epsilon : float
    mechanism : str
    scales : tuple of float
        The Laplace scale of each statistic.
    accuracy_without_noise, accuracy_with_noise : float
        On ``test`` fresh data sets of each share (in [0, 1]).
    bound : float
        ``e^eps / (1 + e^eps)``.
    sampling_error : float
        Three standard errors of an accuracy over ``2 test`` data sets, ``3 * 0.5 / sqrt(2 test)``.
    train, test : int
        Data sets of each share for training and for scoring.
    """

    shares: tuple[float, float]
    rows: int
    epsilon: float
    mechanism: str
    scales: tuple[float, ...]
    accuracy_without_noise: float
    accuracy_with_noise: float
    bound: float
    sampling_error: float
    train: int
    test: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "shares": list(self.shares),
            "rows": self.rows,
            "epsilon": self.epsilon,
            "mechanism": self.mechanism,
            "scales": list(self.scales),
            "accuracy_without_noise": self.accuracy_without_noise,
            "accuracy_with_noise": self.accuracy_with_noise,
            "bound": self.bound,
            "sampling_error": self.sampling_error,
            "train": self.train,
            "test": self.test,
        }


def attack_property(
    data: Any,
    *,
    property: str | PropertySpec,
    epsilon: float,
    rows: int,
    queries: str | Sequence[str | StatisticSpec] = "count",
    shares: str | Sequence[float] = (0.45, 0.55),
    mechanism: str | None = None,
    train: int = 200,
    test: int = 200,
    weights: str = "rows",
    prior_set: str = "none",
    confidence: float = 0.95,
    rng: np.random.Generator | int | None = 0,
) -> AttackResult:
    """Train and score the shadow classifier (module docstring).

    Parameters
    ----------
    data, property, queries
        As :func:`~pufferfish.dataset.calibrate.calibrate_property`.
    epsilon : float
        Finite and > 0.
    rows : int
        ``n`` of each simulated data set (>= 1).
    shares : str or sequence of float
        Exactly two shares.
    mechanism : str, optional
        As :func:`~pufferfish.dataset.release.release_property` chooses it
        (:func:`~pufferfish.dataset.release.plan_release`): the noise simulated is a release's.
    train, test : int
        Data sets of each share to train on and to score (>= 10 each).
    weights, prior_set, confidence
        As :func:`~pufferfish.dataset.release.release_property` (the simulated data sets are
        drawn from the point estimate; a prior set only raises the noise).
    rng : numpy.random.Generator, int or None
        The simulation's seed (default 0; None: fresh entropy).

    Returns
    -------
    AttackResult

    Raises
    ------
    ValueError
        On a bad argument, or when the mechanism does not apply.
    DataError
        If the table does not fit the property and queries.
    """
    eps = check_epsilon(epsilon)
    named = [mechanism] if mechanism is not None else None
    request = property_request(
        data, property, eps, queries, shares, rows, 0.0, "laplace", named, weights, prior_set, confidence
    )
    if len(request.shares) != 2:
        raise ValueError(f"shares must be exactly two for the attack, got {list(request.shares)}")
    for name, value in (("train", train), ("test", test)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 10:
            raise ValueError(f"{name} must be an integer >= 10, got {value!r}")
    table = read_property_table(request.data, request.prop, request.statistics)
    assert request.rows is not None
    model = PropertyModel(table, request.shares, request.rows, request.prior_set, request.confidence)
    plan = plan_release(model, eps, mechanism, 0.0, "laplace", weights=request.weights)
    chosen, scales = plan.mechanism, plan.scales
    gen = np.random.default_rng(rng)
    kinds = [s.kind for s in request.statistics]

    def sets(count: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        vec = table.row_vectors
        x = [_statistics(vec, t, model.rows, kinds, gen) for t in model.shares for _ in range(count)]
        return np.array(x), np.repeat(np.arange(2), count)

    x_train, y_train = sets(train)
    x_test, y_test = sets(test)
    noise = np.array(scales)
    plain = _score(x_train, y_train, x_test, y_test)
    noisy = _score(
        x_train + gen.laplace(0.0, noise, x_train.shape), y_train,
        x_test + gen.laplace(0.0, noise, x_test.shape), y_test,
    )  # fmt: skip
    bound = math.exp(eps) / (1.0 + math.exp(eps))
    margin = 3.0 * 0.5 / math.sqrt(2 * test)
    shares_pair = (model.shares[0], model.shares[1])
    return AttackResult(
        shares_pair, model.rows, eps, chosen, tuple(scales), plain, noisy, bound, margin, train, test
    )


def _statistics(
    vectors: RowVectors, theta: float, n: int, kinds: Sequence[str], gen: np.random.Generator
) -> NDArray[np.float64]:
    """The statistics of one data set of ``n`` rows drawn at share ``theta``: ``K ~ Bin(n, theta)``
    rows drawn from the table's rows with the property, the others from those without (a row's
    vector of values drawn with probability its count over the group's)."""
    k = int(gen.binomial(n, theta))
    picked = np.concatenate(
        [
            vectors.with_support[gen.choice(len(vectors.with_counts), k, p=_weights(vectors.with_counts))],
            vectors.without_support[
                gen.choice(len(vectors.without_counts), n - k, p=_weights(vectors.without_counts))
            ],
        ]
    )
    total = picked.sum(axis=0)
    return np.where(np.array([kind == "mean" for kind in kinds]), total / n, total)


def _weights(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    return counts / counts.sum()


def _score(
    x_train: NDArray[np.float64],
    y_train: NDArray[np.int64],
    x_test: NDArray[np.float64],
    y_test: NDArray[np.int64],
) -> float:
    """Accuracy on the test sets of a logistic regression on standardised features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression())
    clf.fit(x_train, y_train)
    return float(clf.score(x_test, y_test))

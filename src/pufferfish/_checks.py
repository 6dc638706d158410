"""Argument checks shared by the public API.

Every check raises :class:`ValueError` (or :class:`TypeError`) whose message names the argument,
the rule and the value it got, e.g. ``epsilon must be finite and > 0, got -1.0``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Longest label shown whole in a message or a printed table; a longer one is shortened to its
#: first characters and its length (issue 34: a 60 KB label took 31.8 s to render, and an error
#: message echoed every secret value in full). Outputs and reports keep every label whole.
LABEL_CHARS = 60


def short_text(text: Any, limit: int = LABEL_CHARS) -> str:
    """``text`` as a string, or its first ``limit - 20`` characters, ``…`` and its length.

    Examples
    --------
    >>> short_text("Married-civ-spouse")
    'Married-civ-spouse'
    >>> short_text("x" * 100)
    'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (100 characters)'
    """
    s = str(text)
    return s if len(s) <= limit else f"{s[: limit - 20]}… ({len(s):,} characters)"


def short_repr(text: Any, limit: int = LABEL_CHARS) -> str:
    """``repr(text)``, or for a long string the repr of its start and its length (see
    :func:`short_text`)."""
    if isinstance(text, str) and len(text) > limit:
        return f"{text[: limit - 20]!r}… ({len(text):,} characters)"
    return repr(text)


def short_list(values: Any, limit: int = 12) -> str:
    """A list for a message: whole up to ``limit`` items, else its first ``limit - 2``, ``...``,
    its last and how many (issue 55: an unknown target printed 500 states on one line).

    Examples
    --------
    >>> short_list(["a", "b"])
    "['a', 'b']"
    >>> short_list([str(i) for i in range(500)])
    "['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ..., '499'] (500 in all)"
    """
    items = [short_repr(v) for v in values]
    if len(items) <= limit:
        return "[" + ", ".join(items) + "]"
    return "[" + ", ".join([*items[: limit - 2], "...", items[-1]]) + f"] ({len(items):,} in all)"


#: Largest epsilon accepted. A privacy loss of exp(20) ~ 4.9e8 bounds no realistic adversary;
#: beyond it the calibrators' formulas (exp(epsilon) times a spread) head for float64 overflow
#: (epsilon ~ 709) and the scales fall below 1e-8 of the values, where the exact checks' interval
#: refinement cannot resolve the release density (measured: the eps-MI check on Adult age at
#: epsilon 35 ran for over 300 s; at 20 the whole comparison takes 9 to 14 s).
EPSILON_MAX = 20.0


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking it is finite, > 0 and <= :data:`EPSILON_MAX`."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}")
    if value > EPSILON_MAX:
        raise ValueError(
            f"{name} must be <= {EPSILON_MAX:g} (exp({name}) ~ 4.9e8 already bounds no adversary), "
            f"got {epsilon!r}"
        )
    return value


def check_scale(scale: Any, name: str = "scale") -> float:
    """Return ``scale`` as a float after checking it is finite and >= 0."""
    try:
        value = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be finite and >= 0, got {scale!r}") from None
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be finite and >= 0, got {scale!r}")
    return value


def check_epsilons(epsilons: Iterable[Any], name: str = "epsilon") -> tuple[float, ...]:
    """Check every value of ``epsilons`` with :func:`check_epsilon`; at least one is needed."""
    values = tuple(check_epsilon(e, name) for e in epsilons)
    if not values:
        raise ValueError(f"{name} needs at least one value, got none")
    return values


def as_float_vector(values: Any, name: str, *, allow_neg_inf: bool = False) -> NDArray[np.float64]:
    """Return ``values`` as a 1-D float64 array of finite numbers with at least one entry.

    With ``allow_neg_inf``, ``-inf`` entries (log of zero) are accepted too. A read-only float64
    array that owns its memory is returned as it is (nobody can change it: many priors share one
    support this way, e.g. the ``T + 1`` counts of :func:`pufferfish.markov.count_priors`); any
    other input is copied.
    """
    owned = (
        isinstance(values, np.ndarray)
        and values.dtype == np.float64
        and not values.flags.writeable
        and values.base is None
    )
    try:
        arr = values if owned else np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers, got {values!r}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must have at least one entry, got an empty array")
    bad = ~np.isfinite(arr)
    if allow_neg_inf:
        bad &= arr != -np.inf
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite, got {float(arr[k])!r} at index {k}")
    return arr


def check_delta(delta: Any) -> float:
    """Return ``delta`` as a float after checking ``0 <= delta < 1``."""
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}") from None
    if not (0.0 <= value < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return value


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a bool: True or False only (not 0, 1 or a string).

    Raises
    ------
    ValueError
        Naming ``name`` and the value otherwise.
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value

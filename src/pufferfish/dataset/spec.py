"""What a dataset-level release names: the property whose share is the secret, and the statistics.

A *property* is a predicate on one column of a row (:class:`PropertySpec`): ``COLUMN=VALUE`` or
``COLUMN!=VALUE`` compare the text as written (a CSV's ``>50K`` or ``007`` stay as written), and
``COLUMN>=x``, ``>``, ``<=``, ``<`` compare a numeric column with the finite number ``x``.

A *statistic* is a sum over the rows of a per-row value ``f(row)`` (:class:`StatisticSpec`):

* ``count``: the rows with the property (``f = 1`` if the row has it, else 0);
* ``count:COLUMN=VALUE``: the rows whose ``COLUMN`` is ``VALUE`` as written (a missing cell is not
  ``VALUE``);
* ``sum:COLUMN``: the sum of a numeric column;
* ``mean:COLUMN``: that sum divided by the number of rows ``n`` (fixed by the model).

Chen and Ohrimenko (2023, AISTATS, arXiv 2207.08367) release counts and means of this kind of the
UCI Adult table; Zhang, Ohrimenko and Cummings (2022, FAccT, arXiv 2009.04013) name the secret
(SPEC sec 8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Comparison operators of a property, longest first (``>=`` before ``>``).
OPERATORS = (">=", "<=", "!=", "=", ">", "<")

#: The kinds of statistic (:class:`StatisticSpec`).
STATISTIC_KINDS = ("count", "sum", "mean")


@dataclass(frozen=True)
class PropertySpec:
    """A predicate on one column: the property whose share of rows is the secret.

    Parameters
    ----------
    column : str
        The column (non-empty).
    operator : {"=", "!=", ">=", ">", "<=", "<"}
        ``=`` and ``!=`` compare the text as written; the others a number.
    value : str
        The text compared (``=``, ``!=``) or a finite number written as text (the others).

    Raises
    ------
    ValueError
        If the column is empty, the operator unknown, or an order comparison's value is not a
        finite number.
    """

    column: str
    operator: str
    value: str

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column.strip():
            raise ValueError(f"property column must be a non-empty name, got {self.column!r}")
        if self.operator not in OPERATORS:
            raise ValueError(
                f"property operator must be one of {', '.join(OPERATORS)}, got {self.operator!r}"
            )
        if self.operator not in ("=", "!="):
            number = _number(self.value)
            if number is None:
                raise ValueError(
                    f"property {self.text!r}: {self.operator} compares a number, got {self.value!r}"
                )

    @classmethod
    def parse(cls, text: str) -> PropertySpec:
        """``COLUMN=VALUE``, ``COLUMN!=VALUE`` or ``COLUMN>=x`` (also ``>``, ``<=``, ``<``).

        Raises
        ------
        ValueError
            If ``text`` holds no operator, or an invalid part (see the class).
        """
        if not isinstance(text, str):
            raise ValueError(f"property must be text such as 'income=>50K', got {text!r}")
        at = [(text.find(op), op) for op in OPERATORS if text.find(op) > 0]
        if not at:
            raise ValueError(
                "property must be COLUMN=VALUE, COLUMN!=VALUE or COLUMN>=NUMBER (also >, <=, <), "
                f"got {text!r}"
            )
        pos = min(p for p, _ in at)
        op = next(o for p, o in sorted(at, key=lambda t: (t[0], -len(t[1]))) if p == pos)
        return cls(text[:pos].strip(), op, text[pos + len(op) :].strip())

    @property
    def text(self) -> str:
        """The property as written on the command line (``income=>50K``)."""
        return f"{self.column}{self.operator}{self.value}"

    @property
    def numeric(self) -> bool:
        """Whether it compares a number (an order comparison)."""
        return self.operator not in ("=", "!=")


@dataclass(frozen=True)
class StatisticSpec:
    """One released statistic: a sum over the rows of a per-row value (module docstring).

    Parameters
    ----------
    kind : {"count", "sum", "mean"}
    column : str or None
        The column summed (``sum``, ``mean``) or compared (``count:COLUMN=VALUE``); None for the
        count of rows with the property.
    value : str or None
        The label counted (``count:COLUMN=VALUE``), as written; None otherwise.

    Raises
    ------
    ValueError
        If the parts do not form one of the four statistics.
    """

    kind: str
    column: str | None = None
    value: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in STATISTIC_KINDS:
            raise ValueError(f"statistic kind must be one of {', '.join(STATISTIC_KINDS)}, got {self.kind!r}")
        if self.kind in ("sum", "mean") and (not self.column or self.value is not None):
            raise ValueError(f"statistic {self.kind} needs a column and no value: '{self.kind}:COLUMN'")
        if self.kind == "count" and (self.column is None) != (self.value is None):
            raise ValueError("statistic count takes no column ('count') or a label ('count:COLUMN=VALUE')")

    @classmethod
    def parse(cls, text: str) -> StatisticSpec:
        """``count``, ``count:COLUMN=VALUE``, ``sum:COLUMN`` or ``mean:COLUMN``.

        Raises
        ------
        ValueError
            If ``text`` is none of these.
        """
        if not isinstance(text, str):
            raise ValueError(f"query must be text such as 'mean:age', got {text!r}")
        t = text.strip()
        if t == "count":
            return cls("count")
        kind, sep, rest = t.partition(":")
        rest = rest.strip()
        if sep and kind == "count" and "=" in rest:
            column, _, value = rest.partition("=")
            if column.strip():
                return cls("count", column.strip(), value.strip())
        if sep and kind in ("sum", "mean") and rest:
            return cls(kind, rest)
        raise ValueError(f"query must be count, count:COLUMN=VALUE, sum:COLUMN or mean:COLUMN, got {text!r}")

    @property
    def text(self) -> str:
        """The statistic as written on the command line (``mean:age``)."""
        if self.column is None:
            return self.kind
        if self.kind == "count":
            return f"count:{self.column}={self.value}"
        return f"{self.kind}:{self.column}"


def parse_statistics(text: str) -> tuple[StatisticSpec, ...]:
    """Comma-separated statistics (``count,mean:age``), each :meth:`StatisticSpec.parse`; a label
    holding a comma cannot be named here (use the Python API).

    Raises
    ------
    ValueError
        If one is invalid, none is given, or one is repeated.
    """
    parts = [p for p in (s.strip() for s in str(text).split(",")) if p]
    if not parts:
        raise ValueError(f"query must name at least one statistic, got {text!r}")
    out = tuple(StatisticSpec.parse(p) for p in parts)
    names = [s.text for s in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"query must name each statistic once, got {', '.join(repeated)} twice")
    return out


def parse_shares(text: str) -> tuple[float, ...]:
    """Comma-separated shares ``theta`` (``0.45,0.55``): at least two, distinct, each in [0, 1].

    Raises
    ------
    ValueError
        If fewer than two, one is not a number in [0, 1], or two are equal.
    """
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    shares = []
    for p in parts:
        x = _number(p)
        if x is None or not 0.0 <= x <= 1.0:
            raise ValueError(f"shares must be numbers in [0, 1], got {p!r}")
        shares.append(x)
    if len(shares) < 2:
        raise ValueError(f"shares must hold at least two values 'A,B', got {text!r}")
    if len(set(shares)) != len(shares):
        raise ValueError(f"shares must be distinct, got {text!r}")
    return tuple(shares)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None

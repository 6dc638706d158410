"""Columns written in clear beside a release, and what each says about the secret (issue 41).

A release writes its released columns and, beside them, only the columns the user names. A
column kept in clear with ``keep_unchecked`` is not covered by the exact check: the guarantee
then *assumes* it independent of the secret and of the released columns together
(:data:`ASSUMED`), and the report states the exact loss of the whole written record at the
estimate (:mod:`pufferfish.pipeline.unchecked`). Each column's loss alone, computed here, is a
lower bound on that (the column alone is a post-processing of the record): the largest privacy
loss of the column released as it is (an identity channel) under the empirical priors,
``max_v |log P(v | s_i) - log P(v | s_j)|`` over the pairs and the column's values, a missing
cell being one more value (``inf`` when a value occurs under one secret of a pair only; SPEC
sec 7). The secret column is never written.

The loss is computed by the engine in one aggregate per pair and column (the same SQL for DuckDB
and Spark); only the deciding value reaches Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pufferfish.tables.source import DataError


@dataclass(frozen=True)
class KeptColumn:
    """A column written in clear, outside the check, and its measured loss.

    Attributes
    ----------
    column : str
    loss : float
        Nats, ``>= 0`` (``inf`` when a value occurs under one secret of a pair only).
    pair : (str, str)
        The pair that decides it.
    value : str or None
        The value that decides it, as text (None: a missing cell).
    """

    column: str
    loss: float
    pair: tuple[str, str]
    value: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``inf`` as the string ``"inf"``)."""
        return {
            "column": self.column,
            "loss_of_the_column_alone": self.loss if math.isfinite(self.loss) else "inf",
            "pair": list(self.pair),
            "value": self.value,
            "covered_by_the_guarantee": False,
            "assumed": ASSUMED,
            "note": "the column alone is a lower bound on the loss of the whole written record, not a bound "
            "(see whole_record)",
        }

    def sentence(self) -> str:
        """``"id alone: loss inf (value '7', pair 'A' vs 'B')"``: a lower bound on the record's."""
        shown = "a missing cell" if self.value is None else repr(self.value)
        loss = "inf" if not math.isfinite(self.loss) else f"{self.loss:.6g}"
        return f"{self.column} alone: loss {loss} (value {shown}, pair {self.pair[0]!r} vs {self.pair[1]!r})"


#: What a column kept outside the check is assumed to be (issue 54: independence of the secret
#: alone is not enough; ``u = x XOR [s = B]`` is independent of ``s`` and gives it with ``x``).
ASSUMED = "independent of the secret and of the released columns together (jointly, not only of each)"


def check_kept(
    kept: Any,
    *,
    secret: str,
    released: Sequence[str],
    name: str = "keep_unchecked",
    inside: Sequence[str] = (),
) -> tuple[str, ...]:
    """The columns to keep in clear, validated at the edge: distinct, neither the secret (never
    written) nor a released column; ``name`` is the argument the messages name (``keep`` for
    the columns kept inside the check).

    Parameters
    ----------
    kept : str, sequence of str or None
        ``"a,b"`` or a list; None or empty: none.
    secret : str
    released : sequence of str
    inside : sequence of str
        The columns kept inside the check (``keep``), named in the message if also here.

    Raises
    ------
    ValueError
        Naming the column and the rule.
    """
    if kept is None:
        return ()
    names = [c.strip() for c in kept.split(",")] if isinstance(kept, str) else [str(c) for c in kept]
    if not all(names) or (isinstance(kept, str) and not names):
        raise ValueError(f"{name} must name columns 'a,b' (none empty), got {kept!r}")
    if secret in names:
        raise ValueError(f"{name} cannot hold the secret column {secret!r}: the secret is never written")
    for c in names:
        if c in inside:
            raise ValueError(
                f"{c!r} is named by both keep (written as it is, inside the check) and {name} (written "
                "outside it): name it in one"
            )
        if c in released:
            raise ValueError(f"{name} names {c!r}, a released column: it is written released, not in clear")
    if len(set(names)) != len(names):
        raise ValueError(f"{name} names a column twice, got {names}")
    return tuple(names)


def written_columns(table_columns: Sequence[str], released: Sequence[str], kept: Sequence[str]) -> list[str]:
    """The columns a release writes, in the table's order: the released ones and the kept ones.

    Raises
    ------
    DataError
        If a kept column is not in the table (the message lists the columns).
    """
    missing = [c for c in kept if c not in table_columns]
    if missing:
        raise DataError(
            f"keep_unchecked names {missing[0]!r}, which is not a column; columns: {list(table_columns)}"
        )
    chosen = set(released) | set(kept)
    return [c for c in table_columns if c in chosen]


def measured_losses(
    run: Callable[[str], list[Any]],
    *,
    quote: Callable[[str], str],
    text: str,
    secret: str,
    pairs: Sequence[tuple[str, str]],
    columns: Sequence[str],
    weight: str | None,
) -> list[KeptColumn]:
    """The measured loss of each kept column (module docstring), by ``run`` (SQL on a table or
    view named ``t``; ``quote`` quotes an identifier, ``text`` is the engine's text type).

    One query per pair and column: a value seen under one secret only comes first (loss
    ``inf``), else the value of the largest ``|log(n_i / N_i) - log(n_j / N_j)|``; counts are
    rows (or the weights' sums), ``N`` their totals over the column's values (a window sum).
    """
    s = f"CAST({quote(secret)} AS {text})"
    w = "1.0" if weight is None else f"CAST({quote(weight)} AS DOUBLE)"
    out = []
    for column in columns:
        v = f"CAST({quote(column)} AS {text})"
        worst: KeptColumn | None = None
        for a, b in pairs:
            la, lb = _literal(a), _literal(b)
            top = run(
                f"WITH g AS (SELECT {v} AS v, SUM(CASE WHEN {s} = {la} THEN {w} ELSE 0 END) AS na, "
                f"SUM(CASE WHEN {s} = {lb} THEN {w} ELSE 0 END) AS nb FROM t WHERE {s} IN ({la}, {lb}) "
                f"GROUP BY {v}) "
                "SELECT v, (na > 0) <> (nb > 0) AS one_sided, CASE WHEN na > 0 AND nb > 0 THEN "
                "ABS(LN(na / SUM(na) OVER ()) - LN(nb / SUM(nb) OVER ())) END AS l FROM g "
                "ORDER BY one_sided DESC, l DESC NULLS LAST, v LIMIT 1"
            )
            if not top or (not top[0][1] and top[0][2] is None):
                continue  # neither secret of the pair occurs (with a positive weight)
            value, one_sided, loss = top[0]
            found = KeptColumn(column, math.inf if one_sided else float(loss), (a, b), _text(value))
            if worst is None or found.loss > worst.loss:
                worst = found
        if worst is not None:
            out.append(worst)
    return out


def _literal(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

"""What a ledger's releases guarantee together (``pufferfish ledger show``, ``Session.spent()``;
issue 42)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pufferfish.ledger.guarantee import ExactCheck, JointGuarantee, check_data, fingerprint, guarantee
from pufferfish.ledger.store import Entry, Ledger, LedgerError
from pufferfish.tables.source import SHIPPED_DATASETS, CsvOptions, TableSource, resolve_source


@dataclass(frozen=True)
class LedgerSummary:
    """The entries of a ledger and, per secret, their guarantee together.

    Attributes
    ----------
    path : pathlib.Path
        The ledger file.
    entries : tuple of Entry
        Every entry, in order.
    secrets : tuple of JointGuarantee
        One per secret, in order of first release.
    data : str
        The table the releases were made from (its description).
    """

    path: Path
    entries: tuple[Entry, ...]
    secrets: tuple[JointGuarantee, ...]
    data: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ledger": str(self.path),
            "data": self.data,
            "entries": [
                {"id": e.id, "state": e.state, "created": e.created}
                | {
                    k: e.body.get(k)
                    for k in ("kind", "secret", "columns", "mechanism", "epsilon", "prior_set", "output")
                }
                for e in self.entries
            ],
            "together": [g.to_dict() for g in self.secrets],
        }


def _source_of(entries: Sequence[Entry], data: Any, read: CsvOptions | None) -> TableSource | None:
    if data is not None:
        return resolve_source(data, "duckdb", read)
    tables = [e for e in entries if e.body.get("kind") == "table"]
    if not tables:
        return None
    recorded = tables[-1].body["data"]
    shipped = re.match(r"shipped data set '([^']+)'", str(recorded.get("description", "")))
    if shipped and shipped.group(1) in SHIPPED_DATASETS:  # by its name: the package may have moved
        return resolve_source(shipped.group(1), "duckdb")
    if recorded.get("path") is None:
        raise LedgerError(
            f"the ledger's table ({recorded['description']}) was not a file: give it (data=, --data FILE)"
        )
    if not Path(recorded["path"]).exists():
        raise LedgerError(
            f"the ledger's table {recorded['path']!r} is not found: give it (data=, --data FILE)"
        )
    how = dict(tables[-1].body.get("read") or {})
    for key in ("names", "na"):
        if how.get(key) is not None:
            how[key] = tuple(how[key])
    return resolve_source(Path(recorded["path"]), "duckdb", CsvOptions(**how))


def summarize(
    ledger: str | Path | Ledger,
    *,
    data: Any = None,
    read: CsvOptions | None = None,
    checks: Mapping[str, ExactCheck] | None = None,
) -> LedgerSummary:
    """The guarantee, per secret, of everything a ledger records (:mod:`pufferfish.ledger.guarantee`).

    Parameters
    ----------
    ledger : str, pathlib.Path or Ledger
        An existing ledger file.
    data : str, pathlib.Path or DataFrame, optional
        The table the releases were made from (default: the file the ledger records).
    read : CsvOptions, optional
        How to read ``data`` (default: as the ledger's releases read it).
    checks : mapping, optional
        Exact checks of entry kinds beyond tables and sums (:func:`~.guarantee.guarantee`):
        series releases need :data:`pufferfish.markov.ledgered.SERIES_CHECKS`, which
        ``ledger show`` and :meth:`pufferfish.Session.spent` give.

    Returns
    -------
    LedgerSummary

    Raises
    ------
    LedgerError
        If the file is not a ledger, or the table is missing, not the ledger's, or changed.
    """
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger, create=False)
    entries = book.entries()
    source = _source_of(entries, data, read)
    secrets = list(dict.fromkeys(e.secret for e in entries))
    out = []
    for secret in secrets:
        mine = [e for e in entries if e.secret == secret]
        tables = [e for e in mine if e.body.get("kind") == "table"]
        if tables and source is not None:
            last = tables[-1].body
            found = fingerprint(
                source,
                secret=secret,
                kinds=dict(zip(last["data"]["columns"], last["data"]["kinds"], strict=True)),
                weight=last.get("weight"),
                missing=last.get("missing", "value"),
            )
            check_data(tables, found, source.description)
        out.append(guarantee(mine, source, checks=checks))
    description = source.description if source is not None else "(no table)"
    return LedgerSummary(book.path, tuple(entries), tuple(out), description)

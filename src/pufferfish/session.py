"""``pufferfish.Session``: one data set, one secret, its pairs, a budget and a ledger, released
from more than once, in the style of Tumult Analytics' ``Session``.

The library's front door beside the command line: it sits above the pipeline (which it calls)
and the ledger (which it records in); neither imports it.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pufferfish.ledger.record import LedgerContext, check_budget
from pufferfish.ledger.store import Ledger
from pufferfish.ledger.summary import LedgerSummary, summarize
from pufferfish.tables.estimate import check_pairs, check_secret_value
from pufferfish.tables.model import check_columns
from pufferfish.tables.source import CsvOptions, TableSource, quote_identifier, resolve_source


def _check_secret_and_pairs(source: TableSource, secret: str, pairs: Sequence[tuple[str, str]]) -> None:
    """Refuse, before any release, a secret that is not a column of ``source`` or a pair value that
    does not occur in it (the secret read as text, as written; one DuckDB query).

    Raises
    ------
    DataError
        Naming the column or the value (and the values that occur, up to 12).
    """
    import duckdb

    from pufferfish.tables.duckdb_read import connect, open_table, read_error

    with connect() as con:
        try:
            rel = open_table(con, source)
            check_columns(list(rel.columns), secret=secret, public=secret, weight=None)
            if source.kind == "csv":
                rel = open_table(con, source, text_columns=[secret])
            col = quote_identifier(secret)
            con.register("t", rel)
            rows = con.execute(f"SELECT DISTINCT CAST({col} AS VARCHAR) FROM t WHERE {col} IS NOT NULL")
            known = {str(r[0]) for r in rows.fetchall()}
        except duckdb.Error as exc:
            raise read_error(exc, source.description) from None
    for pair in pairs:
        for value in pair:
            check_secret_value(str(value), known, secret)


@dataclass(frozen=True)
class SessionCalibration:
    """:meth:`Session.calibrate`'s result.

    Attributes
    ----------
    calibration : TableCalibration
        The calibration of the release alone (:func:`pufferfish.calibrate_table`).
    against : tuple of Against
        Each mechanism that answered, against the ledger and the budget
        (:class:`pufferfish.pipeline.ledgered.Against`).
    """

    calibration: Any
    against: tuple[Any, ...]


class Session:
    """Releases of one table about one secret, recorded in a ledger, under one budget.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        The table (CSV, Parquet, DataFrame or ``"adult"``), read with ``read``.
    secret : str
        The secret column.
    pairs : sequence of (str, str) or str
        The discriminative pairs.
    budget : float, optional
        Nats, finite and > 0: the guarantee of everything released about the secret together
        must meet it (:func:`pufferfish.ledger.record.plan`). None: no budget (each release is
        still recorded and its joint guarantee reported).
    ledger : str or pathlib.Path, optional
        The ledger file (SQLite), created if new; it may hold releases made before (by the CLI or
        another session). Default: a new file in a temporary folder for this session only, removed
        with it (:meth:`close`, the end of a ``with`` block, or when it is collected).
    read : CsvOptions, optional
        How to read a CSV file.

    Raises
    ------
    ValueError
        Bad pairs or budget; :class:`~pufferfish.ledger.store.LedgerError` for a file that is not a
        ledger; :class:`~pufferfish.tables.source.DataError` for a table that cannot be read, a
        secret that is not one of its columns or a pair value that does not occur in it (all
        checked here, before any release).

    Notes
    -----
    :meth:`release` is :func:`pufferfish.release` with ``ledger`` and ``budget``: the release is
    refused, or its Laplace scale raised, before any noise is drawn. :meth:`spent` is
    :func:`pufferfish.ledger.summary.summarize` of the ledger for this table.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> s = Session("adult", secret="sex", pairs=[("Male", "Female")], budget=1.0)
    >>> r = s.release("age", 0.5, os.path.join(folder, "age1.csv"), mechanism="optimal", prior_set="none")
    >>> r = s.release("age", 0.5, os.path.join(folder, "age2.csv"), mechanism="optimal", prior_set="none")
    >>> round(s.spent().secrets[0].epsilon, 3)  # the exact joint check (SPEC sec 7), not 1.0
    0.621
    """

    def __init__(
        self,
        data: Any,
        *,
        secret: str,
        pairs: Any,
        budget: float | None = None,
        ledger: str | Path | None = None,
        read: CsvOptions | None = None,
    ) -> None:
        if not isinstance(secret, str) or not secret:
            raise ValueError(f"secret must name a column, got {secret!r}")
        self.secret = secret
        self.pairs = check_pairs(pairs)
        self.budget = check_budget(budget)
        self.read = read
        self.data = data
        self._source = resolve_source(data, "duckdb", read)
        _check_secret_and_pairs(self._source, secret, self.pairs)  # one query, before any release
        self._folder: Path | None = None
        if ledger is None:  # this session's only: removed with it
            self._folder = Path(tempfile.mkdtemp(prefix="pufferfish-session-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, ignore_errors=True)
            ledger = self._folder / "ledger.sqlite"
        self.ledger = Ledger(ledger)

    def close(self) -> None:
        """Remove the session's temporary ledger, if it made one (a ledger given is kept)."""
        if self._folder is not None:
            self._cleanup()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _context(self) -> LedgerContext:
        return LedgerContext(self.ledger, self.budget, self._source)

    def calibrate(
        self, public: Any, epsilon: float, *, sampler: str = "exact", **options: Any
    ) -> SessionCalibration:
        """Calibrate a release of ``public`` at ``epsilon`` against what the ledger holds.

        Parameters
        ----------
        public : str or sequence of str
            The column(s) to release.
        epsilon : float
            Finite and > 0 (one value).
        sampler : {"exact", "opendp"}
            The secure sampler the release would use (its grid is in the check).
        **options
            Any option of :func:`pufferfish.calibrate_table` but ``data``, ``secret``, ``pairs``
            and ``epsilon``.

        Returns
        -------
        SessionCalibration
            Each mechanism's guarantee together with the ledger; with a budget, the scale that
            meets it (a Laplace release) or why it is refused.
        """
        from pufferfish.pipeline.calibrate import calibrate_table
        from pufferfish.pipeline.ledgered import against_each

        if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool):
            raise ValueError(f"epsilon must be one number, got {epsilon!r}")
        table = calibrate_table(
            self.data,
            secret=self.secret,
            public=public,
            pairs=self.pairs,
            epsilon=epsilon,
            read=self.read,
            **options,
        )
        return SessionCalibration(table, against_each(self._context(), table, sampler))

    def plan(self, public: Any, epsilon: float, output: str | Path, **options: Any) -> Any:
        """The release of ``public`` at ``epsilon`` to ``output``, validated (nothing read beyond the
        table's header, nothing written): the request :meth:`release` carries out.

        Parameters
        ----------
        public, epsilon, output
            As :func:`pufferfish.release`.
        **options
            Any other option of :func:`pufferfish.release` but ``data``, ``secret``, ``pairs``,
            ``ledger``, ``budget`` and ``read`` (the session's).

        Returns
        -------
        pufferfish.pipeline.release.ReleasePlan

        Raises
        ------
        ValueError
            An option that is the session's, or any bad argument (as :func:`pufferfish.release`).
        TypeError
            An option :func:`pufferfish.release` does not have.
        """
        from pufferfish.pipeline.release import plan_release, release

        for name in ("data", "secret", "pairs", "ledger", "budget", "read"):
            if name in options:
                raise ValueError(
                    f"{name} is the session's; give it to Session(), got {name}={options[name]!r}"
                )
        bound = inspect.signature(release).bind(
            self.data, secret=self.secret, public=public, pairs=self.pairs, epsilon=epsilon, output=output,
            ledger=self.ledger.path, budget=self.budget, read=self.read, **options,
        )  # fmt: skip
        bound.apply_defaults()  # release()'s defaults: one request, whichever door it came in by
        return plan_release(bound.arguments)

    def release(self, public: Any, epsilon: float, output: str | Path, **options: Any) -> Any:
        """Release ``public`` at ``epsilon`` to ``output``, recorded in the ledger under the budget.

        Parameters
        ----------
        public, epsilon, output, **options
            As :meth:`plan` (the options of :func:`pufferfish.release` but the session's).

        Returns
        -------
        ReleaseResult
            Its report's ``ledger`` gives the entry and the guarantee together.

        Raises
        ------
        pufferfish.ledger.record.BudgetError
            Before any noise is drawn, when the budget cannot be met (nothing written).
        """
        from pufferfish.pipeline.release import run_release

        return run_release(self.plan(public, epsilon, output, **options))

    def spent(self) -> LedgerSummary:
        """What the ledger's releases guarantee together, per secret (this table's)."""
        from pufferfish.markov.ledgered import SERIES_CHECKS  # rule 2 for series entries, explicitly

        return summarize(self.ledger, data=self.data, read=self.read, checks=SERIES_CHECKS)

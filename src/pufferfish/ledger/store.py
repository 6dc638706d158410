"""The ledger: what was released from one data set, in an SQLite file (issue 42).

Every release made with a ledger appends one entry: the data's fingerprint, the secret and pairs,
what was released (each column's channel: scales, matrices), the epsilon it was certified for, the
prior set, the time and the output. The store is SQLite from the standard library:

* *Concurrent releases lose no entry.* Each write is one ``BEGIN IMMEDIATE`` transaction (one
  writer at a time, others wait up to :data:`BUSY_SECONDS`); a release re-reads the entries inside
  the transaction that appends its own, so a check against a budget sees every entry before it.
* *A release killed at any point leaves its entry and its output both present or both absent.*
  The entry is written ``pending`` (with the process id and the identity, device and inode, of
  the temporary output file) before the output is published, and marked ``done`` after. A
  ``pending`` entry of a process that no longer runs is settled when the ledger is next opened:
  ``done`` if its output is the published file (same inode: a rename or a hard link keeps it),
  removed otherwise (nothing was published). An entry of a process still running counts (it may
  be publishing), so a budget never misses it.
* *A file that is not a ledger, or a ledger of another format version, is refused* in one line
  before anything is written.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pufferfish.tables.outputs import unwritable
from pufferfish.tables.source import process_alive

#: The format of the ledger file this version reads and writes.
LEDGER_FORMAT = 1

#: Seconds a release waits for another one's write to the same ledger.
BUSY_SECONDS = 120.0

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    created TEXT NOT NULL,
    body TEXT NOT NULL,
    output TEXT,
    output_id TEXT
);
"""


class LedgerError(ValueError):
    """A ledger that cannot be used: not a ledger, another data set, a changed data file, a
    budget exceeded (the message is one line naming the file and the rule)."""


@dataclass(frozen=True)
class Entry:
    """One release recorded in a ledger.

    Attributes
    ----------
    id : int
        Its number in the ledger (1, 2, ...; order of recording).
    state : {"pending", "done"}
        ``pending``: being published by a process still running (counted all the same).
    created : str
        UTC time it was recorded (ISO 8601).
    body : dict
        What was released: ``kind`` (``"table"``, ``"markov"``, ``"sum"``), ``secret``, ``pairs``,
        ``columns``, ``mechanism``, ``epsilon``, ``delta``, ``criterion``, ``prior_set``,
        ``views`` (each column's channel, :mod:`pufferfish.ledger.views`), ``data`` (the data's
        description and fingerprint), ``output``.
    """

    id: int
    state: str
    created: str
    body: dict[str, Any]

    @property
    def secret(self) -> str:
        """The secret column (or the secret's name for a series or a sum)."""
        return str(self.body.get("secret", ""))

    @property
    def epsilon(self) -> float:
        """The epsilon the release was certified for."""
        return float(self.body["epsilon"])


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _alive(pid: int, host: str) -> bool:
    """Whether the process that wrote a pending entry may still run (another host: assumed yes)."""
    return host != socket.gethostname() or process_alive(pid)


def file_identity(path: Path) -> str:
    """``"device:inode"`` of a file, kept by a rename and a hard link."""
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}"


class Ledger:
    """An open ledger file (:mod:`pufferfish.ledger.store`).

    Parameters
    ----------
    path : str or pathlib.Path
        The SQLite file; created (with its schema) when it does not exist and ``create``.
    create : bool
        Create a missing file (a release) or refuse it (``ledger show``).

    Raises
    ------
    LedgerError
        If the file is a folder, not an SQLite database, not a pufferfish ledger, of another
        format, or missing when ``create`` is false.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise LedgerError(f"ledger {str(self.path)!r} is a folder: give the path of a file")
        if not self.path.exists():
            if not create:
                raise LedgerError(f"ledger {str(self.path)!r} does not exist")
            if not self.path.parent.is_dir():
                raise LedgerError(
                    f"ledger {str(self.path)!r}: folder {str(self.path.parent)!r} does not exist"
                )
        else:
            self._validate()
        if create:
            self._check_writable()

    def _check_writable(self) -> None:
        """LedgerError, before any work, when a release could not record here: SQLite writes the
        file and its journal beside it, so the folder must take new files (probed by creating and
        removing a hidden temporary file) and an existing file must open for writing (nothing
        written; :func:`~pufferfish.tables.outputs.unwritable`, as for outputs)."""
        found = unwritable(self.path)
        if found is not None and found[0] == "folder":
            raise LedgerError(
                f"ledger {str(self.path)!r}: its folder {str(self.path.parent)!r} does not take new files "
                f"({found[1]}; SQLite writes its journal beside the ledger): make the folder writable or "
                "give a ledger in another folder"
            )
        if found is not None:
            raise LedgerError(
                f"ledger {str(self.path)!r} cannot be written ({found[1]}: read-only or immutable): "
                "make it writable (chattr -i / chmod u+w) or give another ledger"
            )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        try:
            yield con
        finally:
            con.close()

    def _validate(self) -> None:
        """Refuse a file that is not a ledger of this format (read only, nothing written)."""
        with open(self.path, "rb") as fh:
            head = fh.read(16)
        if head and head != b"SQLite format 3\x00":
            raise LedgerError(f"ledger {str(self.path)!r} is not a pufferfish ledger (not an SQLite file)")
        if not head:
            return  # an empty file: a ledger is created in it
        try:
            with self._connect() as con:
                names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not {"meta", "entries"} <= names:
                    raise LedgerError(
                        f"ledger {str(self.path)!r} is not a pufferfish ledger "
                        "(an SQLite file without its tables)"
                    )
                row = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
                if row is None or row[0] != str(LEDGER_FORMAT):
                    raise LedgerError(
                        f"ledger {str(self.path)!r} has format {row[0] if row else None!r}; this version "
                        f"reads format {LEDGER_FORMAT}"
                    )
                bad = con.execute("PRAGMA quick_check").fetchone()
                if bad is None or bad[0] != "ok":
                    raise LedgerError(
                        f"ledger {str(self.path)!r} is corrupt: {bad[0] if bad else 'unreadable'}"
                    )
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"ledger {str(self.path)!r} is corrupt or not a ledger: {exc}") from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``): the schema created if new, pending entries
        of dead processes settled, committed at the end or rolled back on an error."""
        try:
            with self._connect() as con:
                con.execute("BEGIN IMMEDIATE")
                try:
                    if con.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
                        for statement in _SCHEMA.split(";"):
                            if statement.strip():
                                con.execute(statement)
                        con.execute("INSERT INTO meta VALUES ('format', ?)", (str(LEDGER_FORMAT),))
                        con.execute("INSERT INTO meta VALUES ('created', ?)", (_now(),))
                    _settle(con)
                    yield con
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"ledger {str(self.path)!r}: {exc}") from None

    def entries(self) -> list[Entry]:
        """Every entry, in order (pending entries of dead processes settled first)."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return []
        with self.transaction() as con:
            return read_entries(con)

    def reserve(self, body: Mapping[str, Any], output: Path | None, temporary: Path | None) -> int:
        """Append ``body`` as a pending entry (its output not yet published): its id."""
        with self.transaction() as con:
            return add_pending(con, body, output, temporary)

    def confirm(self, entry_id: int) -> None:
        """Mark an entry done (its output was published)."""
        with self.transaction() as con:
            con.execute("UPDATE entries SET state = 'done' WHERE id = ?", (entry_id,))

    def cancel(self, entry_id: int) -> None:
        """Remove a pending entry whose output was not published."""
        with self.transaction() as con:
            con.execute("DELETE FROM entries WHERE id = ? AND state = 'pending'", (entry_id,))


def add_pending(
    con: sqlite3.Connection, body: Mapping[str, Any], output: Path | None, temporary: Path | None
) -> int:
    """Insert a pending entry inside an open transaction: its id."""
    ident = file_identity(temporary) if temporary is not None and temporary.exists() else None
    cur = con.execute(
        "INSERT INTO entries (state, pid, host, created, body, output, output_id) VALUES "
        "('pending', ?, ?, ?, ?, ?, ?)",
        (
            os.getpid(),
            socket.gethostname(),
            _now(),
            json.dumps(dict(body), allow_nan=False),
            None if output is None else str(Path(output).resolve()),
            ident,
        ),
    )
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


def read_entries(con: sqlite3.Connection) -> list[Entry]:
    """The entries inside an open connection, in order."""
    rows = con.execute("SELECT id, state, created, body FROM entries ORDER BY id").fetchall()
    out = []
    for i, state, created, body in rows:
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError:
            raise LedgerError(f"ledger entry {i} is corrupt (its record is not JSON)") from None
        out.append(Entry(int(i), str(state), str(created), parsed))
    return out


def _settle(con: sqlite3.Connection) -> None:
    """Pending entries of processes that no longer run: done if their output is the file they
    published (same device and inode), removed otherwise."""
    rows = con.execute(
        "SELECT id, pid, host, output, output_id FROM entries WHERE state = 'pending'"
    ).fetchall()
    for i, pid, host, output, ident in rows:
        if _alive(int(pid), str(host)):
            continue
        published = False
        if output is not None and ident is not None:
            try:
                published = file_identity(Path(output)) == ident
            except OSError:
                published = False
        if published:
            con.execute("UPDATE entries SET state = 'done' WHERE id = ?", (i,))
        else:
            con.execute("DELETE FROM entries WHERE id = ?", (i,))


def entries_of(entries: Sequence[Entry], secret: str) -> list[Entry]:
    """The entries about one secret, in order."""
    return [e for e in entries if e.secret == secret]

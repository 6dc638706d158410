"""The errors of the table layer, shared by reading (:mod:`.source`) and writing (:mod:`.outputs`)."""

from __future__ import annotations

import re

#: An engine's own error text that means Ctrl-C: DuckDB's "Query interrupted", or the last line
#: ``KeyboardInterrupt`` of a Python traceback DuckDB quotes from a stream it read (never a user's
#: value quoted inside a message: that is not at a line's start).
INTERRUPT_TEXT = re.compile(r"Query interrupted|^KeyboardInterrupt\b", re.M)


class DataError(ValueError):
    """A table cannot be read or does not fit the request (unknown column or value, ...)."""


class OutputExistsError(FileExistsError):
    """An output file (table, JSON or HTML report) exists and ``force`` was not given."""

"""The errors of the table layer, shared by reading (:mod:`.source`) and writing (:mod:`.outputs`)."""

from __future__ import annotations


class DataError(ValueError):
    """A table cannot be read or does not fit the request (unknown column or value, ...)."""


class OutputExistsError(FileExistsError):
    """An output file (table, JSON or HTML report) exists and ``force`` was not given."""

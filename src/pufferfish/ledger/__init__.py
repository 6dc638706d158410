"""Releasing more than once (issue 42): the ledger of what was released, the exact joint check
of everything released about each row, and a budget."""

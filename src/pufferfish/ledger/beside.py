"""Releases made without a ledger whose reports lie beside a new release's output: what a ledger
would have checked together with it (issue 56). Reads JSON only (no engine, no check): the
command line calls it before a release and prints one line after it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Reports read beside an output when no ledger is given (:func:`releases_beside`).
MAX_REPORTS_BESIDE = 200


@dataclass(frozen=True)
class EarlierRelease:
    """A table release whose report lies beside a new release's output (no ledger given).

    Attributes
    ----------
    report : pathlib.Path
        Its JSON report (confidential).
    columns : tuple of str
        The columns it released.
    epsilon : float
        Its own epsilon.
    """

    report: Path
    columns: tuple[str, ...]
    epsilon: float


def releases_beside(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The ``inputs`` of every table-release report (``*.report.json``) in ``folder``, read before a
    release without a ledger (at most :data:`MAX_REPORTS_BESIDE`, the newest first; a file that is
    not such a report is skipped)."""
    try:
        found = sorted(folder.glob("*.report.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    out = []
    for path in found[:MAX_REPORTS_BESIDE]:
        try:
            inputs = json.loads(path.read_text(encoding="utf-8")).get("inputs")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(inputs, dict) and {"data", "secret", "epsilon"} <= set(inputs):
            out.append((path, inputs))
    return out


def same_secret_and_columns(
    before: Sequence[tuple[Path, dict[str, Any]]], inputs: dict[str, Any], columns: Sequence[str]
) -> list[EarlierRelease]:
    """The releases of ``before`` (:func:`releases_beside`) of the same table and secret as
    ``inputs`` that released one of ``columns``: what a ledger would have checked together with
    the new release (pufferfish guarantees need not add up over releases of correlated data)."""
    out = []
    for path, old in before:
        cols = tuple(str(c) for c in (old.get("columns") or [old.get("public")]) if c is not None)
        if old.get("data") == inputs.get("data") and old.get("secret") == inputs.get("secret"):
            if set(cols) & set(columns):
                out.append(EarlierRelease(path, cols, float(old["epsilon"])))
    return out

"""What a release published about each column, as the ledger records it and as the joint check
reads it back (issue 42).

:func:`record_views` turns the columns a release drew (:class:`~pufferfish.tables.perturb.ReleasedColumn`)
into JSON: each column's channel with its exact parameters (the Laplace scale the sampler draws
and its grid, the mapping's dyadic integer weights, the labels in the release's own order).
:func:`to_views` turns them back into :class:`~pufferfish.loss.composed.View` on the columns of
the joint priors of every release (label codes matched by label text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pufferfish.loss.composed import View
from pufferfish.noise.channels import ONE, DenseChannel, RandomizedResponseChannel
from pufferfish.noise.samplers import sampler_grid
from pufferfish.tables.perturb import ReleasedColumn


class Unsupported(ValueError):
    """A recorded channel the joint check cannot read (the reason)."""


def _labels_of(col: ReleasedColumn) -> list[str]:
    if col.labels:
        return list(col.labels)
    if col.estimated is not None:
        pairs = sorted(col.estimated.mapping, key=lambda lc: lc[1])
        return [label for label, _ in pairs]
    return []


def _matrix_record(channel: Any, labels: list[str]) -> dict[str, Any]:
    if isinstance(channel, RandomizedResponseChannel):
        return {"kind": "matrix", "labels": labels, "response": [channel.k, channel.keep, channel.other]}
    assert isinstance(channel, DenseChannel)
    return {"kind": "matrix", "labels": labels, "weights": np.asarray(channel.weights).tolist()}


def record_views(
    columns: Sequence[ReleasedColumn], *, noise: str, sampler: str | None
) -> list[dict[str, Any]]:
    """The JSON record of each column a release publishes.

    Parameters
    ----------
    columns : sequence of ReleasedColumn
        As drawn (:func:`pufferfish.pipeline.draws.released_columns`).
    noise : {"laplace", "gaussian"}
        The additive noise of the release.
    sampler : {"exact", "opendp"} or None
        The secure sampler (its grid is recorded), or None for a seeded, continuous draw.

    Returns
    -------
    list of dict
        ``{"column", "kind", ...}``: ``identity``; ``matrix`` (``labels`` in the release's code
        order and ``weights`` of a dense mapping or ``response`` ``[k, keep, other]``, each row
        summing to ``2^52``); ``laplace`` (``scale``, ``exponent`` or None, ``labels`` for the codes
        of a categorical column, ``bounds``); ``unsupported`` with ``why``.
    """
    out: list[dict[str, Any]] = []
    for col in columns:
        # how the joint check reads the column (a noiseless number is an identity view on numbers)
        rec: dict[str, Any] = {
            "column": col.name,
            "read_as": "categorical" if col.categorical or col.kept else "numeric",
        }
        labels = _labels_of(col)
        if col.kept or (col.categorical and col.mapping is None and col.channel is None and col.scale == 0.0):
            rec |= {"kind": "identity"}
        elif col.mapping is not None:
            if not col.categorical:
                rec |= {"kind": "unsupported", "why": "a numeric column released by a mapping"}
            else:
                rec |= _matrix_record(col.mapping.channel, labels)
        elif col.channel is not None:
            rec |= _matrix_record(col.channel, labels)
        elif noise != "laplace":
            rec |= {"kind": "unsupported", "why": f"{noise} noise (an (eps, delta) release)"}
        elif col.scale == 0.0:
            rec |= {"kind": "identity"}
        else:
            exponent, drawn = None, float(col.scale)
            if sampler is not None:
                exponent, _, drawn = sampler_grid(float(col.scale), "laplace", sampler)
            rec |= {
                "kind": "laplace",
                "scale": drawn,
                "exponent": exponent,
                "labels": labels if col.categorical else None,
                "bounds": None if col.bounds is None else list(col.bounds),
            }
        out.append(rec)
    return out


def to_views(
    records: Sequence[Mapping[str, Any]],
    positions: Mapping[str, int],
    labels: Sequence[Sequence[str]],
    *,
    release: int,
) -> list[View]:
    """The recorded columns of one release as views on the joint priors' columns.

    Parameters
    ----------
    records : sequence of dict
        :func:`record_views` of the release.
    positions : mapping of str to int
        Each column's coordinate in the joint priors.
    labels : sequence of sequence of str
        Per coordinate, the joint priors' labels in code order (empty for a numeric column).
    release : int
        The ledger entry, for names and messages.

    Raises
    ------
    Unsupported
        For a channel the joint check cannot read, or a label of the table the release never had.
    """
    views = []
    for rec in records:
        name = f"{rec['column']} (release {release})"
        c = positions[rec["column"]]
        kind = rec["kind"]
        if kind == "unsupported":
            raise Unsupported(f"{name}: {rec['why']}")
        relabel = None
        if labels[c]:
            own = rec.get("labels") or []
            if kind != "identity":
                index = {lab: i for i, lab in enumerate(own)}
                relabel = np.array([index.get(lab, -1) for lab in labels[c]], dtype=np.int64)
                if np.any(relabel < 0):
                    missing = [lab for lab in labels[c] if lab not in index]
                    raise Unsupported(f"{name}: labels {missing[:3]} of the table were not in that release")
        if kind == "identity":
            views.append(View(c, "identity", name=name))
        elif kind == "matrix":
            if "response" in rec:
                k, keep, other = rec["response"]
                weights = np.full((k, k), float(other))
                np.fill_diagonal(weights, float(keep))
            else:
                weights = np.asarray(rec["weights"], dtype=np.float64)
            views.append(View(c, "matrix", relabel=relabel, matrix=weights / float(ONE), name=name))
        else:
            bounds = rec.get("bounds")
            views.append(
                View(
                    c,
                    "laplace",
                    float(rec["scale"]),
                    relabel=relabel,
                    exponent=rec.get("exponent"),
                    bounds=None if bounds is None else (float(bounds[0]), float(bounds[1])),
                    name=name,
                )
            )
    return views

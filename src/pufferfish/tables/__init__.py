"""The table layer: sources and outputs, prior estimation, and the DuckDB and Spark engines.

- :mod:`~pufferfish.tables.source`: resolve a table once (:class:`TableSource`), output names
  and the one atomic write (:func:`atomic_outputs`); imports no engine.
- :mod:`~pufferfish.tables.estimate`: empirical priors from an engine's aggregates.
- :mod:`~pufferfish.tables.duckdb_engine`: the embedded engine (aggregates, streamed release).
- :mod:`~pufferfish.tables.spark_engine`: the cluster engine (imported only with ``engine="spark"``).

The engines are imported when first used: ``from pufferfish.tables import resolve_source`` needs
neither DuckDB nor Spark.
"""

from pufferfish.tables.estimate import (
    EstimatedPriors,
    SecretGroup,
    TableAggregates,
    check_pairs,
    estimate_priors,
    estimate_two_sources,
    parse_pair,
    priors_from_aggregates,
    with_prior_sets,
)
from pufferfish.tables.model import EstimatedJointPriors
from pufferfish.tables.source import (
    ENGINES,
    SHIPPED_DATASETS,
    DataError,
    OutputExistsError,
    TableSource,
    check_engine,
    dataset_path,
    output_format,
    report_path_for,
    resolve_source,
)

__all__ = [
    "DUCKDB_MEMORY_LIMIT",
    "ENGINES",
    "SHIPPED_DATASETS",
    "DataError",
    "EstimatedJointPriors",
    "EstimatedPriors",
    "OutputExistsError",
    "ReleasedHistogram",
    "SecretGroup",
    "TableAggregates",
    "TableSource",
    "check_engine",
    "check_pairs",
    "column_histograms",
    "dataset_path",
    "estimate_class_counts",
    "estimate_priors",
    "estimate_two_sources",
    "output_format",
    "parse_pair",
    "priors_from_aggregates",
    "released_histograms",
    "report_path_for",
    "resolve_source",
    "with_prior_sets",
]

_LAZY = {
    "DUCKDB_MEMORY_LIMIT": "duckdb_read",
    "ReleasedHistogram": "histograms",
    "estimate_class_counts": "duckdb_engine",
    "released_histograms": "histograms",
    "column_histograms": "histograms",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'pufferfish.tables' has no attribute {name!r}")

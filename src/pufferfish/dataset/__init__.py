"""Dataset-level secrets (issue 58; SPEC sec 8): protect the share of a table's rows with a
property (Zhang, Ohrimenko and Cummings 2022; Chen and Ohrimenko 2023), with exact checks.

* :mod:`pufferfish.dataset.spec`: the property (``income=>50K``, ``age>=60``) and the statistics (``count``,
  ``count:COLUMN=VALUE``, ``sum:COLUMN``, ``mean:COLUMN``).
* :mod:`pufferfish.dataset.table`: a table's per-row values with and without the property (DuckDB).
* :mod:`pufferfish.dataset.statistic`: a statistic's exact distribution at a share (binomial,
  or log-space convolution with a stated error bound).
* :mod:`pufferfish.dataset.model`: :class:`PropertyModel` and :func:`property_scenario`, which
  every mechanism of the registry calibrates and the exact check verifies.
* :mod:`pufferfish.dataset.mechanisms`: the registry's ``group-dp``, ``wasserstein-coupling`` and
  ``row-composition`` on this model, registered explicitly here.
* :mod:`pufferfish.dataset.composition`: one row's exact loss composed through the binomial count
  (``row-composition``), for any statistics released with product Laplace noise.
* :mod:`pufferfish.dataset.coupling`, :mod:`pufferfish.dataset.calibrate`,
  :mod:`pufferfish.dataset.release`, :mod:`pufferfish.dataset.attack`: several statistics
  together, the comparison, the release and the shadow-classifier attack.
"""

from pufferfish.dataset import mechanisms
from pufferfish.dataset.model import (
    DATASET_GAUSSIAN_MECHANISMS,
    DATASET_MECHANISMS,
    PropertyModel,
    StatisticModel,
    property_scenario,
    share_secret,
)
from pufferfish.dataset.spec import PropertySpec, StatisticSpec, parse_shares, parse_statistics
from pufferfish.dataset.statistic import row_mixture, statistic_prior
from pufferfish.dataset.table import PropertyTable, RowValues, read_property_table

mechanisms.register()  # the registry's dataset-property mechanisms (pufferfish.dataset.mechanisms)

__all__ = [
    "DATASET_GAUSSIAN_MECHANISMS",
    "DATASET_MECHANISMS",
    "PropertyModel",
    "PropertySpec",
    "PropertyTable",
    "RowValues",
    "StatisticModel",
    "StatisticSpec",
    "parse_shares",
    "parse_statistics",
    "property_scenario",
    "read_property_table",
    "row_mixture",
    "share_secret",
    "statistic_prior",
]

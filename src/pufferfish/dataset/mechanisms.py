"""The registry's model mechanisms on a dataset-level statistic: what ``group-dp``,
``wasserstein-coupling`` (:mod:`pufferfish.dataset.coupling`) and ``row-composition``
(:mod:`pufferfish.dataset.composition`) compute on a scenario of
:func:`~pufferfish.dataset.model.property_scenario` or
:func:`~pufferfish.dataset.model.joint_scenario`, registered by :func:`register`
(which ``pufferfish.dataset`` calls when imported; the registry imports nothing of this package).

Group differential privacy: two data sets of ``n`` rows drawn at two shares may differ in every
row, so a DP release of the statistic protects the share when its sensitivity covers all ``n``
rows: ``n`` times the per-row range of a sum, the range of a mean (Chen and Ohrimenko 2023's
group-DP baseline; their code, ``mgcsls/mechanisms-global-properties``, takes ``k = n``). It
needs no prior: valid for every prior whose per-row values lie in the table's range.
"""

from __future__ import annotations

from pufferfish.calibration.registry import register_model_mechanisms
from pufferfish.calibration.search import Proposal
from pufferfish.dataset.composition import composition_scales
from pufferfish.dataset.coupling import vector_scale
from pufferfish.dataset.model import PropertyModel, StatisticModel
from pufferfish.priors.scenario import Scenario


class DatasetMechanisms:
    """``group-dp``, ``wasserstein-coupling`` and ``row-composition`` on a dataset-level statistic, for
    :class:`~pufferfish.calibration.registry.ModelMechanisms`."""

    def scale(self, which: str, scenario: Scenario, epsilon: float) -> Proposal:
        """The mechanism's Laplace scale (checked by the registry's path): group DP's
        ``sensitivity / epsilon``, or the theorem's of :mod:`~pufferfish.dataset.coupling` or
        :mod:`~pufferfish.dataset.composition`.

        Parameters
        ----------
        which : {"group-dp", "wasserstein-coupling", "row-composition"}
        scenario : Scenario
            From :func:`~pufferfish.dataset.model.property_scenario`.
        epsilon : float
            > 0.

        Returns
        -------
        Proposal
            The scale ``b`` in the scenario's metric (one statistic: its unit; two counts: each
            gets ``Laplace(b w_k)``), decided by the first pair.
        """
        bound = scenario.model
        assert isinstance(bound, StatisticModel)
        units = scenario.metric.units if scenario.metric is not None else (1.0,)
        if which == "row-composition":
            comp = composition_scales(bound.model, epsilon, bound.statistics, units)
            prior, pair = scenario.priors[0].name, scenario.pairs[0]
            return Proposal(comp.scales[0] / units[0], prior, pair, comp.sentence())
        if which == "wasserstein-coupling":
            found = vector_scale(bound.model, epsilon, bound.statistics, units)
            return Proposal(
                found.distance / epsilon, scenario.priors[0].name, scenario.pairs[0], found.sentence()
            )
        sensitivity = sum(
            bound.model.group_dp_sensitivity(k) / w for k, w in zip(bound.statistics, units, strict=True)
        )
        n = bound.model.rows
        why = f"group DP over all {n} rows: sensitivity {sensitivity:g} / eps"
        return Proposal(sensitivity / epsilon, scenario.priors[0].name, scenario.pairs[0], why)

    def applies(self, which: str, scenario: Scenario, noise: str) -> str | None:
        """Why ``which`` does not apply: every Markov mechanism (a chain's count only)."""
        if which in ("group-dp", "wasserstein-coupling", "row-composition"):
            return None
        return "defined for a count on a Markov chain, not a dataset property"


def register() -> None:
    """Give the registry the dataset-level implementations (models of kind ``"dataset property"``)."""
    register_model_mechanisms(PropertyModel.kind, DatasetMechanisms())

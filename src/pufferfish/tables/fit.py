"""Gaussian and Gaussian-mixture priors fitted per secret to a numeric public column.

Seed 003 sec III (Gaussian priors) and sec IV-V (GMM priors fitted per secret): the adversary's
prior is summarised by a maximum-likelihood Gaussian or a Gaussian mixture (scikit-learn's
GaussianMixture, seeded EM) instead of the empirical distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior, Prior
from pufferfish.priors.scenario import AdversaryPrior, Scenario
from pufferfish.tables.estimate import EstimatedPriors

#: Prior models a table can be summarised by.
PRIOR_MODELS: tuple[str, ...] = ("empirical", "gaussian", "gmm")


def parse_prior_model(text: str) -> tuple[str, int | None]:
    """Parse ``"empirical"``, ``"gaussian"``, ``"gmm"`` (components by BIC) or ``"gmm:K"``.

    Returns
    -------
    (str, int or None)
        The model and the number of components (``None``: chosen by BIC, or not a mixture).

    Raises
    ------
    ValueError
        On any other text.
    """
    t = str(text).strip().lower()
    if t in ("empirical", "gaussian", "gmm"):
        return t, None
    if t.startswith("gmm:"):
        k = t[4:]
        if k.isdigit() and int(k) >= 1:
            return "gmm", int(k)
    raise ValueError(f"prior must be empirical, gaussian, gmm or gmm:K with K >= 1, got {text!r}")


@dataclass(frozen=True)
class FittedPriors:
    """Gaussian or Gaussian-mixture priors fitted per secret value to a table's numeric column.

    Attributes
    ----------
    estimated : EstimatedPriors
        The empirical priors the fit was made from (rows, counts, source).
    scenario : Scenario
        The pairs and one prior named ``"gaussian"`` or ``"gmm"`` of
        :class:`~pufferfish.priors.distributions.GaussianMixturePrior` conditionals.
    model : {"gaussian", "gmm"}
    """

    estimated: EstimatedPriors
    scenario: Scenario
    model: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: the empirical summary plus each secret's fitted prior."""
        out = self.estimated.to_dict()
        prior = self.scenario.priors[0]
        out["prior_model"] = self.model
        out["fitted_priors"] = {
            g.secret: prior.conditionals[g.secret].to_dict() for g in self.estimated.groups
        }
        return out


def fit_priors(
    estimated: EstimatedPriors,
    model: str,
    *,
    n_components: int | None = None,
    rng: np.random.Generator | int | None = 0,
) -> FittedPriors:
    """Fit a Gaussian or a Gaussian mixture to the public column for every secret of the pairs.

    Parameters
    ----------
    estimated : EstimatedPriors
        From :func:`~pufferfish.tables.estimate.estimate_priors` on a numeric public column.
    model : {"gaussian", "gmm"}
        ``"gaussian"``: maximum-likelihood mean and standard deviation (dividing by ``n``, the
        weighted rows). ``"gmm"``: scikit-learn's GaussianMixture (seeded EM).
    n_components : int, optional
        Mixture components; ``None`` chooses by BIC (``"gmm"`` only).
    rng : numpy.random.Generator, int or None
        Seed of the EM initialisation (default 0).

    Returns
    -------
    FittedPriors

    Raises
    ------
    ValueError
        If the public column is categorical, ``model`` is unknown, or a mixture is asked for with
        non-integer frequency weights.

    Notes
    -----
    Seed 003 sec III (Gaussian priors), sec IV-V (GMM priors fitted per secret).
    """
    if model not in ("gaussian", "gmm"):
        raise ValueError(f"model must be 'gaussian' or 'gmm', got {model!r}")
    if estimated.categorical:
        raise ValueError(
            f"a {model} prior needs a numeric public column; {estimated.public_column!r} holds labels"
        )
    if model == "gaussian" and n_components not in (None, 1):
        raise ValueError(f"n_components must be 1 or None for a Gaussian prior, got {n_components!r}")
    empirical = estimated.scenario.priors[0]
    conds: dict[str, Prior] = {}
    for g in estimated.groups:
        p = empirical.conditionals[g.secret]
        assert isinstance(p, DiscretePrior)
        counts = p.pmf * g.weight
        if model == "gaussian":
            fitted = GaussianMixturePrior.fit_gaussian(p.support, counts)
        else:
            rounded = np.round(counts)
            if np.max(np.abs(rounded - counts)) > 1e-6 * max(1.0, float(counts.max())):
                raise ValueError(
                    "a gmm prior needs integer frequency weights (rows are expanded for the fit)"
                )
            fitted = GaussianMixturePrior.fit_mixture(p.support, rounded, n_components=n_components, rng=rng)
        conds[g.secret] = fitted
    scenario = Scenario(estimated.scenario.pairs, (AdversaryPrior(model, conds),))
    return FittedPriors(estimated=estimated, scenario=scenario, model=model)

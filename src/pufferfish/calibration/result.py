"""What a calibration returns: one :class:`Calibration` for every mechanism, noise and criterion,
:class:`Skipped` for a mechanism left out of a comparison, and :class:`PrivacyCheckError`.

Every scale the library hands out is a :class:`Calibration` whose check passed with its rounding
bound added (``checked value + check_error_bound <= target``, :func:`.check.passes`), except
the theorem scales that have no numerical check (Gaussian noise or eps-MI on joint priors of
several columns), which carry ``not_checked`` and are never presented as checked; the
``check`` of a discrete prior with Laplace noise and pure eps is the full exact loss of SPEC 2.1
(:class:`~pufferfish.loss.exact.PrivacyLoss`: every pair's loss and the worst released value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pufferfish.loss.exact import PrivacyLoss
from pufferfish.noise.channels import DENSE_MAX_K
from pufferfish.priors.sets import prior_scope, set_summary

#: Privacy criteria: pufferfish (eps, delta)-indistinguishability (delta = 0 is pure eps) and
#: eps-mutual-information pufferfish privacy (seed 004 Def 3).
CRITERIA: tuple[str, ...] = ("(eps, delta)-PP", "eps-MI PP")


def num(x: float) -> str:
    """Short text of a number for messages and ``decided_by`` (``g`` format, 10 digits)."""
    return f"{float(x):.10g}"


class PrivacyCheckError(RuntimeError):
    """A calibrated scale failed the exact privacy check (a bug or a false theorem)."""


class TimeLimitError(RuntimeError):
    """A mechanism did not finish within its time limit: nothing was checked, nothing failed.

    Its comparison row says so (``did not finish within ...``), never that it failed the check
    (issue 33).
    """


@dataclass(frozen=True)
class RootFinding:
    """Convergence data of the root finds behind a scale.

    Attributes
    ----------
    method : str
        ``"brentq"`` (scipy.optimize.brentq).
    variable : str
        What was solved for: ``"t = exp(1/theta)"`` (relaxed), ``"log theta"`` / ``"log scale"``
        (optimal) or ``"theta"`` (seed 000 Thm 3 eq 13).
    conditions : int
        Number of conditions examined (relaxed: plan rows and columns over all pairs and priors;
        otherwise 1). The relaxed calibrator bounds every condition's root by a vectorised
        bisection and runs brentq only where the bound can decide the scale.
    solves : int
        Number of brentq root finds.
    iterations : int
        Total iterations over all solves.
    function_calls : int
        Total function evaluations over all solves (optimal: exact checks evaluated).
    converged : bool
        Whether every solve converged.
    bracket : (float, float)
        Scale bracket ``(low, high)`` of the deciding solve.
    """

    method: str
    variable: str
    conditions: int
    solves: int
    iterations: int
    function_calls: int
    converged: bool
    bracket: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "method": self.method,
            "variable": self.variable,
            "conditions": self.conditions,
            "solves": self.solves,
            "iterations": self.iterations,
            "function_calls": self.function_calls,
            "converged": self.converged,
            "bracket": list(self.bracket),
        }


@dataclass(frozen=True)
class Calibration:
    """A calibrated noise scale and the exact check it passed.

    Attributes
    ----------
    mechanism : str
        A registered mechanism (:data:`~pufferfish.calibration.registry.MECHANISMS`, or a seed 000
        theorem of :mod:`pufferfish.multiuser`).
    noise : {"laplace", "gaussian"}
        The noise: ``scale`` is the Laplace ``b`` (variance ``2 b^2``) or the Gaussian ``sigma``.
    epsilon : float
        Target eps (> 0), nats.
    delta : float
        Target delta in [0, 1) (0 for pure eps and for eps-MI).
    criterion : str
        One of :data:`CRITERIA`.
    scale : float
        The scale (>= 0, unit of the released column).
    checked_loss : float or None
        Checked privacy loss ``sup |log ratio|`` (pure eps with Laplace noise), else ``None``.
    checked_delta : float or None
        Checked hockey-stick divergence at ``epsilon`` (both directions), else ``None``; ``0.0``
        when a pure-eps mechanism was asked for ``delta > 0`` (checked as pure eps).
    checked_information : float or None
        Checked ``I(S; Y)`` (eps-MI mechanisms), else ``None``.
    check_error_bound : float
        Numerical error bound of the checked value; the check passed with it added.
    prior, pair :
        The prior and pair deciding the scale (the binding pair of the check for ``optimal``).
    decided_by : str
        What decided it, e.g. ``"plan atom 1 -> 3"`` or ``"exact loss binding at y = 2"``.
    source : str
        Paper, theorem and equation.
    root : RootFinding or None
        Convergence data where a root finder ran.
    safety_step : float
        Relative move up needed to pass the check (0 if none).
    noiseless : bool
        ``scale == 0``: the priors already satisfy the criterion (only if the priors are right).
    check : PrivacyLoss or None
        The full exact loss (SPEC 2.1) for discrete priors with Laplace noise and pure eps: the
        worst prior, pair and released value and every pair's loss; ``None`` for other checks.
    prior_set : mapping or None
        For which priors the check holds: ``{"kind": "dkw" | "l1", "confidence", "radius":
        {secret: radius}}`` when it is the worst case over prior sets around the estimates
        (:mod:`pufferfish.priors.sets`); None when it holds for the given priors themselves.
    expected_accuracy, expected_abs_error : float or None
        Utility of the release for a finite alphabet (:func:`pufferfish.calibration.mapping.
        additive_utility`): the probability that the released value rounds to the true one,
        and ``E|noise|``; None where not computed.
    not_checked : str or None
        ``None`` when the scale passed its exact check (every result of the library but the
        next case). Otherwise why no numerical check exists for it (Gaussian noise or eps-MI on
        joint priors of several columns): the scale then rests on its theorem alone, every
        ``checked_*`` field is ``None`` and tables and JSON say "not numerically checked".
    raised_from : float or None
        A release raised to meet a ledger's budget (:mod:`pufferfish.pipeline.ledgered`): the
        scale it was calibrated at alone; ``checked_*`` are then re-checked at ``scale``.
        ``None`` otherwise.
    """

    mechanism: str
    noise: str
    epsilon: float
    delta: float
    criterion: str
    scale: float
    checked_loss: float | None
    checked_delta: float | None
    checked_information: float | None
    check_error_bound: float
    prior: str
    pair: tuple[str, str]
    decided_by: str
    source: str
    root: RootFinding | None
    safety_step: float
    noiseless: bool
    check: PrivacyLoss | None = None
    prior_set: Mapping[str, Any] | None = None
    expected_accuracy: float | None = None
    expected_abs_error: float | None = None
    not_checked: str | None = None
    raised_from: float | None = None

    @property
    def numerically_checked(self) -> bool:
        """Whether the scale passed an exact check (:attr:`not_checked` is ``None``)."""
        return self.not_checked is None

    @property
    def variance(self) -> float:
        """Noise variance: ``2 b^2`` (Laplace, seed 001 eq 3) or ``sigma^2`` (Gaussian)."""
        return 2.0 * self.scale**2 if self.noise == "laplace" else self.scale**2

    def guarantee(self, prior_kind: str = "empirical") -> str:
        """The guarantee in words: what was checked, and for which adversary priors.

        Parameters
        ----------
        prior_kind : str
            Whose prior a check without a prior set holds for (``"empirical"``,
            ``"fitted Gaussian"``, ``"fitted GMM"``).

        Returns
        -------
        str
        """
        if self.not_checked is not None:
            what = (
                "eps-MI" if self.criterion == "eps-MI PP" else f"(epsilon={self.epsilon}, delta={self.delta})"
            )
            return (
                f"{what} pufferfish privacy by {self.source} alone: NOT numerically checked "
                f"({self.not_checked}). " + prior_scope(self.prior_set, prior_kind)
            )
        if self.criterion == "eps-MI PP":
            text = (
                f"epsilon={self.epsilon} mutual-information pufferfish privacy (seed 004 Def 3): "
                f"checked I(S; Y) {self.checked_information:.6g} (+ bound {self.check_error_bound:.2g}) "
                "<= epsilon with the secret's marginal taken from the rows; by seed 004 Thm 1 this implies "
                f"(eps', {math.sqrt(2 * self.epsilon):.6g})-pufferfish privacy for every eps'."
            )
        elif self.delta == 0.0:
            text = (
                f"(epsilon={self.epsilon}, S)-pufferfish privacy for the pairs above: exact privacy loss "
                f"{self.checked_loss:.6g} <= epsilon (SPEC sec 2.1, 4)."
            )
        else:
            text = (
                f"(epsilon={self.epsilon}, delta={self.delta}, S)-pufferfish privacy for the pairs above: "
                f"checked delta {self.checked_delta:.6g} (+ bound {self.check_error_bound:.2g}) <= delta "
                "(hockey-stick divergence, both directions; SPEC sec 0, 4, 5)."
            )
        return text + " " + prior_scope(self.prior_set, prior_kind)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``None`` where a field does not apply).

        The ``check_worst_y``, ``check_pair`` and ``check_prior`` keys are present when the full
        exact loss was computed (:attr:`check`).
        """
        out = _row(
            self,
            scale=self.scale,
            variance=self.variance,
            checked_delta=self.checked_delta,
            checked_information=self.checked_information,
            root=None if self.root is None else self.root.to_dict(),
        )
        out["numerically_checked"] = self.numerically_checked
        out["not_checked"] = self.not_checked
        if self.check is not None:
            out["check_worst_y"] = self.check.worst_y
            out["check_pair"] = list(self.check.pair)
            out["check_prior"] = self.check.prior
        return out


@dataclass(frozen=True)
class Skipped:
    """A mechanism left out of a comparison, with the reason.

    Attributes
    ----------
    mechanism : str
    epsilon : float
    reason : str
        Why it does not apply (e.g. ``"needs discrete priors"``) or why it failed the exact check
        (``"fails the exact privacy check: ..."``).
    delta : float
        The target delta of the comparison (0 for pure eps).
    """

    mechanism: str
    epsilon: float
    reason: str
    delta: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``scale`` is ``None``)."""
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "scale": None,
            "reason": self.reason,
        }


@dataclass(frozen=True, eq=False)
class MappingCalibration:
    """A randomized mapping of a finite alphabet (a row-stochastic matrix) and its exact check.

    The release replaces each true value ``a_x`` by ``a_w`` with probability ``matrix[x, w]``
    (:mod:`pufferfish.calibration.mapping`): no additive noise, so there is no scale.

    Attributes
    ----------
    mechanism : str
        ``"optimal-mapping"``, ``"randomized-response"``, ``"randomized-response-dp"`` or
        ``"geometric"``.
    epsilon : float
        Target eps (> 0), nats.
    support : numpy.ndarray, shape (k,)
        The alphabet ``a_1 < ... < a_k`` (codes of a categorical column, or numeric values):
        rows and columns of ``matrix`` in this order.
    channel : DenseChannel or RandomizedResponseChannel
        The released mapping on the dyadic grid (:mod:`pufferfish.noise.channels`): integer weights,
        every row summing to ``2^52`` (what the secure sampler draws from,
        :func:`pufferfish.noise.samplers.sample_mapping`); randomized response as its two weights, at
        any alphabet size.
    checked_loss : float
        The exact privacy loss of ``matrix`` (max over outputs, pairs, priors and both directions
        of the log-ratio of the released pmfs; the worst case over the prior sets when there are
        sets), nats.
    check_error_bound : float
        Rounding bound of ``checked_loss``; the check passed with it added.
    prior, pair :
        The adversary prior and pair of the worst output.
    decided_by : str
        What decided the matrix (``"LP optimum (HiGHS), loss binding at output 'x'"``...).
    source : str
        Paper, theorem or construction.
    parameter : float or None
        ``p`` (randomized response: keep probability), ``alpha`` (geometric ``Pr(Z = z) ~
        alpha^|z|``), or None (the LP).
    safety_step : float
        ``lambda`` of the mixture ``(1 - lambda) M + lambda U`` (``U`` uniform rows) that made the
        rounded matrix pass its check (0 if none).
    expected_accuracy : float
        ``sum_x mu(x) matrix[x, x]`` in [0, 1] for the utility's weights ``mu``.
    expected_abs_error : float
        ``sum_x mu(x) sum_w matrix[x, w] |a_w - a_x|`` (unit of the column; codes if categorical).
    utility : str
        The objective of the LP (``"accuracy"`` or ``"absolute"``); baselines report both figures.
    solver : mapping
        Solver data: ``{"status", "message", "variables", "constraints", "lp_objective",
        "seconds"}`` for the LP (``lp_objective``: the LP's optimum before rounding, a bound on
        every mechanism's utility), else the root finder's.
    prior_set : mapping or None
        As :attr:`Calibration.prior_set`.
    delta : float
        Target delta (the check is pure eps, so ``checked_delta = 0``).
    """

    mechanism: str
    epsilon: float
    support: Any
    channel: Any
    checked_loss: float
    check_error_bound: float
    prior: str
    pair: tuple[str, str]
    decided_by: str
    source: str
    parameter: float | None
    safety_step: float
    expected_accuracy: float
    expected_abs_error: float
    utility: str
    solver: Mapping[str, Any]
    prior_set: Mapping[str, Any] | None = None
    delta: float = 0.0

    noise: str = "none"
    criterion: str = "(eps, delta)-PP"
    scale: None = None

    @property
    def weights(self) -> Any:
        """The integer weights, shape (k, k), ``matrix = weights / 2^52`` exactly.

        Raises
        ------
        ValueError
            Above 1024 values (a randomized-response channel of any size is used through
            :attr:`channel`, without its ``k^2`` entries).
        """
        if self.channel.k > DENSE_MAX_K:
            raise ValueError(
                f"the matrix of {self.channel.k} values is not built ({self.channel.k}^2 entries): use "
                ".channel (its draw, diagonal and describe)"
            )
        return self.channel.dense_weights()

    @property
    def matrix(self) -> Any:
        """The released row-stochastic matrix, shape (k, k): ``weights / 2^52`` (exact in float64)."""
        return self.weights / float(2**52)

    @property
    def noiseless(self) -> bool:
        """Whether the matrix is the identity (every value released as it is)."""
        import numpy as np

        return bool(np.all(self.channel.diagonal() == 2**52))

    def guarantee(self, prior_kind: str = "empirical") -> str:
        """The guarantee in words (see :meth:`Calibration.guarantee`)."""
        return (
            f"(epsilon={self.epsilon}, S)-pufferfish privacy for the pairs above: exact privacy loss "
            f"{self.checked_loss:.6g} (+ bound {self.check_error_bound:.2g}) <= epsilon of the released "
            "matrix (max over outputs of the log-ratio of the released pmfs). "
            + prior_scope(self.prior_set, prior_kind)
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: ``scale`` is None; ``matrix`` holds k lists of k probabilities
        (rows = true value in alphabet order, columns = released value) up to 1024 values, else
        None; ``channel`` its structure
        (:meth:`pufferfish.noise.channels.RandomizedResponseChannel.describe`)."""
        out = _row(
            self,
            scale=None,
            variance=None,
            checked_delta=0.0 if self.delta > 0 else None,
            checked_information=None,
            root=None,
        )
        out.update(
            solver=dict(self.solver),
            parameter=self.parameter,
            utility=self.utility,
            matrix=self.matrix.tolist() if self.channel.k <= DENSE_MAX_K else None,
            channel=self.channel.describe(),
        )
        return out


def _row(
    c: Calibration | MappingCalibration,
    *,
    scale: float | None,
    variance: float | None,
    checked_delta: float | None,
    checked_information: float | None,
    root: dict[str, Any] | None,
) -> dict[str, Any]:
    """The JSON row both result types share: their common fields, and the ones that differ
    between them (scale, variance, checked delta and information, root finding) as given."""
    return {
        "mechanism": c.mechanism,
        "noise": c.noise,
        "epsilon": c.epsilon,
        "delta": c.delta,
        "criterion": c.criterion,
        "scale": scale,
        "variance": variance,
        "checked_loss": c.checked_loss,
        "checked_delta": checked_delta,
        "checked_information": checked_information,
        "check_error_bound": c.check_error_bound,
        "prior": c.prior,
        "pair": list(c.pair),
        "decided_by": c.decided_by,
        "source": c.source,
        "safety_step": c.safety_step,
        "noiseless": c.noiseless,
        "root": root,
        "prior_set": dict(c.prior_set) if c.prior_set is not None else set_summary(None),
        "expected_accuracy": c.expected_accuracy,
        "expected_abs_error": c.expected_abs_error,
    }

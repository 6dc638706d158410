"""The priors of a count query on a Markov chain: ``P(count | X_i = a)`` for every time and state,
exactly, by forward-backward convolution over counts (never by enumerating sequences).

The released value is the number of times the chain visits a target state, ``C = sum_t [X_t =
target]`` (``count``, sensitivity 1 in each ``X_t``), or ``C / T`` (``frequency``). For the secret
``X_i = a`` the adversary's prior on ``C`` is ``P(C | X_i = a)``: given ``X_i``, the past and the
future are independent (Markov property), so with the forward table
``F_t(x, c) = P(X_t = x, C_{0..t} = c)`` and the backward table
``B_t(x, c) = P(C_{t..T-1} = c | X_t = x)``,

    P(C = c, X_i = a) = sum_{c1 + [a = target] + c2 = c}
                        (sum_u F_{i-1}(u, c1) M[u, a]) (sum_v M[a, v] B_{i+1}(v, c2)).

Each table step costs O(k^2 T) and each node's convolution O(T^2): O(T^2 k^2 + T^3 k) in time
(the cubic term is a direct convolution in C, run for the nodes on two worker threads while the
tables step back; a table step computes only the counts it can reach; a binary chain at
T = 10,000 calibrates in 28.8 s and 960 MiB, ``benchmarks/bench_markov.py --long``). Memory: the
forward tables are kept every ``sqrt(T)`` steps and recomputed a segment at a time on the way
back (O(T^1.5 k)); the priors themselves take ``T + 1`` floats per time and state (their log
pmf; the pmf is recomputed when read, and the support array is shared). The issue asked O(T k)
memory per node: that is the size of a node's prior, which the check needs. A time-reversible stationary chain
(:attr:`~.chain.MarkovChain.time_reversible`) needs half the times: the count is symmetric in
time. Every prior is a
1-D :class:`~pufferfish.priors.distributions.DiscretePrior` on ``0..T`` (or ``0, 1/T, ..., 1``), so the
existing
mechanisms and the exact check of SPEC sec 2.1 apply unchanged (issue 30); the Markov quilt
mechanisms read the chain from :attr:`pufferfish.priors.scenario.Scenario.model`.

Rounding: the tables are kept in log space (probabilities such as ``0.1^T`` underflow float64, and
the extreme counts decide the tails of a Laplace release: none may be dropped). A step is a
``logsumexp`` of ``k`` terms, within ``(k + 4) u (1 + L)`` of its exact value (``u = 2^-53``,
``L`` the largest ``|log|`` met); errors add along the ``T`` steps each way. The convolution of two
log vectors cuts each into contiguous runs whose values span at most :data:`_BLOCK_NATS` nats and
convolves each pair of runs in linear space after a shift (a sum of non-negative terms, within a
relative ``(T + 1) u``, and no product underflows: ``e^{-600}`` is a normal float), combined by
``logaddexp``. The bound ``log_error`` of every prior is the sum, stated in
:func:`count_priors`; the exact check adds it
(:attr:`~pufferfish.priors.distributions.DiscretePrior.log_error`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import short_list
from pufferfish.markov.chain import MarkovChain, row_sum_log_error
from pufferfish.markov.rowballs import RowBalls
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.priors.scenario import AdversaryPrior, Scenario

#: Queries on a chain: the number of visits to the target state, their share of the length, or
#: the visits to every state (two states: each bar gets its own Laplace noise of one scale).
QUERIES = ("count", "frequency", "histogram")

#: Longest series whose histogram is checked: the product-Laplace check on the (T + 1)^2 grid
#: costs about 2 (T + 1)^3 operations per pair (:func:`pufferfish.loss.product.product_laplace_loss`).
HISTOGRAM_MAX_LENGTH = 1000

#: The mechanisms compared on a chain by default: the Markov baselines and the additive ones.
MARKOV_MECHANISMS = (
    "group-dp", "gk16", "mqm-approx", "mqm-exact",
    "l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal", "optimal-set",
)  # fmt: skip

#: Most memory (bytes) the count priors of one model may take: about ``8 (T + 1)`` bytes per
#: checked time, state and chain (a log pmf of ``T + 1`` counts each; a binary chain at
#: T = 10,000, 5,000 checked times, peaks at 960 MiB in ``benchmarks/bench_markov.py``). A model
#: beyond it is refused before anything is allocated, with the memory it would need (issue 43:
#: ``--length 1e18`` ended in a MemoryError, 1e7 ran until killed).
MAX_PRIOR_BYTES = 8 * 2**30

#: Most operations (``checked times x k x (T + 1)^2``, the convolutions) the count priors of one chain
#: may take: a binary chain at T = 10,000 (1.0e12) calibrates in 28.8 s
#: (``benchmarks/bench_markov.py --long``); beyond it a model is refused at once, naming the limit
#: (issue 55: T = 20,000 from data ran for minutes without a word).
MAX_PRIOR_WORK = 1.2e12

#: From this length on, :func:`count_priors` convolves on two worker threads.
_THREADS_FROM = 200

#: Largest span (nats) of the values of one block of a log-space convolution.
_BLOCK_NATS = 300.0

_U = 2.0**-53


class NoPairError(ValueError):
    """No time step has two states of positive probability: there is no pair to protect."""

    def __init__(self) -> None:
        super().__init__("no time step has two states of positive probability: there is no pair to protect")


def secret_name(i: int, state: str) -> str:
    """The secret ``X_i = state`` as written in results: ``"X[i]=state"``."""
    return f"X[{i}]={state}"


@dataclass(frozen=True)
class CountModel:
    """A count (or frequency) query on chains of a given length: what the Markov mechanisms read.

    Parameters
    ----------
    chains : sequence of MarkovChain
        The class of chains the adversary may believe (the guarantee is the maximum over them):
        one chain, or a finite list with the same states.
    length : int
        ``T >= 1``, the number of time steps.
    target : str
        The state whose visits are counted (a name of ``chains[0].states``).
    query : {"count", "frequency", "histogram"}
        ``C`` (sensitivity 1), ``C / T`` (sensitivity ``1 / T``), or the visits to each of the
        two states of a binary chain (L1 sensitivity 2: one step moves one visit from a bar to
        the other; each bar gets Laplace noise of the same scale, as Song et al. 2017 add
        ``Lap(L sigma)`` to each coordinate of an L-Lipschitz query). A histogram on more than
        two states needs priors on count vectors (about ``T^(k-1)`` atoms per time): refused.
    interval : (float, float), optional
        The class is every binary chain with ``P(0 -> 1)`` and ``P(1 -> 0)`` in this interval
        (an infinite class), and ``chains`` the chains of it that are checked
        (:func:`~.chain.binary_interval_chains`): MQMApprox and group DP are certified over the
        class; the other scales are not (their rows say so).
    row_balls : RowBalls, optional
        The class is every chain of this confidence set (:mod:`.rowballs`: each row within an L1
        ball of the estimate's), ``chains`` the chains of it listed for the exact checks (the
        estimate first): MQMApprox (:func:`~.quilts.row_balls_sigma`) and group DP are certified
        over the set; every other scale is checked on the listed chains only (its row says so).

    Raises
    ------
    ValueError
        On an empty class, chains with other states, a length below 1, a target that is not a
        state, another query, or priors that would take more than :data:`MAX_PRIOR_BYTES`
        (the message says how much).
    """

    chains: tuple[MarkovChain, ...]
    length: int
    target: str
    query: str = "count"
    interval: tuple[float, float] | None = None
    row_balls: RowBalls | None = None

    #: The model's kind: the registry finds the Markov mechanisms' implementations by it
    #: (:data:`pufferfish.calibration.registry.MODEL_MECHANISMS`, :mod:`pufferfish.markov.mechanisms`).
    kind: ClassVar[str] = "markov count"

    def __post_init__(self) -> None:
        chains = tuple(self.chains)
        if not chains or not all(isinstance(c, MarkovChain) for c in chains):
            raise ValueError("chains must hold at least one MarkovChain")
        if len({c.states for c in chains}) != 1:
            raise ValueError("chains must all have the same states")
        if isinstance(self.length, bool) or not isinstance(self.length, (int, np.integer)) or self.length < 1:
            raise ValueError(f"length must be an integer >= 1, got {self.length!r}")
        if str(self.target) not in chains[0].states:
            raise ValueError(
                f"target must be one of the states {short_list(chains[0].states)}, got {self.target!r}"
            )
        if self.query not in QUERIES:
            raise ValueError(f"query must be one of {', '.join(QUERIES)}, got {self.query!r}")
        if self.query == "histogram" and chains[0].k != 2:
            raise ValueError(
                f"query 'histogram' is available for two states, got {chains[0].k}: on more states it needs "
                "priors on count vectors (about T^(k-1) atoms per time), not implemented"
            )
        if self.query == "histogram" and int(self.length) > HISTOGRAM_MAX_LENGTH:
            raise ValueError(
                f"query 'histogram' is checked up to length {HISTOGRAM_MAX_LENGTH:,} (its exact check costs "
                f"about 2 (T + 1)^3 operations per pair), got {self.length!r}: release the count"
            )
        if self.interval is not None:
            lo, hi = (float(x) for x in self.interval)
            if not (0.0 < lo <= hi < 1.0) or chains[0].k != 2:
                raise ValueError(
                    f"interval must be 0 < low <= high < 1 on binary chains, got {self.interval!r}"
                )
            object.__setattr__(self, "interval", (lo, hi))
        if self.row_balls is not None and (
            not isinstance(self.row_balls, RowBalls)
            or self.row_balls.k != chains[0].k
            or self.interval is not None
        ):
            raise ValueError("row_balls must be a RowBalls set over the chains' states (and no interval)")
        object.__setattr__(self, "chains", chains)
        object.__setattr__(self, "length", int(self.length))
        object.__setattr__(self, "target", str(self.target))
        need = self.prior_bytes
        if need > MAX_PRIOR_BYTES:
            raise ValueError(
                f"length {self.length:,} needs about {need / 2**30:,.1f} GiB for the count priors "
                f"({self.length + 1:,} counts per time, state and chain; {chains[0].k} states, "
                f"{len(self.checked_times):,} times, {self.checked_chains} chain(s)); the limit is "
                f"{MAX_PRIOR_BYTES / 2**30:g} GiB"
            )
        work = len(self.checked_times) * chains[0].k * (self.length + 1) ** 2
        if work > MAX_PRIOR_WORK:
            raise ValueError(
                f"length {self.length:,} needs about {work:.2g} operations per chain for the exact count "
                f"priors ({len(self.checked_times):,} times x {chains[0].k} states x (T + 1)^2); the limit"
                f" is {MAX_PRIOR_WORK:.2g} (a binary chain at T = 10,000 takes about 30 s): calibrate a "
                "shorter --length"
            )

    @property
    def checked_chains(self) -> int:
        """How many chains the priors are computed for (a chain with ``initial="any"`` counts
        its starts, :meth:`~.chain.MarkovChain.starts`)."""
        return sum(c.k + 1 if c.any_start else 1 for c in self.chains)

    @property
    def prior_bytes(self) -> int:
        """About how much memory the count priors take (:data:`MAX_PRIOR_BYTES`): ``8 (T + 1)``
        bytes per checked time, state and chain (their log pmf; the pmf is not kept)."""
        return 8 * (self.length + 1) * len(self.checked_times) * self.chains[0].k * self.checked_chains

    @property
    def states(self) -> tuple[str, ...]:
        """The states' names."""
        return tuple(self.chains[0].states)

    @property
    def sensitivity(self) -> float:
        """How much one ``X_t`` moves the query (L1): 1 (count), ``1/T`` (frequency) or 2
        (histogram)."""
        return {"count": 1.0, "frequency": 1.0 / self.length, "histogram": 2.0}[self.query]

    @property
    def mirrored(self) -> bool:
        """Whether only the times ``0..ceil(T/2)-1`` are checked: every chain of the class is
        :attr:`~.chain.MarkovChain.time_reversible`, so time ``T-1-i`` has the priors of time
        ``i`` (a count is symmetric in time) and its pairs decide nothing more."""
        return all(start.time_reversible for c in self.chains for start in c.starts())

    @property
    def checked_times(self) -> range:
        """The times whose pairs are in the scenario (:attr:`mirrored`)."""
        return range((self.length + 1) // 2 if self.mirrored else self.length)

    def describe(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {
            "checked_times": (
                f"0..{self.checked_times[-1]} (time T-1-i has the priors of time i: the chain is "
                "stationary and time-reversible)"
                if self.mirrored
                else f"0..{self.length - 1}"
            ),
            "length": self.length,
            "target": self.target,
            "query": self.query,
            "sensitivity": self.sensitivity,
            "chains": [c.describe() for c in self.chains],
            "interval": None if self.interval is None else list(self.interval),
            "row_balls": None if self.row_balls is None else self.row_balls.describe(),
        }


def count_priors(
    chain: MarkovChain, length: int, target: str, *, times: Sequence[int] | None = None
) -> dict[tuple[int, int], DiscretePrior]:
    """``P(C | X_i = a)`` on ``0..T`` for every time ``i`` (or those of ``times``) and every state
    ``a`` of positive probability at ``i`` (module docstring).

    Parameters
    ----------
    chain : MarkovChain
    length : int
        ``T >= 1``.
    target : str
        The counted state.
    times : sequence of int, optional
        The times ``i`` whose priors are wanted (default all of ``0..T-1``); the tables are
        swept over every time either way.

    Returns
    -------
    dict
        ``(i, a) -> DiscretePrior`` on support ``0, 1, ..., T`` (zero masses kept, one support
        array shared by all), its ``log_pmf`` exact to ``log_error`` nats:
        ``log_error = u ((1 + L) (2 T (k + 4) + 2 T + 32 + 2 R) + 4 (B + 2)) + 2 r``, ``L`` the
        largest ``|log|`` of a positive entry met, ``B`` = :data:`_BLOCK_NATS` (the exponentials
        of the shifted runs, each within a relative ``(1 + B) u``), ``R`` the most pairs of runs
        a convolution combined (each ``logaddexp`` within ``2 u (1 + L)``) and ``r`` the chain's
        :attr:`~.chain.MarkovChain.start_log_error` (a conditional is a ratio of two sums
        over starts, each moved by at most ``e^r``), plus ``2 (T - 1) s``, ``s`` =
        :func:`~.chain.row_sum_log_error` (the floats' rows sum to 1 only within a few ``u``: a
        path of ``T - 1`` steps is within ``(T - 1) s`` of the model's, in the numerator and the
        denominator of the conditional).
    """
    k, T = chain.k, int(length)
    tgt = chain.states.index(str(target))
    wanted = np.zeros(T, dtype=bool)
    wanted[list(range(T)) if times is None else [int(i) for i in times]] = True
    with np.errstate(divide="ignore"):
        log_m = np.log(chain.transition)
    log_q0 = chain.log_initial_distribution
    # past_t(x, c) = log P(X_t = x, C_{0..t-1} = c), kept every `every` steps (checkpoints) and
    # recomputed a segment at a time on the way back: O(T^1.5 k) memory instead of O(T^2 k)
    every = max(1, math.isqrt(T))
    first = np.full((k, T + 1), -np.inf)
    first[:, 0] = log_q0
    checkpoints = [first]
    past = first
    big = _largest(first)
    for t in range(1, T):
        past = _step(_counted(past, tgt), log_m)
        big = max(big, _largest(past))
        if t % every == 0:
            checkpoints.append(past)
    support = np.arange(T + 1, dtype=np.float64)
    support.setflags(write=False)
    nodes: list[tuple[int, int, NDArray[np.float64], Future[int]]] = []
    future = np.full((k, T + 1), -np.inf)  # log P(C_{i+1..T-1} = c | X_i = a); none after T - 1
    future[:, 0] = 0.0
    # each node's convolution (the O(T^3 k) part) runs on a worker thread while this one steps
    # the tables back (NumPy's convolution releases the GIL); no array given to a worker changes
    with ThreadPoolExecutor(max_workers=2 if T >= _THREADS_FROM else 1) as pool:
        for seg in range((T - 1) // every, -1, -1):
            lo, hi = seg * every, min((seg + 1) * every, T)
            rows = [checkpoints[seg]]
            for _ in range(lo + 1, hi):
                rows.append(_step(_counted(rows[-1], tgt), log_m))
            for i in range(hi - 1, lo - 1, -1):
                if wanted[i]:
                    for a in range(k):
                        if rows[i - lo][a].max() == -np.inf:
                            continue  # X_i = a has probability 0: no secret
                        joint = np.full(T + 1, -np.inf)
                        job = pool.submit(_node, rows[i - lo][a], future[a], joint, a == tgt)
                        nodes.append((i, a, joint, job))
                        # a queued job holds its two tables: at most 16 queued, so they stay few
                        if len(nodes) > 16:
                            nodes[-17][3].result()
                # log P(C_{i..T-1} = c | X_i = x), then one step back
                future = _step(_counted(future, tgt), log_m.T)
                big = max(big, _largest(future))
        pending: list[tuple[int, int, NDArray[np.float64]]] = []
        runs = 1
        for i, a, joint, job in nodes:
            runs = max(runs, job.result())
            big = max(big, _largest(joint))
            pending.append((i, a, joint))
        del nodes
    log_error = (
        _U * ((1.0 + big) * (2 * T * (k + 4) + 2 * T + 32 + 2 * runs) + 4.0 * (_BLOCK_NATS + 2.0))
        + 2.0 * chain.start_log_error
        + 2.0 * max(T - 1, 0) * row_sum_log_error(chain.transition)
    )
    out: dict[tuple[int, int], DiscretePrior] = {}
    pending.sort(key=lambda item: (-item[0], -item[1]))
    while pending:  # each table freed as its prior is made: no second copy of them all
        i, a, joint = pending.pop()
        out[(i, a)] = DiscretePrior.from_log_pmf(support, joint, log_error=log_error, keep_pmf=False)
    return out


def _node(
    past: NDArray[np.float64], future: NDArray[np.float64], out: NDArray[np.float64], counted: bool
) -> int:
    """``log P(C = c, X_i = a)`` into ``out`` (``-inf`` filled, allocated by the caller's thread so
    that the table outlives no worker's memory pool) from ``past = log P(X_i = a, C_{0..i-1})`` and
    ``future = log P(C_{i+1..T-1} | X_i = a)``, a count up when ``a`` is the target (the top
    count, ``-inf`` there, leaves); returns the pairs of runs combined."""
    return _log_convolve(past, future, out[1:] if counted else out)


def _counted(past: NDArray[np.float64], tgt: int) -> NDArray[np.float64]:
    """The table with the current step counted: the target's row moved one count up."""
    out = past.copy()
    out[tgt] = _shift(past[tgt], 1)
    return out


def _step(table: NDArray[np.float64], log_m: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(exp(table)^T exp(log_m))`` row by row: ``out[b, c] = logsumexp_a(table[a, c] +
    log_m[a, b])``, shape (k, n), by the shift of the largest of the ``k`` terms (as
    :func:`scipy.special.logsumexp`, within ``(k + 4) u (1 + L)``); ``-inf`` where every term is.
    Only the columns from the first to the last with a finite entry are computed (the counts a
    table can reach: half of them on average), in place."""
    out = np.full((log_m.shape[1], table.shape[1]), -np.inf)
    finite = np.flatnonzero(np.isfinite(table).any(axis=0))
    if finite.size == 0:
        return out
    lo, hi = int(finite[0]), int(finite[-1]) + 1
    terms = table[:, None, lo:hi] + log_m[:, :, None]  # (from, to, count)
    top = terms.max(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms -= top
        np.exp(terms, out=terms)
        sums = terms.sum(axis=0)
        np.log(sums, out=sums)
        sums += top
    sums[top == -np.inf] = -np.inf
    out[:, lo:hi] = sums
    return out


def count_scenario(model: CountModel) -> Scenario:
    """The scenario of a count (or frequency) query: secrets ``X[i]=a``, pairs ``(X[i]=a,
    X[i]=b)`` for every time ``i`` and states ``a < b``, one adversary prior per chain of the
    class. Each chain's pairs are its own: a pair is checked under every chain in which both
    states have positive probability at ``i``; under a chain in which one of them has
    probability 0 it constrains nothing (seed 004 Def 1; the prior declares the secret
    :attr:`~pufferfish.priors.scenario.AdversaryPrior.impossible`), and never removes the pair
    from the other chains.
    When every chain is stationary and time-reversible the times ``i >= ceil(T/2)`` are left out:
    their priors are those of ``T-1-i`` exactly (:attr:`CountModel.mirrored`; the chain's
    :attr:`~.chain.MarkovChain.start_log_error` is in the priors' ``log_error``).

    Returns
    -------
    Scenario
        Priors on ``0..T`` (count) or ``0, 1/T, ..., 1`` (frequency); ``model`` attached.

    Raises
    ------
    NoPairError
        If no time has two states of positive probability (no pair to protect; a ValueError).
    """
    T = model.length
    names = model.states
    checked = [start for c in model.chains for start in c.starts()]
    times = model.checked_times
    per_chain = [count_priors(c, T, model.target, times=times) for c in checked]
    scale = 1.0 if model.query == "count" else 1.0 / T
    # the pairs of each chain are its own: (X_i = a, X_i = b) is checked under every chain in
    # which both states have positive probability at time i, and constrains nothing under a chain
    # in which one of them is impossible (seed 004 Def 1: pairs with P(s_i), P(s_j) > 0); the
    # scenario holds the union, and each chain's prior declares its impossible secrets
    pairs: list[tuple[str, str]] = []
    for i in times:
        live = [a for a in range(len(names)) if any((i, a) in p for p in per_chain)]
        pairs.extend(
            (secret_name(i, names[a]), secret_name(i, names[b]))
            for a in live
            for b in live
            if a < b and any((i, a) in p and (i, b) in p for p in per_chain)
        )
    if not pairs:
        raise NoPairError()
    secrets = {s for pair in pairs for s in pair}
    adversaries = []
    frequencies = np.arange(T + 1, dtype=np.float64) * scale  # one support shared by all priors
    frequencies.setflags(write=False)
    counted = np.arange(T + 1, dtype=np.float64)
    bars = np.column_stack(
        [counted, T - counted] if names.index(model.target) == 0 else [T - counted, counted]
    )
    for n, priors in enumerate(per_chain):
        conds: dict[str, Any] = {}
        for (i, a), p in priors.items():
            if model.query == "histogram":  # the visits to each state, in the states' order
                assert p.log_pmf is not None
                conds[secret_name(i, names[a])] = JointPrior.from_log_pmf(
                    bars, p.log_pmf, log_error=p.log_error
                )
            else:
                conds[secret_name(i, names[a])] = p if scale == 1.0 else _rescaled(p, frequencies)
        adversaries.append(
            AdversaryPrior(
                f"chain {n}" if len(per_chain) > 1 else "chain",
                conds,
                impossible=frozenset(secrets - set(conds)),
            )
        )
    metric = Metric.ones(2) if model.query == "histogram" else None
    return Scenario(tuple(pairs), tuple(adversaries), metric, model=model)


def _rescaled(prior: DiscretePrior, support: NDArray[np.float64]) -> DiscretePrior:
    assert prior.log_pmf is not None
    return DiscretePrior.from_log_pmf(support, prior.log_pmf, log_error=prior.log_error, keep_pmf=False)


def _shift(v: NDArray[np.float64], by: int) -> NDArray[np.float64]:
    """``v`` moved ``by`` places to higher counts (``-inf`` entering; the top entry leaves only
    when it is ``-inf``: counts never exceed ``T``)."""
    if by == 0:
        return v.copy()
    out = np.full_like(v, -np.inf)
    out[by:] = v[:-by]
    return out


def _largest(v: NDArray[np.float64]) -> float:
    finite = v[np.isfinite(v)]
    return float(np.max(np.abs(finite))) if finite.size else 0.0


def _runs(v: NDArray[np.float64]) -> list[tuple[int, NDArray[np.float64], float]]:
    """``v``'s finite entries cut into contiguous runs whose values span less than
    :data:`_BLOCK_NATS` (bands of that width below the largest value): ``(start, exp(v[run] -
    top), top)`` per run, every exponential in ``[e^-B, 1]`` (no underflow)."""
    finite = np.isfinite(v)
    where = np.flatnonzero(finite)
    if where.size == 0:
        return []
    top = float(v[where].max())
    lo, hi = int(where[0]), int(where[-1]) + 1
    if hi - lo == where.size and top - float(v[where].min()) < _BLOCK_NATS:
        return [(lo, np.exp(v[lo:hi] - top), top)]  # one run: the common case, in one step
    band = np.full(v.size, -1.0)
    band[finite] = np.floor((top - v[finite]) / _BLOCK_NATS)
    edges = np.flatnonzero(np.diff(band)) + 1
    out = []
    starts = np.concatenate(([0], edges))
    stops = np.concatenate((edges, [v.size]))
    for lo, hi in zip(starts.tolist(), stops.tolist(), strict=True):
        if band[lo] < 0:
            continue
        top = float(v[lo:hi].max())
        out.append((int(lo), np.exp(v[lo:hi] - top), top))
    return out


def _log_convolve(x: NDArray[np.float64], y: NDArray[np.float64], out: NDArray[np.float64]) -> int:
    """``out = log(exp(x) * exp(y))`` (the full convolution cut to ``len(out)``, ``out`` filled
    with ``-inf`` by the caller), without dropping any term; returns the number of pairs of runs
    combined (module docstring). Contiguous runs keep the direct convolutions' total length at
    ``len(x) len(y)``."""
    n = out.size
    rx, ry = _runs(x), _runs(y)
    for sx, ex, mx in rx:
        for sy, ey, my in ry:
            start = sx + sy
            if start >= n:
                continue
            part = np.convolve(ex, ey)[: n - start]  # >= e^-2B > 0: a normal float
            stop = start + part.size
            out[start:stop] = np.logaddexp(out[start:stop], np.log(part) + (mx + my))
    return len(rx) * len(ry)


def chain_class(chains: Sequence[MarkovChain] | MarkovChain) -> tuple[MarkovChain, ...]:
    """One chain or a list of chains as a tuple (the class Theta of Song et al.)."""
    return (chains,) if isinstance(chains, MarkovChain) else tuple(chains)


def binding_priors(scenario: Scenario, results: tuple[Any, ...]) -> Binding | None:
    """The count priors of the pair that decided the ``optimal`` scale among ``results``, with
    the pair and the adversary prior's name; ``None`` without an optimal calibration."""
    # a Calibration (a Skipped row has neither a pair nor a prior); read by attribute, as the
    # registry imports this module
    best = next(
        (r for r in results if r.mechanism == "optimal" and hasattr(r, "pair") and hasattr(r, "prior")), None
    )
    if best is None:
        return None
    rho = next(p for p in scenario.priors if p.name == best.prior)
    p_i, p_j = (rho.conditionals[s] for s in best.pair)
    if not (isinstance(p_i, DiscretePrior) and isinstance(p_j, DiscretePrior)):
        return None  # a histogram's priors are on pairs of bars: no 1-D figure
    return Binding(p_i, p_j, best.pair, best.prior, best.scale)


@dataclass(frozen=True)
class Binding:
    """The count priors of the pair that decided the exact optimum (for the report's figure)."""

    prior_i: DiscretePrior
    prior_j: DiscretePrior
    pair: tuple[str, str]
    prior: str
    scale: float

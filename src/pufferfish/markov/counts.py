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

Each table step costs O(k^2 T) and each node's convolution O(T^2): O(T^2 k^2 + T^3 k) in time,
O(T^2 k) in memory (the forward tables; the backward one is kept for one step). Every prior is a
1-D :class:`~pufferfish.priors.DiscretePrior` on ``0..T`` (or ``0, 1/T, ..., 1``), so the existing
mechanisms and the exact check of SPEC sec 2.1 apply unchanged (issue 30); the Markov quilt
mechanisms read the chain from :attr:`pufferfish.scenario.Scenario.model`.

Rounding: the tables are kept in log space (probabilities such as ``0.1^T`` underflow float64, and
the extreme counts decide the tails of a Laplace release: none may be dropped). A step is a
``logsumexp`` of ``k`` terms, within ``(k + 4) u (1 + L)`` of its exact value (``u = 2^-53``,
``L`` the largest ``|log|`` met); errors add along the ``T`` steps each way. The convolution of two
log vectors splits each into blocks whose values span at most :data:`_BLOCK_NATS` nats and
convolves each pair of blocks in linear space after a shift (a sum of non-negative terms, within a
relative ``(T + 1) u``, and no product underflows: ``e^{-600}`` is a normal float), combined by
``logaddexp``. The bound ``log_error`` of every prior is the sum, stated in
:func:`count_priors`; the exact check adds it (:attr:`~pufferfish.priors.DiscretePrior.log_error`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from ..priors import DiscretePrior
from ..scenario import AdversaryPrior, Scenario
from .chain import MarkovChain

#: Queries on a chain: the number of visits to the target state, or their share of the length.
QUERIES = ("count", "frequency")

#: The mechanisms compared on a chain by default: the Markov baselines and the additive ones.
MARKOV_MECHANISMS = (
    "group-dp", "gk16", "mqm-approx", "mqm-exact",
    "l1", "kantorovich", "wasserstein-inf", "relaxed", "optimal",
)  # fmt: skip

#: Largest span (nats) of the values of one block of a log-space convolution.
_BLOCK_NATS = 300.0

_U = 2.0**-53


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
    query : {"count", "frequency"}
        ``C`` (sensitivity 1) or ``C / T`` (sensitivity ``1 / T``).
    interval : (float, float), optional
        The class is every binary chain with ``P(0 -> 1)`` and ``P(1 -> 0)`` in this interval
        (an infinite class), and ``chains`` the chains of it that are checked
        (:func:`~.chain.binary_interval_chains`): MQMApprox and group DP are certified over the
        class; the other scales are not (their rows say so).

    Raises
    ------
    ValueError
        On an empty class, chains with other states, a length below 1, a target that is not a
        state, or another query.
    """

    chains: tuple[MarkovChain, ...]
    length: int
    target: str
    query: str = "count"
    interval: tuple[float, float] | None = None

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
                f"target must be one of the states {list(chains[0].states)}, got {self.target!r}"
            )
        if self.query not in QUERIES:
            raise ValueError(f"query must be one of {', '.join(QUERIES)}, got {self.query!r}")
        if self.interval is not None:
            lo, hi = (float(x) for x in self.interval)
            if not (0.0 < lo <= hi < 1.0) or chains[0].k != 2:
                raise ValueError(
                    f"interval must be 0 < low <= high < 1 on binary chains, got {self.interval!r}"
                )
            object.__setattr__(self, "interval", (lo, hi))
        object.__setattr__(self, "chains", chains)
        object.__setattr__(self, "length", int(self.length))
        object.__setattr__(self, "target", str(self.target))

    @property
    def states(self) -> tuple[str, ...]:
        """The states' names."""
        return tuple(self.chains[0].states)

    @property
    def sensitivity(self) -> float:
        """How much one ``X_t`` moves the query: 1 (count) or ``1/T`` (frequency)."""
        return 1.0 if self.query == "count" else 1.0 / self.length

    def describe(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {
            "length": self.length,
            "target": self.target,
            "query": self.query,
            "sensitivity": self.sensitivity,
            "chains": [c.describe() for c in self.chains],
            "interval": None if self.interval is None else list(self.interval),
        }


def count_priors(chain: MarkovChain, length: int, target: str) -> dict[tuple[int, int], DiscretePrior]:
    """``P(C | X_i = a)`` on ``0..T`` for every time ``i`` and every state ``a`` of positive
    probability at ``i`` (module docstring).

    Parameters
    ----------
    chain : MarkovChain
    length : int
        ``T >= 1``.
    target : str
        The counted state.

    Returns
    -------
    dict
        ``(i, a) -> DiscretePrior`` on support ``0, 1, ..., T`` (zero masses kept), its
        ``log_pmf`` exact to ``log_error`` nats:
        ``log_error = u ((1 + L) (2 T (k + 4) + 2 T + 32) + 4 (B + 2))``, ``L`` the largest
        ``|log|`` of a positive entry met and ``B`` = :data:`_BLOCK_NATS` (the exponentials of the
        shifted blocks, each within a relative ``(1 + B) u``).
    """
    k, T = chain.k, int(length)
    tgt = chain.states.index(str(target))
    with np.errstate(divide="ignore"):
        log_m = np.log(chain.transition)
        log_q0 = np.log(chain.initial_distribution)
    forward = np.full((T, k, T + 1), -np.inf)  # F_t(x, c) = log P(X_t = x, C_{0..t} = c)
    forward[0, :, 0] = log_q0
    forward[0, tgt] = _shift(forward[0, tgt], 1)
    for t in range(1, T):
        step = logsumexp(forward[t - 1][:, None, :] + log_m[:, :, None], axis=0)  # (k, T+1)
        step[tgt] = _shift(step[tgt], 1)
        forward[t] = step
    big = _largest(forward)
    support = np.arange(T + 1, dtype=np.float64)
    pending: list[tuple[int, int, NDArray[np.float64]]] = []
    future = np.full((k, T + 1), -np.inf)  # log P(C_{i+1..T-1} = c | X_i = a); none after T - 1
    future[:, 0] = 0.0
    for i in range(T - 1, -1, -1):
        if i > 0:  # log P(X_i = a, C_{0..i-1} = c)
            past = logsumexp(forward[i - 1][:, None, :] + log_m[:, :, None], axis=0)
        else:
            past = np.full((k, T + 1), -np.inf)
            past[:, 0] = log_q0
        for a in range(k):
            if past[a].max() == -np.inf:
                continue  # X_i = a has probability 0: no secret
            joint = _log_convolve(past[a], future[a])
            if a == tgt:
                joint = _shift(joint, 1)
            pending.append((i, a, joint))
            big = max(big, _largest(joint))
        backward = future.copy()  # B_i(x, c) = log P(C_{i..T-1} = c | X_i = x)
        backward[tgt] = _shift(backward[tgt], 1)
        future = logsumexp(log_m[:, :, None] + backward[None, :, :], axis=1)
        big = max(big, _largest(future))
    # the steps each way, the convolution's sum and log, and each block's exp of a shifted value
    # (|x - max| <= _BLOCK_NATS: relative (1 + _BLOCK_NATS) u, twice)
    log_error = _U * ((1.0 + big) * (2 * T * (k + 4) + 2 * T + 32) + 4.0 * (_BLOCK_NATS + 2.0))
    out: dict[tuple[int, int], DiscretePrior] = {}
    for i, a, joint in pending:
        out[(i, a)] = DiscretePrior.from_log_pmf(support, joint, log_error=log_error)
    return out


def count_scenario(model: CountModel) -> Scenario:
    """The scenario of a count (or frequency) query: secrets ``X[i]=a``, pairs ``(X[i]=a,
    X[i]=b)`` for every time ``i`` and states ``a < b`` (both of positive probability at ``i``;
    a state of probability 0 at ``i`` is no secret), one adversary prior per chain of the class.

    Returns
    -------
    Scenario
        Priors on ``0..T`` (count) or ``0, 1/T, ..., 1`` (frequency); ``model`` attached.

    Raises
    ------
    ValueError
        If no time has two states of positive probability (no pair to protect).
    """
    T = model.length
    names = model.states
    checked = [start for c in model.chains for start in c.starts()]
    per_chain = [count_priors(c, T, model.target) for c in checked]
    scale = 1.0 if model.query == "count" else 1.0 / T
    pairs: list[tuple[str, str]] = []
    for i in range(T):
        live = [a for a in range(len(names)) if all((i, a) in p for p in per_chain)]
        pairs.extend(
            (secret_name(i, names[a]), secret_name(i, names[b])) for a in live for b in live if a < b
        )
    if not pairs:
        raise ValueError("no time step has two states of positive probability: there is no pair to protect")
    adversaries = []
    for n, priors in enumerate(per_chain):
        conds = {
            secret_name(i, names[a]): p if scale == 1.0 else _rescaled(p, scale)
            for (i, a), p in priors.items()
        }
        adversaries.append(AdversaryPrior(f"chain {n}" if len(per_chain) > 1 else "chain", conds))
    return Scenario(tuple(pairs), tuple(adversaries), model=model)


def _rescaled(prior: DiscretePrior, scale: float) -> DiscretePrior:
    assert prior.log_pmf is not None
    return DiscretePrior.from_log_pmf(prior.support * scale, prior.log_pmf, log_error=prior.log_error)


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


def _blocks(v: NDArray[np.float64]) -> list[tuple[NDArray[np.intp], float]]:
    """Index sets of ``v``'s finite entries grouped so that each group spans at most
    :data:`_BLOCK_NATS`, each with its largest value."""
    idx = np.flatnonzero(np.isfinite(v))
    if idx.size == 0:
        return []
    order = idx[np.argsort(-v[idx], kind="stable")]
    out = []
    start = 0
    while start < order.size:
        top = v[order[start]]
        stop = start + int(np.searchsorted(-v[order[start:]], -(top - _BLOCK_NATS), side="right"))
        out.append((np.sort(order[start:stop]), float(top)))
        start = stop
    return out


def _log_convolve(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(exp(x) * exp(y))`` (full convolution cut to ``len(x)``), without dropping any term
    (module docstring)."""
    n = x.size
    out = np.full(n, -np.inf)
    for ix, mx in _blocks(x):
        ex = np.zeros(n)
        ex[ix] = np.exp(x[ix] - mx)
        lo_x, hi_x = int(ix[0]), int(ix[-1]) + 1
        for iy, my in _blocks(y):
            ey = np.zeros(n)
            ey[iy] = np.exp(y[iy] - my)
            lo_y, hi_y = int(iy[0]), int(iy[-1]) + 1
            part = np.convolve(ex[lo_x:hi_x], ey[lo_y:hi_y])
            start = lo_x + lo_y
            stop = min(n, start + part.size)
            if stop <= start:
                continue
            with np.errstate(divide="ignore"):
                logs = np.log(part[: stop - start]) + mx + my
            out[start:stop] = np.logaddexp(out[start:stop], logs)
    return out


def chain_class(chains: Sequence[MarkovChain] | MarkovChain) -> tuple[MarkovChain, ...]:
    """One chain or a list of chains as a tuple (the class Theta of Song et al.)."""
    return (chains,) if isinstance(chains, MarkovChain) else tuple(chains)

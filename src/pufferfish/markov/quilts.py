"""Baselines for a count on a Markov chain: the Markov quilt mechanism (MQMExact, MQMApprox), group
differential privacy and GK16. Each returns a Laplace scale for the count (times the query's
sensitivity); the registry checks it exactly on the count priors like any other proposal.

Markov quilt mechanism (Song, Wang and Chaudhuri, SIGMOD 2017, arXiv 1603.03977, Algorithm 2 and
sec 4.2). For a node ``X_i`` a Markov quilt is ``X_Q = {X_{i-a}, X_{i+b}}`` (either end may be
absent: ``a = i + 1`` or ``b = T - i``); it separates the nearby nodes ``X_N`` (``a + b - 1`` of
them, ``X_i`` included) from the remote ones. With the max-influence

    e(X_Q | X_i) = max_{x != y} max_{x_Q} log P(X_Q = x_Q | X_i = x) / P(X_Q = x_Q | X_i = y),

the node needs ``sigma_i = min over quilts with e < eps of card(X_N) / (eps - e)`` and the count
gets ``Laplace(sigma)`` with ``sigma = max_i sigma_i`` (the trivial quilt, ``X_N`` everything,
``e = 0``, gives ``T / eps``). On a chain ``P(X_{i-a} = u, X_{i+b} = v | X_i = x) =
P(X_{i-a} = u | X_i = x) M^b[x, v]`` and ``P(X_{i-a} = u | X_i = x) = q_{i-a}(u) M^a[u, x] /
q_i(x)``, so for a pair ``(x, y)`` the influence is
``max_v log(M^b[x, v] / M^b[y, v]) + max_u log(M^a[u, x] / M^a[u, y]) + log(q_i(y) / q_i(x))``
(``u`` over the states of positive probability at ``i - a``): MQMExact takes the maximum over
pairs jointly. For every initial distribution (``initial="any"``) ``q_i = q_0 M^i`` is a mixture
of the rows of ``M^i``, so ``q_i(y) / q_i(x) <= max_s M^i[s, y] / M^i[s, x]`` (a ratio of mixtures
is at most the largest ratio of their parts): the scale then holds for the whole class (the
authors' code, ``exactRatioBinaryGenerate`` with two arguments, bounds it the same way).
MQMApprox bounds it for a stationary chain from the eigengap ``g`` (of ``M`` when
the chain is reversible, else half that of ``M M*``) and ``pi_min``: with ``D(a) = e^{-g a} /
pi_min < 1``, ``e <= 2 log((1 + D(a)) / (1 - D(a))) + log((1 + D(b)) / (1 - D(b)))`` (the
authors' MATLAB code, which these functions reproduce to 4 digits: T = 100, eps 1, flip 0.1:
MQMExact 31.7378, MQMApprox 49.2202; flip 0.4: 3.5718, 11.5368; GK16 3.8873).

Quilts farther than :data:`QUILT_REACH` steps from their node are not searched: a smaller set of
quilts gives a larger (still valid) scale.

GK16 (Ghosh and Kleinberg, "Inferential privacy guarantees for differentially private
mechanisms", 2016), binary chains: ``gamma = log(max_j max(f_j, 1/f_j)) / 2`` of the four ratios
``f_j`` of the transition probabilities, ``Gamma`` the tridiagonal ``T x T`` matrix with ``gamma``
beside the diagonal; when its spectral norm ``2 gamma cos(pi / (T + 1))`` is below 1, an
``eps_DP``-DP count with ``eps_DP = eps / max_i 2 ((I - Gamma)^{-1} 1)_i`` is eps-inferentially
private: scale ``1 / eps_DP``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_banded

from pufferfish.markov.chain import MarkovChain, interval_class_bounds
from pufferfish.markov.counts import CountModel
from pufferfish.markov.rowballs import RowBalls

#: Largest distance from a node to its quilt's nodes that the MQM search tries.
QUILT_REACH = 400


def _powers(m: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    out = np.empty((n + 1, *m.shape))
    out[0] = np.eye(m.shape[0])
    for j in range(1, n + 1):
        out[j] = out[j - 1] @ m
    return out


def _log_ratio_max(num: NDArray[np.float64], den: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    """``max log(num / den)`` along ``axis`` (``+inf`` where ``den = 0 < num``; 0/0 skipped)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(num) - np.log(den)
    r = np.where((num == 0) & (den == 0), -np.inf, r)
    return np.asarray(np.max(r, axis=axis))


def mqm_exact_sigma(chain: MarkovChain, length: int, epsilon: float) -> tuple[float, str, int]:
    """``sigma`` of MQMExact for one chain (module docstring), what decided it, and the node."""
    T, k = length, chain.k
    reach = min(T, QUILT_REACH)
    power = _powers(chain.transition, reach)
    marg = chain.marginals(T)
    # right[b][x, y] = max_v log(M^b[x, v] / M^b[y, v]); left[a][x, y] = max_u log(M^a[u, x] / M^a[u, y])
    right = np.stack(
        [_log_ratio_max(power[b][:, None, :], power[b][None, :, :], axis=2) for b in range(reach + 1)]
    )
    best, where, node = -1.0, "", 0
    left_cache: dict[tuple[int, bytes], NDArray[np.float64]] = {}
    step_i = np.eye(k)  # M^i
    for i in range(T):
        if i > 0:
            step_i = step_i @ chain.transition
        live = marg[i] > 0
        pairs = [(x, y) for x in range(k) for y in range(k) if x != y and live[x] and live[y]]
        if not pairs:
            continue
        xs, ys = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        a_max, b_max = min(i, reach), min(T - 1 - i, reach)
        # left influence for a = 1..a_max (u over states of positive probability at i - a), 0 for none:
        # max_u log(M^a[u, x] / M^a[u, y]) depends on i only through which u are possible at i - a,
        # so it is computed once per (a, those states) and reused (a stationary chain: once per a)
        left = np.zeros((a_max + 2, len(pairs)))
        if a_max:
            if chain.any_start:  # q_i = q_0 M^i for some q_0: q_i(y) / q_i(x) <= max_s M^i[s, y] / M^i[s, x]
                start_ratio = _log_ratio_max(step_i[:, ys], step_i[:, xs], axis=0)
            else:
                start_ratio = np.log(marg[i, ys]) - np.log(marg[i, xs])
            ratios = np.empty((a_max, k, k))
            for a in range(1, a_max + 1):
                mask = marg[i - a] > 0
                key = (a, mask.tobytes())
                found = left_cache.get(key)
                if found is None:
                    pa = power[a][mask]
                    found = _log_ratio_max(pa[:, :, None], pa[:, None, :], axis=0)  # [x, y]
                    left_cache[key] = found
                ratios[a - 1] = found
            left[1 : a_max + 1] = ratios[:, xs, ys] + start_ratio[None, :]
        right_i = np.zeros((b_max + 2, len(pairs)))
        right_i[1 : b_max + 1] = right[1 : b_max + 1][:, xs, ys]
        # rows 1..a_max (columns 1..b_max) are the distances; the last is the quilt without that node
        influence = np.max(left[1:, None, :] + right_i[None, 1:, :], axis=2)
        sig, j, card, quilt = _best_quilt(influence, i, T, epsilon)
        if sig > best:
            best, node = sig, i
            where = f"node X[{i}], quilt {quilt} (card X_N = {card}, max-influence {float(influence[j]):.6g})"
    return best, where, node


def _best_quilt(
    influence: NDArray[np.float64], i: int, length: int, epsilon: float
) -> tuple[float, tuple[int, ...], int, str]:
    """The smallest ``card(X_N) / (eps - e)`` over the quilts of node ``i`` (``inf`` where
    ``e >= eps``): ``influence[p, q]`` is the max-influence of the quilt with left distance
    ``p + 1`` and right distance ``q + 1``, the last row (column) the quilt without a left (right)
    node. Returns ``(sigma, index, card, "a = .., b = ..")``."""
    a_max, b_max = influence.shape[0] - 1, influence.shape[1] - 1
    a_card = np.r_[np.arange(1, a_max + 1), i + 1]  # nodes of X_N on the left, X_i included
    b_card = np.r_[np.arange(1, b_max + 1), length - i]
    lam = epsilon - influence
    card = a_card[:, None] + b_card[None, :] - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        sig = np.where(lam > 0, card / lam, np.inf)
    j = np.unravel_index(int(np.argmin(sig)), sig.shape)
    a_txt = "none" if j[0] == a_max else str(int(a_card[j[0]]))
    b_txt = "none" if j[1] == b_max else str(int(b_card[j[1]]))
    return float(sig[j]), tuple(int(x) for x in j), int(card[j]), f"a = {a_txt}, b = {b_txt}"


def mqm_approx_sigma(chain: MarkovChain, length: int, epsilon: float) -> tuple[float, str, int]:
    """``sigma`` of MQMApprox for one stationary chain (module docstring).

    Raises
    ------
    ValueError
        If the chain does not start from its stationary distribution, or a stationary probability
        is 0 (a transient state: the bound needs an irreducible chain).
    """
    if not chain.stationary:
        raise ValueError("MQMApprox bounds the influence of a stationary chain (initial='stationary')")
    m, pi = chain.transition, chain.initial_distribution
    pi_min = float(pi.min())
    if not pi_min > 0.0:
        raise ValueError(
            "MQMApprox needs every stationary probability > 0 (an irreducible chain); this chain has a "
            "transient state, or one below the smallest float"
        )
    reversible = np.allclose(pi[:, None] * m, (pi[:, None] * m).T, rtol=0, atol=1e-12)
    if reversible:
        gap = 1.0 - float(np.sort(np.abs(np.linalg.eigvals(m)))[::-1][1])
        how = "eigengap of M"
    else:
        adjoint = (m.T * pi[None, :]) / pi[:, None]  # M*[a, b] = pi_b M[b, a] / pi_a
        gap = (1.0 - float(np.sort(np.abs(np.linalg.eigvals(m @ adjoint)))[::-1][1])) / 2.0
        how = "half the eigengap of M M*"
    return approx_sigma_from_bounds(gap, pi_min, how, length, epsilon)


def approx_sigma_from_bounds(
    gap: float, pi_min: float, how: str, length: int, epsilon: float
) -> tuple[float, str, int]:
    """MQMApprox's ``sigma`` from an eigengap and a smallest stationary probability (for one chain,
    or lower bounds over a class of chains: the bound grows as either shrinks)."""
    reach = min(length, QUILT_REACH)
    dist = np.arange(1, reach + 1, dtype=np.float64)
    d = np.exp(-gap * dist) / pi_min if pi_min > 0 else np.full(dist.size, np.inf)
    return _sigma_from_distances(d, 2.0, f"{how} {gap:.6g}, pi_min {pi_min:.6g}", length, epsilon)


def row_balls_sigma(balls: RowBalls, length: int, epsilon: float) -> tuple[float, str, int]:
    """MQMApprox's ``sigma`` certified over every stationary chain of the row balls.

    With ``tau_n`` and ``pi_low`` of :func:`~.rowballs.mixing_bounds` (every chain ``P`` of the
    set has ``|P^n(s, z) - pi(z)| <= tau_n`` and ``pi(z) >= pi_low(z)``) and
    ``D(n) = tau_n / min_z pi_low(z)``, each ratio of the max-influence (module docstring) is
    bounded for every chain of the set at once: ``M^a[u, x] / pi(x)`` and ``M^a[u, y] / pi(y)`` lie
    in ``[1 - D(a), 1 + D(a)]``, and ``M^b[x, v] / M^b[y, v] <= (pi(v) + tau_b) / (pi(v) - tau_b)``,
    so ``e <= log((1 + D(a)) / (1 - D(a))) + log((1 + D(b)) / (1 - D(b)))`` for a stationary chain
    (whose marginals are all ``pi``: the start-ratio term of the module docstring is 0). Where no
    ``D < 1`` is known only the trivial quilt remains: ``T / eps``, group DP's scale.

    Source: Song, Wang and Chaudhuri, SIGMOD 2017 (arXiv 1603.03977), Algorithm 2 and sec 4.3 (a
    class needs only bounds that hold for all its chains), with the bounds of
    :mod:`~.rowballs` in place of the eigengap (which has no simple bound over a set of
    non-reversible chains).
    """
    reach = min(length, QUILT_REACH)
    bounds = balls.bounds(reach)
    pi_min = float(bounds.pi_low.min())
    d = bounds.tau[1 : reach + 1] / pi_min if pi_min > 0 else np.full(reach, np.inf)
    how = (
        f"certified over the {balls.confidence:.0%} row balls (Dobrushin bounds of {bounds.powers} powers), "
        f"pi_min >= {pi_min:.6g}"
    )
    return _sigma_from_distances(d, 1.0, how, length, epsilon)


def _sigma_from_distances(
    d: NDArray[np.float64], left: float, how: str, length: int, epsilon: float
) -> tuple[float, str, int]:
    """``max_i`` of the best quilt's ``sigma`` when a quilt node at distance ``n`` adds
    ``log((1 + d[n-1]) / (1 - d[n-1]))`` to the max-influence (``left`` times that on the left);
    ``d >= 1`` makes the quilt unusable."""
    T = length
    reach = d.size
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(d < 1, np.log((1 + d) / (1 - d)), np.inf)
    best, where, node = -1.0, "", 0
    for i in range(T):
        a_max, b_max = min(i, reach), min(T - 1 - i, reach)
        da = np.r_[delta[:a_max], 0.0]
        db = np.r_[delta[:b_max], 0.0]
        sig, _, card, _ = _best_quilt(left * da[:, None] + db[None, :], i, T, epsilon)
        if sig > best:
            best, node = sig, i
            where = f"node X[{i}], card X_N = {card}, {how}"
    return best, where, node


def group_dp_sigma(length: int, epsilon: float) -> tuple[float, str, int]:
    """Group differential privacy over the whole series: ``T / eps`` (every node alike)."""
    return length / epsilon, f"group of T = {length} records", 0


def gk16_sigma(chain: MarkovChain, length: int, epsilon: float) -> tuple[float, str, int]:
    """GK16 for a binary chain (module docstring).

    Raises
    ------
    ValueError
        If the chain has more than 2 states, a transition probability is 0 or 1, or the spectral
        norm of ``Gamma`` is not below 1.
    """
    if chain.k != 2:
        raise ValueError("GK16 is defined for binary chains only")
    m = chain.transition
    q, p = float(m[0, 1]), float(m[1, 1])  # P(0 -> 1), P(1 -> 1)
    if not (0 < p < 1 and 0 < q < 1):
        raise ValueError("GK16 needs every transition probability strictly between 0 and 1")
    f = np.array([
        (p**2 + p * (1 - q)) / (p**2 + q * (1 - p)),
        (p / q) * ((1 - q) ** 2 + q * (1 - p)) / ((1 - p) * (1 - q) + p * (1 - p)),
        (1 - p) / (1 - q) * ((1 - q) * q + q * p) / ((1 - p) * q + p**2),
        ((1 - q) ** 2 + p * (1 - q)) / ((1 - q) ** 2 + q * (1 - p)),
    ])  # fmt: skip
    gamma = math.log(float(max(f.max(), (1 / f).max()))) / 2.0
    T = length
    norm = 2.0 * gamma * math.cos(math.pi / (T + 1))
    if norm >= 1.0:
        raise ValueError(f"GK16 needs the spectral norm of Gamma below 1, got {norm:.4g} (gamma {gamma:.4g})")
    bands = np.zeros((3, T))
    bands[0, 1:] = -gamma
    bands[1, :] = 1.0
    bands[2, :-1] = -gamma
    rows = solve_banded((1, 1), bands, np.ones(T))  # (I - Gamma)^{-1} 1
    dp_epsilon = epsilon / float(np.max(2.0 * rows))
    return 1.0 / dp_epsilon, f"gamma {gamma:.6g}, eps_DP {dp_epsilon:.6g}", int(np.argmax(rows))


def model_sigma(model: CountModel, epsilon: float, which: str) -> tuple[float, str, int, int]:
    """The largest ``sigma`` over the chains of the class, times the query's sensitivity: the
    Laplace scale of the release, what decided it, the chain's index and the node (``which`` in
    ``mqm-exact``, ``mqm-approx``, ``group-dp``, ``gk16``)."""
    if which == "mqm-approx" and model.row_balls is not None:  # certified over the set: one answer
        s, w, node = row_balls_sigma(model.row_balls, model.length, epsilon)
        return s * model.sensitivity, w, 0, node
    best, where, chain_at, node_at = -1.0, "", 0, 0
    for n, chain in enumerate(model.chains):
        if which == "mqm-exact":
            s, w, node = mqm_exact_sigma(chain, model.length, epsilon)
        elif which == "mqm-approx" and model.interval is not None:  # certified over the class
            gap, pi_min = interval_class_bounds(*model.interval)
            lo, hi = model.interval
            s, w, node = approx_sigma_from_bounds(
                gap, pi_min, f"class [{lo:g}, {hi:g}]: smallest eigengap", model.length, epsilon
            )
        elif which == "mqm-approx":
            s, w, node = mqm_approx_sigma(chain, model.length, epsilon)
        elif which == "gk16":
            s, w, node = gk16_sigma(chain, model.length, epsilon)
        else:
            s, w, node = group_dp_sigma(model.length, epsilon)
        if s > best:
            best, where, chain_at, node_at = s, w, n, node
    return best * model.sensitivity, where, chain_at, node_at

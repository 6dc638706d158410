"""The guarantee of everything a ledger records about one secret, by the first rule that applies
(issue 42; SPEC sec 7).

1. *Exact joint check* (:func:`exact_joint`): releases of table columns that do not depend on each
   other's outputs are one channel on each row, the product of their kernels on the same record
   (:mod:`pufferfish.loss.composed`), checked exactly on the joint priors of every column involved,
   estimated from the data (at the estimate, or over the L1 balls on the joint alphabet when a
   release was certified over a prior set).
2. *Windows of one series*: count releases of one Markov chain over several windows. Not in this
   version: the line says so and the next rule is tried.
3. *The theorem that adds* (:func:`adding_theorem`): every release is eps-MI pufferfish private (seed
   004, Thm 2, composability: the eps add, adaptively too), or every release is differentially
   private (sequential composition), or every release is a Markov quilt release of the same chain
   (Song and Chaudhuri 2017, arXiv 1707.02702).
4. Otherwise: no guarantee for these together, with the reasons. Never a silent sum.

Where rule 1's exact check is too large (its size counted before any allocation) and every release
is Laplace noise on one numeric column at the estimate, the certified bound of
:mod:`pufferfish.loss.lipschitz` answers in its place (``RULES[5]``). A secret with one release
only gets that release's own certificate (eps, or (eps, delta) for a
Gaussian release) when rule 1 cannot read its channel (the last of :data:`RULES`); an exact
check whose loss is infinite is rule 4 at once (no theorem can state less than an exact loss).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from pufferfish.ledger.store import Entry, LedgerError
from pufferfish.ledger.views import Unsupported, to_views
from pufferfish.loss.composed import (
    MAX_COMPOSED_ENTRIES,
    ComposedLoss,
    View,
    composed_loss,
    composed_point_loss,
    composed_size,
)
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.loss.lipschitz import lipschitz_loss
from pufferfish.priors.joint import MISSING_NUMBER
from pufferfish.tables.source import TableSource

#: The rules (module docstring). ``RULES[4]``: one release about the secret, whose own certificate
#: answers when rule 1 cannot read it (an (eps, delta) Gaussian release); ``RULES[5]``: rule 1 by
#: the certified bound of :mod:`pufferfish.loss.lipschitz`, when the exact check is too large.
RULES = (
    "exact joint check",
    "windows of one series",
    "theorem that adds",
    "no guarantee",
    "release's own check",
    "certified bound of the joint loss",
)

#: What each value of an entry's ``composes`` means for rule 3.
THEOREMS = {
    "mi": "eps-MI pufferfish privacy composes by adding (seed 004, Thm 2, composability; adaptive too)",
    "dp": "differential privacy composes by adding (sequential composition; group DP likewise)",
    "quilt": "Markov quilt releases of one chain compose by adding "
    "(Song and Chaudhuri 2017, arXiv 1707.02702)",
}


#: Mechanisms whose guarantee adds up with others of the same kind (rule 3): eps-MI PP (seed 004
#: Thm 2), differential privacy (group DP over a series' records), Markov quilt releases.
COMPOSES = {
    "mi-gaussian": "mi",
    "mi-gaussian-entropy": "mi",
    "mi-laplace": "mi",
    "randomized-response-dp": "dp",
    "group-dp": "dp",
    "mqm-approx": "quilt",
    "mqm-exact": "quilt",
}


#: An exact check of entries that are not table columns: ``(rule, check)``, the check returning
#: ``(eps, pairs, for which priors)`` or raising :class:`~.views.Unsupported` or
#: :class:`~pufferfish.loss.divergence.MemoryLimitError`.
ExactCheck: TypeAlias = "tuple[str, Callable[[Sequence[Entry]], tuple[float, tuple[PairJoint, ...], str]]]"

#: The ledger's own exact checks by entry kind: sums (:func:`sum_joint`, rule 1, below). Checks of
#: other kinds are given to :func:`guarantee` by whoever reads such entries, explicitly: series
#: (rule 2) by :data:`pufferfish.markov.ledgered.SERIES_CHECKS`, which the series release's
#: :class:`~pufferfish.ledger.record.LedgerContext` and the front doors (``ledger show``,
#: :meth:`pufferfish.Session.spent`) pass; this module imports none of them.
EXACT_CHECKS: dict[str, ExactCheck] = {}


@dataclass(frozen=True)
class PairJoint:
    """The exact joint loss of one discriminative pair (rule 1).

    Attributes
    ----------
    pair : (str, str)
    loss, error_bound : float
        Nats; the guarantee is ``loss + error_bound``.
    worst_output : tuple of float
        A released record where it is attained (one value per column released, label codes of the
        release's order for a mapping); empty for a bound.
    bound : bool
        ``loss`` is the certified upper bound of :mod:`pufferfish.loss.lipschitz` (the exact check
        too large to run), not the exact loss.
    """

    pair: tuple[str, str]
    loss: float
    error_bound: float
    worst_output: tuple[float, ...]
    bound: bool = False


@dataclass(frozen=True)
class JointGuarantee:
    """What everything released about one secret guarantees together.

    Attributes
    ----------
    secret : str
        The secret column (a series' or a sum's secret).
    entries : tuple of int
        The ledger entries covered.
    rule : str
        The rule that answered, one of :data:`RULES`.
    epsilon : float or None
        The joint guarantee in nats (rule 1: the largest ``loss + error_bound`` over the pairs;
        rule 3: the sum), None under rule 4.
    sum_of_epsilons : float
        The epsilons the releases were certified for, added (what a DP library would state).
    priors : str
        For which priors the guarantee holds.
    detail : str
        The theorem and its conditions (rule 3), why earlier rules did not answer, or why there is
        no guarantee (rule 4).
    pairs : tuple of PairJoint
        Rule 1: per pair.
    seconds : float
        Time the rules took.
    delta : float
        The delta of an (eps, delta) guarantee (one Gaussian release by its own check), else 0.
    """

    secret: str
    entries: tuple[int, ...]
    rule: str
    epsilon: float | None
    sum_of_epsilons: float
    priors: str
    detail: str
    pairs: tuple[PairJoint, ...] = ()
    seconds: float = 0.0
    delta: float = 0.0

    def line(self) -> str:
        """One line for a person: the guarantee, its rule, and its priors or reasons."""
        ids = ", ".join(map(str, self.entries))
        if self.epsilon is None:
            return (
                f"secret {self.secret!r}, releases {ids}: no guarantee for these together ({self.detail}); "
                f"their epsilons add up to {self.sum_of_epsilons:.4g}, which is not a guarantee"
            )
        eps = f"{self.epsilon:.6g}" if self.epsilon < 1e3 else f"{self.epsilon:.3g} (no privacy to speak of)"
        if self.delta > 0:
            eps += f", delta {self.delta:g}"
        return (
            f"secret {self.secret!r}, releases {ids}: eps {eps} together by the {self.rule} "
            f"({self.priors}; the epsilons add up to {self.sum_of_epsilons:.4g})"
            + (f"; {self.detail}" if self.detail else "")
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "secret": self.secret,
            "entries": list(self.entries),
            "rule": self.rule,
            "epsilon": self.epsilon,
            "sum_of_epsilons": self.sum_of_epsilons,
            "delta": self.delta,
            "priors": self.priors,
            "detail": self.detail,
            "pairs": [
                {
                    "pair": list(p.pair),
                    "loss": p.loss if math.isfinite(p.loss) else None,  # None: infinite (JSON has no inf)
                    "infinite": not math.isfinite(p.loss),
                    "error_bound": p.error_bound,
                    "worst_output": list(p.worst_output),
                }
                for p in self.pairs
            ],
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class JointPriors:
    """The joint priors of every column the releases of one secret used, as rule 1 reads them.

    Attributes
    ----------
    columns : tuple of str
    kinds : tuple of str
        ``"categorical"`` or ``"numeric"`` per column.
    estimated : EstimatedJointPriors
        :func:`pufferfish.tables.estimate.estimate_joint` of the columns.
    prior_set : (str, float, float or None)
        The set the check covers.
    """

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    estimated: Any
    prior_set: tuple[str, float, float | None] = ("none", 0.95, None)
    cache: dict[str, Any] = field(default_factory=dict, compare=False)


def column_kinds(entries: Sequence[Entry]) -> dict[str, str]:
    """Each column released about a secret and how it was read (labels or numbers).

    Raises
    ------
    Unsupported
        If a column was read as labels in one release and as numbers in another.
    """
    kinds: dict[str, str] = {}
    for e in entries:
        for rec in e.body.get("views", []):
            kind = "numeric" if rec["kind"] == "laplace" and not rec.get("labels") else "categorical"
            if rec["kind"] == "unsupported":
                kind = rec.get("read_as", "numeric")
            kind = rec.get("read_as", kind)  # recorded since issue 54 (a noiseless number: numeric)
            old = kinds.setdefault(rec["column"], kind)
            if old != kind:
                raise Unsupported(f"column {rec['column']!r} was released as {old} and as {kind} values")
    return kinds


def fingerprint(
    source: TableSource,
    *,
    secret: str,
    kinds: dict[str, str],
    weight: str | None,
    missing: str,
    engine: str = "duckdb",
    spark: Any = None,
) -> dict[str, Any]:
    """The data's fingerprint for a secret and columns: its rows and a SHA-256 of the counts of
    every (secret, columns) tuple (what the priors are made of).

    A change of the table that leaves every such count as it was changes no prior and no check,
    and is not seen; any other change of these columns is.
    """
    from pufferfish.tables.estimate import aggregates

    cols = sorted(kinds)
    agg = aggregates(source, secret, cols, weight, engine, spark, {c: kinds[c] for c in cols}, missing)
    agg = agg.with_atom()  # one numeric column's missing cells are counted too (issue 54)
    counts = sorted((s, [repr(v) for v in vals], n, repr(w)) for s, vals, n, w, _ in agg.counts)
    text = json.dumps([agg.rows_total, agg.rows_dropped, counts], separators=(",", ":"))
    return {
        "rows": agg.rows_total,
        "columns": cols,
        "kinds": [kinds[c] for c in cols],
        "hash": hashlib.sha256(text.encode()).hexdigest(),
    }


def check_data(entries: Sequence[Entry], found: dict[str, Any], description: str) -> None:
    """Refuse a table that is not the ledger's, or changed since its last release about a secret.

    Parameters
    ----------
    entries : sequence of Entry
        The ledger's entries about one secret (the last one's fingerprint covers every column
        released about it).
    found : dict
        :func:`fingerprint` of the table for the last entry's columns.
    description : str
        The table, for the message.

    Raises
    ------
    LedgerError
        Naming the ledger's data and what differs.
    """
    if not entries:
        return
    last = entries[-1].body["data"]
    if found["rows"] != last["rows"]:
        raise LedgerError(
            f"the ledger records releases of {last['description']} ({last['rows']:,} rows); this table, "
            f"{description}, has {found['rows']:,} rows: another data set (use another ledger)"
        )
    if found["hash"] != last["hash"]:
        cols = ", ".join(last["columns"])
        raise LedgerError(
            f"the table {description} is not the one the ledger's releases were made from: the counts of "
            f"({entries[-1].secret}, {cols}) differ from release {entries[-1].id}'s (a changed data file, or "
            "another one)"
        )


def estimate_for(
    entries: Sequence[Entry], source: TableSource, *, engine: str = "duckdb", spark: Any = None
) -> JointPriors:
    """The joint priors of every column the entries released (rule 1).

    The prior set is the L1 ball on the joint alphabet at the largest confidence any release was
    certified at over a prior set (:func:`pufferfish.priors.balls.joint_balls`), or the estimate
    when every release was certified at its estimate.

    Raises
    ------
    Unsupported
        If the releases used different weights or missing-cell policies.
    """
    from pufferfish.tables.estimate import estimate_joint

    kinds = column_kinds(entries)
    weights = {e.body.get("weight") for e in entries}
    missing = {e.body.get("missing", "value") for e in entries}
    if len(weights) > 1 or len(missing) > 1:
        raise Unsupported("the releases read the table differently (weights or missing cells)")
    sets = [e.body.get("prior_set") or ["none", 0.95, None] for e in entries]
    confidences = [float(s[1]) for s in sets if s[0] != "none"]
    prior_set: tuple[str, float, float | None] = (
        ("l1", max(confidences), None) if confidences else ("none", 0.95, None)
    )
    pairs = list(dict.fromkeys((str(a), str(b)) for e in entries for a, b in e.body["pairs"]))
    columns = tuple(kinds)
    est = estimate_joint(
        source,
        secret=entries[0].secret,
        columns=columns,
        pairs=pairs,
        weight=weights.pop(),
        categorical=[c for c in columns if kinds[c] == "categorical"],
        numeric=[c for c in columns if kinds[c] == "numeric"],
        prior_set=prior_set,
        engine=engine,
        spark=spark,
        missing=missing.pop(),
    )
    return JointPriors(columns, tuple(kinds[c] for c in columns), est, prior_set)


def priors_text(prior_set: tuple[str, float, float | None]) -> str:
    """For which priors rule 1's check holds."""
    if prior_set[0] == "none":
        return "at the estimated joint priors of the columns released (the point estimate)"
    return (
        f"for every prior in the L1 balls at {prior_set[1]:.0%} confidence around the estimated joint "
        "priors, on the tuples of values seen"
    )


def other_sets(entries: Sequence[Entry], prior_set: tuple[str, float, float | None]) -> str:
    """A note when releases were certified over another kind of set than the one the joint check
    uses (a one-column DKW band, a declared domain): each then reads here over the L1 balls of the
    joint alphabet, which is not its own set, and may read above its own eps even alone."""
    if prior_set[0] == "none":
        return ""
    kinds = sorted({str((e.body.get("prior_set") or ["none"])[0]) for e in entries} - {"none", "l1"})
    if not kinds:
        return ""
    return (
        f"releases certified over a {' or '.join(kinds)} set are checked here over the L1 balls of the "
        "joint alphabet, another set: a release can read above its own eps here, even alone"
    )


def exact_joint(entries: Sequence[Entry], joint: JointPriors) -> tuple[float, tuple[PairJoint, ...]]:
    """Rule 1: the exact loss of every release of ``entries`` together, per pair, and the largest
    ``loss + error_bound``.

    Raises
    ------
    Unsupported
        If a release's channel cannot be read.
    pufferfish.loss.divergence.MemoryLimitError
        If the check is too large ("not run").
    """
    est = joint.estimated
    positions = {c: k for k, c in enumerate(joint.columns)}
    views: list[View] = []
    for e in entries:
        views.extend(to_views(e.body["views"], positions, est.labels, release=e.id))
    return joint_loss(views, joint)


def joint_loss(views: Sequence[View], joint: JointPriors) -> tuple[float, tuple[PairJoint, ...]]:
    """The exact loss of the views together on the joint priors, per pair, and the largest
    ``loss + error_bound`` (:func:`exact_joint`)."""
    est = joint.estimated
    prior = est.scenario.priors[0]
    out = []
    for a, b in est.scenario.pairs:
        res = _pair_loss(prior, a, b, views)
        out.append(PairJoint((a, b), res.loss, res.error_bound, res.worst_output, bound=res.vertices == 0))
    worst = max(p.loss + p.error_bound for p in out)
    return worst, tuple(out)


def _pair_loss(prior: Any, a: str, b: str, views: Sequence[View]) -> ComposedLoss:
    if prior.sets is not None:
        ball_i, ball_j = prior.sets[a], prior.sets[b]
        return composed_loss(
            ball_i.alphabet,
            ball_i.mass(),
            ball_j.mass(),
            views,
            radius_i=ball_i.radius,
            radius_j=ball_j.radius,
        )
    p_i, p_j = prior.conditionals[a], prior.conditionals[b]
    alphabet = np.unique(np.concatenate([p_i.support, p_j.support]), axis=0)
    pmfs = []
    for p in (p_i, p_j):
        pmf = np.zeros(alphabet.shape[0])
        index = {tuple(row): i for i, row in enumerate(alphabet)}
        for row, m in zip(p.support, p.pmf, strict=True):
            pmf[index[tuple(row)]] = m
        pmfs.append(pmf)
    dense, _ = composed_size(alphabet, views)
    if dense <= MAX_COMPOSED_ENTRIES // 8:
        return composed_loss(alphabet, pmfs[0], pmfs[1], views)
    try:
        return composed_point_loss(alphabet, pmfs[0], pmfs[1], views)
    except MemoryLimitError:
        if alphabet.shape[1] != 1 or any(v.kind != "laplace" or v.relabel is not None for v in views):
            raise
    # many Laplace releases of one numeric column: the certified bound (issue 54)
    bound, error = lipschitz_loss(alphabet[:, 0], pmfs[0], pmfs[1], views)
    return ComposedLoss(bound, error, (), 0)


def sum_joint(entries: Sequence[Entry]) -> tuple[float, tuple[PairJoint, ...], str]:
    """Rule 1 for sums of one system released more than once: each release a Laplace view of the
    same sum, on the query's priors recorded with the releases (the same system, pair set and user).

    Raises
    ------
    Unsupported
        If the releases are of different systems, pair sets or users, or a release's priors or
        noise were not recorded.
    """
    keys = {json.dumps([e.body["data"]["hash"], e.body.get("pair_set"), e.body.get("user")]) for e in entries}
    if len(keys) > 1:
        raise Unsupported("the sums are of different systems, pair sets or users")
    priors = entries[-1].body.get("priors")
    if not priors:
        raise Unsupported("the sum's priors were not recorded (too large)")
    views = [View(0, "laplace", float(v["scale"]), exponent=v.get("exponent"), name=f"sum (release {e.id})")
             for e in entries for v in e.body["views"]]  # fmt: skip
    out = []
    for a, b in priors["pairs"]:
        (sa, pa), (sb, pb) = priors["conditionals"][a], priors["conditionals"][b]
        support = np.union1d(np.asarray(sa, dtype=np.float64), np.asarray(sb, dtype=np.float64))
        pmfs = []
        for s, p in ((sa, pa), (sb, pb)):
            pmf = np.zeros(support.size)
            pmf[np.searchsorted(support, np.asarray(s, dtype=np.float64))] = p
            pmfs.append(pmf)
        res = composed_loss(support[:, None], pmfs[0], pmfs[1], views)
        out.append(PairJoint((a, b), res.loss, res.error_bound, res.worst_output))
    priors = "at the system's distributions of the sum (the query's priors, seed 000 sec 3)"
    return max(p.loss + p.error_bound for p in out), tuple(out), priors


EXACT_CHECKS["sum"] = (RULES[0], sum_joint)


def _infinite(
    secret: str, ids: tuple[int, ...], total: float, pairs: Sequence[PairJoint], seconds: float
) -> JointGuarantee:
    """Rule 4 for an exact check whose loss is infinite: the pair and a record that one secret can
    publish and the other cannot."""
    worst = max(pairs, key=lambda p: p.loss + p.error_bound)
    a, b = worst.pair
    at = ", ".join("missing" if v >= MISSING_NUMBER else f"{v:.6g}" for v in worst.worst_output)
    why = (
        f"exact joint check: the releases together have infinite privacy loss for {a} vs {b}: the "
        f"record ({at}) can be published under one of them and not under the other"
    )
    return JointGuarantee(secret, ids, RULES[3], None, total, "", why, tuple(pairs), seconds)


def _own_check(only: Entry, reasons: Sequence[str], seconds: float) -> JointGuarantee:
    """The last rule: one release about the secret, its own certificate ((eps, delta) included)."""
    delta = float(only.body.get("delta") or 0.0)
    criterion = str(only.body.get("criterion") or "eps-PP")
    criterion = "eps-PP" if criterion == "(eps, delta)-PP" and delta == 0 else criterion
    priors = (
        f"{criterion}" + (f" with delta {delta:g}" if delta > 0 else "") + ", as the release was certified"
    )
    return JointGuarantee(
        only.secret, (only.id,), RULES[4], only.epsilon, only.epsilon, priors, "; ".join(reasons), (),
        seconds, delta=delta,
    )  # fmt: skip


def adding_theorem(entries: Sequence[Entry]) -> tuple[str | None, str]:
    """Rule 3: the theorem under which every entry's epsilon adds (its key in :data:`THEOREMS`),
    or None, and the reason."""
    kinds = {e.body.get("composes") for e in entries}
    if len(kinds) == 1 and None not in kinds:
        (kind,) = kinds
        if kind == "quilt":
            chains = {json.dumps(e.body.get("chain"), sort_keys=True) for e in entries}
            if len(chains) > 1:
                return None, "the Markov quilt releases are of different chains"
        return str(kind), THEOREMS[str(kind)]
    names = sorted({f"{e.body.get('mechanism')}" for e in entries if e.body.get("composes") is None})
    if names:
        return (
            None,
            f"no theorem adds these: {', '.join(names)} "
            f"carr{'ies' if len(names) == 1 else 'y'} no composition theorem",
        )
    return None, "the releases are under different theorems (" + ", ".join(sorted(map(str, kinds))) + ")"


def guarantee(
    entries: Sequence[Entry],
    source: TableSource | None,
    *,
    engine: str = "duckdb",
    spark: Any = None,
    joint: JointPriors | None = None,
    checks: Mapping[str, ExactCheck] | None = None,
) -> JointGuarantee:
    """The guarantee of ``entries`` (all about one secret) together, by the first rule that applies.

    Parameters
    ----------
    entries : sequence of Entry
        One secret's entries (a new release not yet recorded may be among them).
    source : TableSource or None
        The table the releases were made from (rule 1); None skips rule 1 (the reason is stated).
    engine, spark
        How the table is read.
    joint : JointPriors, optional
        The joint priors already estimated for these entries (a search reuses them).
    checks : mapping, optional
        Exact checks of other entry kinds (``kind -> (rule, check)``), beside
        :data:`EXACT_CHECKS`: series releases need :data:`pufferfish.markov.ledgered.SERIES_CHECKS`
        (without it they are read by a theorem that adds, or have no guarantee, with the reason).

    Returns
    -------
    JointGuarantee
    """
    known = {**EXACT_CHECKS, **(checks or {})}
    start = time.perf_counter()
    secret = entries[0].secret
    ids = tuple(e.id for e in entries)
    total = math.fsum(e.epsilon for e in entries)
    reasons = []
    if all(e.body.get("kind") == "table" for e in entries):
        try:
            if joint is None:
                if source is None:
                    raise Unsupported("the table is not at hand")
                joint = estimate_for(entries, source, engine=engine, spark=spark)
            eps, pairs = exact_joint(entries, joint)
            if len(entries) == 1 and joint.prior_set[0] != "none" and not eps <= entries[0].epsilon:
                # one release over its own set (a DKW band, its rates' intervals): the L1 balls of
                # the joint alphabet are another set; the release's own certificate holds for its own
                figure = "inf" if not math.isfinite(eps) else f"{eps:.6g}"
                why = f"{RULES[0]} over the L1 balls of the joint alphabet (not the release's set): {figure}"
                return _own_check(entries[0], [why], time.perf_counter() - start)
            if not math.isfinite(eps) and any(p.bound for p in pairs):
                raise Unsupported("too large to run exactly, and its certified bound is infinite")
            if not math.isfinite(eps):  # the exact loss: no theorem can say less
                return _infinite(secret, ids, total, pairs, time.perf_counter() - start)
            return JointGuarantee(
                secret,
                ids,
                RULES[5] if any(p.bound for p in pairs) else RULES[0],
                eps,
                total,
                priors_text(joint.prior_set),
                other_sets(entries, joint.prior_set),
                pairs,
                time.perf_counter() - start,
            )
        except (Unsupported, MemoryLimitError) as exc:
            reasons.append(f"{RULES[0]}: {exc}")
    elif len(kinds := {str(e.body.get("kind")) for e in entries}) == 1 and next(iter(kinds)) in known:
        rule, check = known[next(iter(kinds))]
        try:
            eps, pairs, priors = check(entries)
            if not math.isfinite(eps):
                return _infinite(secret, ids, total, pairs, time.perf_counter() - start)
            return JointGuarantee(
                secret, ids, rule, eps, total, priors, "", pairs, time.perf_counter() - start
            )
        except (Unsupported, MemoryLimitError) as exc:
            reasons.append(f"{rule}: {exc}")
    else:
        got = ", ".join(sorted({str(e.body.get("kind")) for e in entries}))
        reasons.append(f"{RULES[0]}: applies to releases of one kind (table, sum, series), got {got}")
    if len(entries) == 1:  # one release: its own certificate, whatever its criterion (issue 54)
        return _own_check(entries[0], reasons, time.perf_counter() - start)
    theorem, why = adding_theorem(entries)
    if theorem is not None:
        criterion = "eps-MI pufferfish privacy" if theorem == "mi" else "eps"
        return JointGuarantee(
            secret,
            ids,
            RULES[2],
            total,
            total,
            f"{criterion}, as each release was certified",
            why + ("; " + "; ".join(reasons) if reasons else ""),
            (),
            time.perf_counter() - start,
        )
    reasons.append(f"{RULES[2]}: {why}")
    return JointGuarantee(
        secret, ids, RULES[3], None, total, "", "; ".join(reasons), (), time.perf_counter() - start
    )

"""Optimal transport between priors: the monotone (W1 and W-infinity) plan on the line
(:mod:`~pufferfish.transport.line`) and the W1 and bottleneck plans of joint priors in ``d``
dimensions (:mod:`~pufferfish.transport.plans`).
"""

"""Domain definition for cascade survivors: HMMER's p7_domaindef, one module per stage.

:mod:`.ensemble`: the host reference of multi-domain regions (HMMER's stochastic-trace
clustering, bit for bit).
"""

"""Domain definition for cascade survivors: HMMER's p7_domaindef and the end of p7_Pipeline.

For every (model, target) pair that passed the Forward filter, as hmmsearch does, one module
per stage (:mod:`.engine` runs them in this order):

1. :mod:`.decode`: Forward and Backward parsers over the whole target (multihit, the target's
   length model) and posterior domain decoding; the regions where a domain is likely.
   [kernels fb_parser, fb_parser_warp<C>]
2. :mod:`.multidomain`: a region that may hold several domains is resolved by clustering 200
   stochastic tracebacks of its multihit Forward matrix, which also gives its null2 scores.
   [kernels envelope (mode 0), region_forward_warp<C>, region_ensemble]; the host reference is
   :mod:`.ensemble`, run in worker processes by :mod:`.workers` where the device leaves a region.
3. :mod:`.envelopes`: each envelope rescored alone in unihit mode (Forward, Backward, posterior
   decoding), its null2 odds and its optimal-accuracy alignment.
   [kernels envelope, envelope_wg, envelope_warp<C>]
4. :mod:`.scoring`: the null2-corrected sequence score, HMMER's domain-sum reconstruction that
   replaces it when better, domain scores, P-values; :mod:`.null2` (its sums on the host or the
   device [kernels null2_fill, null2_sums]) and :mod:`.alignment` (the alignment displays).

Shared: :mod:`.launches` (launch plans, transfers, kernel bookkeeping), :mod:`.records` (what the
stages hand each other and the search), :mod:`.numerics` (HMMER's float sums and logsum) and
:mod:`.segments` (index arithmetic over segments of flat arrays).

The float arithmetic follows HMMER's (float vs double, order of operations); see
``hmmcascade/kernels/domains.cl`` for what is exact and what agrees to rounding.
"""

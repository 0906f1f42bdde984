/* backward_row.h: one Backward row of the warp kernels, included where fb_parser_warp.h and
 * envelope_warp.h compute it.  Row i from row i+1, descending over the nodes:
 *
 *   D(i,k) = a_k + D(i,k+1) tDD_k,   a_k = M(i+1,k+1) e(x_{i+1},k+1) tDM_{k+1} + E(i)
 *            (the lane's map from D(i, k0+C) composed over its nodes, scanned from the top lane
 *            down with the products of tDD Pdn, then replayed);
 *   I(i,k) = I(i+1,k) tII_k + M(i+1,k+1) e tIM_{k+1};
 *   M(i,k) = ((I(i+1,k) tMI_k + M(i+1,k+1) e tMM_{k+1}) + E(i)) + D(i,k+1) tMD_k;
 *   all three times s (1/scale); nodes past M are 0.  Row L (i == L) has no row i+1: its I
 *   cells (Ic) must be 0 on entry, its M(i+1) terms are 0.
 *
 * In scope: BR_C (nodes per lane), the lane's row i+1 in Mc, Ic, Dc[BR_C] (final, scaled; becoming
 * row i), e[BR_C] and BR_EMIS(r) (loads e with the emissions of residue code r), the residues x
 * (x_i = x[i-1]), i and L, the transitions TRV(t, j), node k0+C's tIM, tDM, tMM in tIMn, tDMn,
 * tMMn (0 on the last lane), the scan's products of tDD Pdn[5] (lanes above), the lane's first node
 * k0, M, E(i) in xE, the factor s, lane and tmp (warp.h).  Declares row_up (i >= 2) and row_bs:
 * the lane's part of B(i-1) = sum of M(i,k) e(x_i,k) tBM_k (0 without row_up; e then holds x_i's
 * emissions). */
    const int row_up = (i >= 2);
    float row_bs = 0.0f;
    {
        float mpn[BR_C];                           /* M(i+1,k) e(x_{i+1},k) */
        if (i < L) {
            BR_EMIS(x[i])
#pragma unroll
            for (int jj = 0; jj < BR_C; jj++) mpn[jj] = Mc[jj] * e[jj];
        } else {
#pragma unroll
            for (int jj = 0; jj < BR_C; jj++) mpn[jj] = 0.0f;
        }
        const float mpn_up = fw_down(mpn[0], 1, lane, tmp);
        const float mpv_top = lane < 31 ? mpn_up : 0.0f;  /* node k0+C's */
        /* D chain, descending: D(k) = a_k + D(k+1) tDD_k; the lane's map from D(k0+C), scanned down */
        float av[BR_C];
#pragma unroll
        for (int jj = 0; jj < BR_C; jj++) {
            const float mnext = jj < BR_C - 1 ? mpn[jj + 1] : mpv_top;
            const float tdm = jj < BR_C - 1 ? TRV(T_DM, jj + 1) : tDMn;
            av[jj] = (k0 + jj <= M) ? (mnext * tdm + xE) : 0.0f;
        }
        float A = av[BR_C - 1];
#pragma unroll
        for (int jj = BR_C - 2; jj >= 0; jj--) A = av[jj] + A * TRV(T_DD, jj);
#pragma unroll
        for (int st = 0; st < 5; st++) {
            const int d = 1 << st;
            const float o = fw_down(A, d, lane, tmp);
            if (lane + d < 32) A = A + o * Pdn[st];
        }
        const float dtop_ = fw_down(A, 1, lane, tmp);
        float dnext = lane < 31 ? dtop_ : 0.0f;    /* D(i, k0+C), unscaled */
        if (row_up) BR_EMIS(x[i - 1])              /* x_i, for B(i-1) */
#pragma unroll
        for (int jj = BR_C - 1; jj >= 0; jj--) {
            const float mnext = jj < BR_C - 1 ? mpn[jj + 1] : mpv_top;
            const float tim = jj < BR_C - 1 ? TRV(T_IM, jj + 1) : tIMn;
            const float tmm = jj < BR_C - 1 ? TRV(T_MM, jj + 1) : tMMn;
            if (k0 + jj > M) {
                Mc[jj] = 0.0f; Ic[jj] = 0.0f; Dc[jj] = 0.0f;
            } else {
                const float ipv = Ic[jj];
                const float dv = av[jj] + dnext * TRV(T_DD, jj);
                float mv = ipv * TRV(T_MI, jj) + mnext * tmm;
                mv = mv + xE;
                mv = mv + dnext * TRV(T_MD, jj);
                Ic[jj] = (ipv * TRV(T_II, jj) + mnext * tim) * s;
                Mc[jj] = mv * s;
                Dc[jj] = dv * s;
                dnext = dv;
                if (row_up) row_bs = row_bs + (Mc[jj] * e[jj]) * TRV(T_BM, jj);
            }
        }
    }

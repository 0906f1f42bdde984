/* forward_row.h: one Forward row of the warp kernels, included where forward_warp.h and
 * fb_parser_warp.h compute it.  In scope there: FR_C (nodes per lane), the lane's row i-1 in
 * Mc, Ic, Dc[FR_C] (becoming row i) and row i-1's node k0-1 in pM, pI, pD, the emissions of x_i
 * in e[FR_C], B(i-1) in xB, the transitions TRV(t, j), the scan's products of tDD Pup[5] (lanes
 * below), lane and tmp (warp.h).  Declares row_E: E(i), the same float in every lane. */
    {   /* M and I, descending: node jn reads row i-1 at nodes jn-1 (still unchanged) and jn */
#pragma unroll
        for (int jn = FR_C - 1; jn >= 0; jn--) {
            const float mp = jn ? Mc[jn - 1] : pM, ip = jn ? Ic[jn - 1] : pI, dp = jn ? Dc[jn - 1] : pD;
            float sv = xB * TRV(T_BM, jn);
            sv = sv + mp * TRV(T_MM, jn);
            sv = sv + ip * TRV(T_IM, jn);
            sv = sv + dp * TRV(T_DM, jn);
            sv = sv * e[jn];
            Ic[jn] = Mc[jn] * TRV(T_MI, jn) + Ic[jn] * TRV(T_II, jn);
            Mc[jn] = sv;
        }
    }
    /* D: the lane's chain from 0 (A), the scan, the replay from the lane's first D */
    float row_A = Mc[0] * TRV(T_MD, 0);
#pragma unroll
    for (int jn = 1; jn < FR_C; jn++) row_A = Mc[jn] * TRV(T_MD, jn) + row_A * TRV(T_DD, jn);
#pragma unroll
    for (int st = 0; st < 5; st++) {
        const int d = 1 << st;
        const float o = fw_up(row_A, d, lane, tmp);
        if (lane >= d) row_A = row_A + o * Pup[st];
    }
    const float row_din = fw_up(row_A, 1, lane, tmp);
    Dc[0] = lane ? row_din : 0.0f;
    float row_es = Mc[0] + Dc[0];
#pragma unroll
    for (int jn = 1; jn < FR_C; jn++) {
        Dc[jn] = Mc[jn - 1] * TRV(T_MD, jn - 1) + Dc[jn - 1] * TRV(T_DD, jn - 1);
        row_es = row_es + (Mc[jn] + Dc[jn]);
    }
    const float row_E = fw_sum(row_es, lane, tmp);

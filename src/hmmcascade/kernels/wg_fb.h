/* wg_fb.h: the Forward and Backward of the work-group kernels in HMMER's striped order, included by
 * envelope_wg (full matrices: the posterior decoding and the OA alignment read them) and fb_parser_wg
 * (two rows in turn: the domain decoding reads only the specials).  See envelope_wg's comment in
 * domains.cl for how a row's cells and chains are spread over the group.
 *
 * In scope: the job's M, W, Q4, Q, Ld, x (residues 1..Ld at x[0..Ld-1]), e with exs, ews (emission
 * odds), t, t4 (transitions), nmove, nloop, emove, eloop, lid, G; the local memory lw
 * (envelopes.env_wg_local_bytes), lane_f, lane_i; the row macros FROW(i), BROW(i) (float4 words of
 * row i's M, I, D), BC(i, st, k) (a Backward cell), FX(i, c), BX(i, c) (row i's Forward and Backward
 * specials) and LW4.  Declares the local rows la, lb, lc, cr, tdd, bc and the chains' c4, q0, kmax
 * (below), xN, xJ, xC, xE, xB, totscale, own (the Backward's own scale factors); leaves the Forward
 * score (nats) in bc[4]. */
    /* local rows of 4 Q floats (4 Q >= W; float4 words: a float4 argument is aligned for the vector
     * accesses): la, lb, lc the chains' operands, cr a pass's carries, tdd the job's tDD (0 past M) */
    const int nq = 4 * Q;
    __local float *la = (__local float *) lw, *lb = la + nq, *lc = lb + nq, *cr = lc + nq;
    __local float *tdd = cr + nq, *bc = tdd + nq;
    const int c4 = lid & 3, q0 = c4 * Q;   /* the HMMER lane of this work-item's chains, its first node */
    const int kmax = clamp(M - q0, 0, Q);    /* the lane's nodes inside the model */
    for (int n = lid; n < nq; n += G) tdd[n] = (n < M) ? TR(t, n + 1, T_DD) : 0.0f;
    /* ---- Forward (forward_matrix_striped; each row where FROW puts it) ---- */
    {
        __global float4 *r0 = FROW(0);
        for (int q = lid; q < 3 * Q4; q += G) r0[q] = (float4) (0.0f);
    }
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f, xB = nmove, totscale = 0.0f;
    if (lid == 0) {
        FX(0, XE) = 0.0f; FX(0, XN) = 1.0f; FX(0, XJ) = 0.0f; FX(0, XB) = xB; FX(0, XC) = 0.0f;
        FX(0, XSCALE) = 1.0f;
    }
    WG_SYNC();
    for (int i = 1; i <= Ld; i++) {
        __global float4 *prv = FROW(i - 1);
        __global float4 *cur = FROW(i);
        __global const float *er = e + (int) x[i - 1] * exs;
        for (int q = lid; q < Q4; q += G) {   /* M and I cells; M(k) tMD(k) and M(k) for work-item 0 */
            const float4 om = prv[q], oi = prv[Q4 + q], od = prv[2 * Q4 + q];
            float mp = 0.0f, ip = 0.0f, dp = 0.0f;   /* row i-1, node 4q (the previous word's last) */
            if (q > 0) { mp = prv[q - 1].w; ip = prv[Q4 + q - 1].w; dp = prv[2 * Q4 + q - 1].w; }
            __global const float4 *tq = t4 + q * 8;
            const float4 tBM = tq[T_BM], tMM = tq[T_MM], tIM = tq[T_IM], tDM = tq[T_DM];
            const float4 tMD = tq[T_MD], tMI = tq[T_MI], tII = tq[T_II];
            const float4 e4 = *(__global const float4 *) (er + q * ews);
            const float4 pm = (float4) (mp, om.x, om.y, om.z);
            const float4 pi = (float4) (ip, oi.x, oi.y, oi.z);
            const float4 pd = (float4) (dp, od.x, od.y, od.z);
            float4 sv = xB * tBM;
            sv = sv + pm * tMM;
            sv = sv + pi * tIM;
            sv = sv + pd * tDM;
            sv = sv * e4;
            cur[q] = sv;
            cur[Q4 + q] = om * tMI + oi * tII;
            LW4(la, q) = sv * tMD;
            LW4(lb, q) = sv;
        }
        WG_SYNC();
        /* HMMER's striped D->D passes and E's lane sums (as forward_matrix_striped): the first pass
         * inside lane l by work-item l (0..3), beside it the lane's sum of its M cells (work-items
         * 4..7); in the lane-crossing passes only the carry is a chain (products, by work-items
         * 0..3, into cr), which every work-item then adds to its nodes' D, noting any change */
        for (int k = M + 1 + lid; k <= W; k += G) lc[k - 1] = 0.0f;
        if (lid == 0) { lane_i[0] = 0; lane_i[1] = 0; lane_i[2] = 0; }
        float dc = 0.0f, ea = 0.0f;
        /* (the chains' operands are loaded four nodes before their steps: a step then waits on the
           step before, not on local memory) */
        if ((G < 8) ? (lid < 4) : (lid >= 4 && lid < 8))   /* the lane's sum of its M cells (fewer than 8
                                                              work-items: before the first pass) */
            ea = wg_lane_sum(lb + q0, kmax, ea);
        if (lid < 4 && kmax > 0) {   /* first pass, inside the lane: D(k) = D(k-1) tDD(k-1) + M(k-1) tMD(k-1) */
            float d = (q0 > 0) ? la[q0 - 1] : 0.0f;   /* the right shift of the lane before's M tMD */
            lc[q0] = d;
            dc = d * tdd[q0];
            int q = 1;
            for (; q + 4 <= kmax; q += 4) {
                const int k = q0 + q;
                const float a0 = la[k - 1], a1 = la[k], a2 = la[k + 1], a3 = la[k + 2];
                const float t0 = tdd[k], t1 = tdd[k + 1], t2 = tdd[k + 2], t3 = tdd[k + 3];
                d = dc + a0; lc[k] = d; dc = d * t0;
                d = dc + a1; lc[k + 1] = d; dc = d * t1;
                d = dc + a2; lc[k + 2] = d; dc = d * t2;
                d = dc + a3; lc[k + 3] = d; dc = d * t3;
            }
            for (; q < kmax; q++) { const int k = q0 + q; d = dc + la[k - 1]; lc[k] = d; dc = d * tdd[k]; }
        }
        if (lid < 4 && kmax < Q) dc = 0.0f;
        int passing = 1;   /* HMMER's lane-crossing passes not ended yet (no barrier is skipped) */
        for (int jp = 1; jp < 4; jp++) {   /* the lane-crossing passes (cut short for M >= 100) */
            if (lid < 4) lane_f[lid] = dc;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (passing && lid < 4) {   /* the carries: right shift of the lanes' last */
                float c = (lid > 0) ? lane_f[lid - 1] : 0.0f;
                int q = 0;
                for (; q + 4 <= kmax; q += 4) {
                    const int k = q0 + q;
                    const float t0 = tdd[k], t1 = tdd[k + 1], t2 = tdd[k + 2], t3 = tdd[k + 3];
                    cr[k] = c; c = c * t0; cr[k + 1] = c; c = c * t1;
                    cr[k + 2] = c; c = c * t2; cr[k + 3] = c; c = c * t3;
                }
                for (; q < kmax; q++) { cr[q0 + q] = c; c = c * tdd[q0 + q]; }
                dc = (kmax < Q) ? 0.0f : c;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (passing) {
                int changed = 0;
                for (int k = lid; k < M; k += G) {
                    const float old = lc[k];
                    const float nv = cr[k] + old;
                    changed = changed | (nv > old);
                    lc[k] = nv;
                }
                if (changed) lane_i[jp - 1] = 1;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (M >= 100 && !lane_i[jp - 1]) passing = 0;
        }
        if ((G >= 8) ? (lid >= 4 && lid < 8) : (lid < 4)) {   /* E: each lane's M cells, then its D cells */
            ea = wg_lane_sum(lc + q0, kmax, ea);
            lane_f[c4] = ea;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {   /* the specials */
            xE = (lane_f[0] + lane_f[1]) + (lane_f[2] + lane_f[3]);
            xN = xN * nloop;
            xC = xC * nloop + xE * emove;
            xJ = xJ * nloop + xE * eloop;
            xB = xJ * nmove + xN * nmove;
            float sc = 1.0f;
            if (xE > 1.0e4f) {
                xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
                sc = xE;
                totscale = ADD_LOG_AS_HMMER(totscale, xE);
                xE = 1.0f;
            }
            FX(i, XSCALE) = sc;
            FX(i, XE) = xE; FX(i, XN) = xN; FX(i, XJ) = xJ; FX(i, XB) = xB; FX(i, XC) = xC;
            bc[0] = xB; bc[1] = sc;
        }
        WG_SYNC();
        xB = bc[0];
        const float sc = bc[1];
        if (sc != 1.0f) {   /* sparse rescaling, as HMMER: cells * (1/xE) */
            const float sr = inv_as_hmmer(sc);
            for (int q = lid; q < Q4; q += G) {
                cur[q] = cur[q] * sr; cur[Q4 + q] = cur[Q4 + q] * sr; cur[2 * Q4 + q] = LW4(lc, q) * sr;
            }
        } else {
            for (int q = lid; q < Q4; q += G) cur[2 * Q4 + q] = LW4(lc, q);
        }
        WG_SYNC();
    }
    /* the envelope score (work-item 0's) kept in local memory: PoCL 3.1 otherwise hands the
     * final region another work-item's copy of a value computed before the barriers below */
    if (lid == 0) bc[4] = ADD_LOG_AS_HMMER(totscale, xC * nmove);

    /* ---- Backward (backward_matrix_striped; each row where BROW puts it) ---- */
    int own = 0;
    xJ = 0.0f; xB = 0.0f; xN = 0.0f; xC = nmove; xE = xC * emove;
    float4 xbn = (float4) (0.0f);   /* work-item 0: lane sums of the next row's B */
    if (lid == 0) {   /* row L, whole, in HMMER's striped order (as backward_matrix_striped) */
        const float sc = FX(Ld, XSCALE);
        const float s = (sc > 1.0f) ? inv_as_hmmer(sc) : 1.0f;
        const int up = (Ld >= 2);
        __global const float *en = e + (int) x[up ? Ld - 1 : 0] * exs;
        float cend[4];
        for (int l = 0; l < 4; l++) {   /* D: E, then the D->D pass from E in every lane */
            float dp = (l < 3) ? xE : 0.0f, dc = 0.0f;
            for (int q = Q - 1; q >= 0; q--) {
                const int k = l * Q + q + 1;
                dc = dp * ((k <= M) ? TR(t, k, T_DD) : 0.0f);
                const float d = xE + dc;
                if (k <= M) BC(Ld, 2, k) = d;
                dp = d;
            }
            cend[l] = dc;
        }
        for (int jp = 1; jp < 4; jp++) {
            const float c0 = cend[1], c1 = cend[2], c2 = cend[3];
            for (int l = 0; l < 4; l++) {
                float c = (l == 0) ? c0 : (l == 1) ? c1 : (l == 2) ? c2 : 0.0f;
                for (int q = Q - 1; q >= 0; q--) {
                    const int k = l * Q + q + 1;
                    c = c * ((k <= M) ? TR(t, k, T_DD) : 0.0f);
                    if (k <= M) BC(Ld, 2, k) = BC(Ld, 2, k) + c;
                }
                cend[l] = c;
            }
        }
        for (int k = 1; k <= W; k++) {   /* M: E + D(k+1) tMD(k); then the scale */
            if (k > M) { BC(Ld, 0, k) = 0.0f; BC(Ld, 1, k) = 0.0f; BC(Ld, 2, k) = 0.0f; continue; }
            BC(Ld, 0, k) = (xE + ((k < M) ? BC(Ld, 2, k + 1) : 0.0f) * TR(t, k, T_MD));
            BC(Ld, 1, k) = 0.0f;
        }
        for (int k = 1; k <= M; k++) { BC(Ld, 0, k) = BC(Ld, 0, k) * s; BC(Ld, 2, k) = BC(Ld, 2, k) * s; }
        if (up) {   /* B(L-1)'s lane sums, descending, as HMMER's next row */
            float acc[4];
            for (int l = 0; l < 4; l++) {
                float a2 = 0.0f;
                for (int q = Q - 1; q >= 0; q--) {
                    const int k = l * Q + q + 1;
                    if (k <= M) a2 = a2 + (BC(Ld, 0, k) * en[((k - 1) >> 2) * ews + ((k - 1) & 3)]) * TR(t, k, T_BM);
                }
                acc[l] = a2;
            }
            xbn = (float4) (acc[0], acc[1], acc[2], acc[3]);
        }
        if (sc > 1.0f) { xE = xE / sc; xN = xN / sc; xC = xC / sc; xJ = xJ / sc; xB = xB / sc; }
        BX(Ld, XSCALE) = sc;
        BX(Ld, XE) = xE; BX(Ld, XN) = xN; BX(Ld, XJ) = xJ; BX(Ld, XB) = xB; BX(Ld, XC) = xC;
    }
    WG_SYNC();
    for (int i = Ld - 1; i >= 1; i--) {
        const int up = (i >= 2);
        if (lid == 0) {   /* the row's specials before its cells, as backward_matrix_striped */
            xB = (xbn.x + xbn.y) + (xbn.z + xbn.w);
            xbn = (float4) (0.0f);
            xC = xC * nloop;
            xJ = (xB * nmove) + (xJ * nloop);
            xN = (xB * nmove) + (xN * nloop);
            xE = (xC * emove) + (xJ * eloop);
            if (xB > 1.0e16f) own = 1;
            const float sc = own ? ((xB > 1.0e4f) ? xB : 1.0f) : FX(i, XSCALE);
            bc[0] = xE; bc[1] = sc;
        }
        WG_SYNC();
        const float xEr = bc[0], sc = bc[1];
        const float s = (sc > 1.0f) ? inv_as_hmmer(sc) : 1.0f;
        __global float4 *nxt = BROW(i + 1);
        __global float4 *cur = BROW(i);
        __global const float *ex = e + (int) x[i] * exs;                    /* x_{i+1} */
        __global const float *en = e + (int) x[up ? i - 1 : 0] * exs;       /* x_i, for B(i-1) */
        for (int q = lid; q < Q4; q += G) {   /* I cells; the M and D cells' parts before the chain */
            const float4 nm4 = nxt[q], ni4 = nxt[Q4 + q];
            const float4 mpk = nm4 * *(__global const float4 *) (ex + q * ews);   /* M(i+1,k) e(x_{i+1},k) */
            float mpn = 0.0f, tIMn = 0.0f, tDMn = 0.0f, tMMn = 0.0f;              /* node 4q+5 */
            if (q + 1 < Q4) {
                mpn = nxt[q + 1].x * (ex + (q + 1) * ews)[0];
                __global const float4 *tn = t4 + (q + 1) * 8;
                tIMn = tn[T_IM].x; tDMn = tn[T_DM].x; tMMn = tn[T_MM].x;
            }
            __global const float4 *tq = t4 + q * 8;
            const float4 tMM = tq[T_MM], tIM = tq[T_IM], tDM = tq[T_DM], tMI = tq[T_MI], tII = tq[T_II];
            const float4 mpv = (float4) (mpk.y, mpk.z, mpk.w, mpn);        /* node k+1's M(i+1) e */
            const float4 tim = (float4) (tIM.y, tIM.z, tIM.w, tIMn);
            const float4 tdm = (float4) (tDM.y, tDM.z, tDM.w, tDMn);
            const float4 tmm = (float4) (tMM.y, tMM.z, tMM.w, tMMn);
            float4 iv = ni4 * tII + mpv * tim;
            float4 pv = ni4 * tMI + mpv * tmm;
            pv = pv + xEr;
            iv = iv * s;
            const int k0 = 4 * q + 1;
            if (k0 + 1 > M) iv.y = 0.0f;
            if (k0 + 2 > M) iv.z = 0.0f;
            if (k0 + 3 > M) iv.w = 0.0f;
            cur[Q4 + q] = iv;
            LW4(la, q) = pv;
            LW4(lb, q) = mpv * tdm;
            LW4(lc, q) = up ? *(__global const float4 *) (en + q * ews) : (float4) (0.0f);
        }
        WG_SYNC();
        /* HMMER's striped D->D passes (lane l's first pass by work-item l, 0..3; in the lane-crossing
         * passes the carries alone are chains, added by every work-item), the M cells that take
         * D(k+1), the next B's lane sums.  la: M(k) before its D(k+1) term (E added); lb: D(k) =
         * M(i+1,k+1) e tDM(k+1); lc: e(x_i, k); cr: a pass's carries */
        float dcb = 0.0f, dpb = 0.0f;
        if (lid < 4) {   /* the next lane's first D, before that lane's own pass changes it */
            const int kn = (lid + 1) * Q + 1;
            dpb = (lid < 3) ? ((kn <= M) ? lb[kn - 1] + xEr : xEr) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < 4) {   /* first pass: D + (D(k+1) tDD + E), inside the lane */
            float dp = dpb, dc = 0.0f;
            int q = Q - 1;
            for (; q >= kmax; q--) { dc = dp * tdd[q0 + q]; dp = dc + xEr; }   /* nodes past M (tdd 0) */
            for (; q >= 3; q -= 4) {
                const int k = q0 + q;
                const float b0 = lb[k], b1 = lb[k - 1], b2 = lb[k - 2], b3 = lb[k - 3];
                const float t0 = tdd[k], t1 = tdd[k - 1], t2 = tdd[k - 2], t3 = tdd[k - 3];
                dc = dp * t0; dp = b0 + (dc + xEr); lb[k] = dp;
                dc = dp * t1; dp = b1 + (dc + xEr); lb[k - 1] = dp;
                dc = dp * t2; dp = b2 + (dc + xEr); lb[k - 2] = dp;
                dc = dp * t3; dp = b3 + (dc + xEr); lb[k - 3] = dp;
            }
            for (; q >= 0; q--) { const int k = q0 + q; dc = dp * tdd[k]; dp = lb[k] + (dc + xEr); lb[k] = dp; }
            dcb = dc;
        }
        for (int jp = 1; jp < 4; jp++) {   /* three lane-crossing passes */
            if (lid < 4) lane_f[lid] = dcb;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < 4) {   /* the carries: left shift of the lanes' last, then c = c tDD(k) */
                float c = (lid < 3) ? lane_f[lid + 1] : 0.0f;
                int q = Q - 1;
                for (; q >= 3; q -= 4) {
                    const int k = q0 + q;
                    const float t0 = tdd[k], t1 = tdd[k - 1], t2 = tdd[k - 2], t3 = tdd[k - 3];
                    c = c * t0; cr[k] = c; c = c * t1; cr[k - 1] = c;
                    c = c * t2; cr[k - 2] = c; c = c * t3; cr[k - 3] = c;
                }
                for (; q >= 0; q--) { const int k = q0 + q; c = c * tdd[k]; cr[k] = c; }
                dcb = c;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int k = lid; k < M; k += G) lb[k] = lb[k] + cr[k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 1 + lid; k <= W; k += G) {   /* M + D(k+1) tMD(k), then the scale */
            if (k > M) { la[k - 1] = 0.0f; continue; }
            la[k - 1] = (la[k - 1] + ((k < M) ? lb[k] : 0.0f) * TR(t, k, T_MD)) * s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* (every D(k+1) read before the D cells are scaled) */
        for (int k = 1 + lid; k <= W; k += G) {
            lb[k - 1] = (k <= M) ? lb[k - 1] * s : 0.0f;
            if (k <= M) lc[k - 1] = (la[k - 1] * lc[k - 1]) * TR(t, k, T_BM);   /* B(i-1)'s terms */
        }
        {   /* B(i-1)'s lane sums, descending, as HMMER's next row (row 1: none) */
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < 4) {
                float a2 = 0.0f;
                int q = kmax - 1;
                for (; q >= 3; q -= 4) {
                    const float v0 = lc[q0 + q], v1 = lc[q0 + q - 1], v2 = lc[q0 + q - 2], v3 = lc[q0 + q - 3];
                    a2 = a2 + v0; a2 = a2 + v1; a2 = a2 + v2; a2 = a2 + v3;
                }
                for (; q >= 0; q--) a2 = a2 + lc[q0 + q];
                lane_f[lid] = a2;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0 && up) xbn = (float4) (lane_f[0], lane_f[1], lane_f[2], lane_f[3]);
        }
        if (lid == 0) {   /* the specials */
            if (sc > 1.0f) { xE = xE / sc; xN = xN / sc; xJ = xJ / sc; xB = xB / sc; xC = xC / sc; }
            BX(i, XSCALE) = sc;
            BX(i, XE) = xE; BX(i, XN) = xN; BX(i, XJ) = xJ; BX(i, XB) = xB; BX(i, XC) = xC;
        }
        WG_SYNC();
        for (int q = lid; q < Q4; q += G) { cur[q] = LW4(la, q); cur[2 * Q4 + q] = LW4(lb, q); }
        WG_SYNC();
    }
    if (lid == 0) {   /* row 0: only N and B; B's striped lane sums, ascending, as HMMER's last pass */
        __global const float *e1 = e + (int) x[0] * exs;
        float4 xbl = (float4) (0.0f);
        float acc[4];
        for (int l = 0; l < 4; l++) {
            float a2 = 0.0f;
            for (int q = 0; q < Q; q++) {
                const int k = l * Q + q + 1;
                if (k <= M) a2 = a2 + (BC(1, 0, k) * e1[((k - 1) >> 2) * ews + ((k - 1) & 3)]) * TR(t, k, T_BM);
            }
            acc[l] = a2;
        }
        xbl = (float4) (acc[0], acc[1], acc[2], acc[3]);
        xB = (xbl.x + xbl.y) + (xbl.z + xbl.w);
        xN = (xB * nmove) + (xN * nloop);
        BX(0, XB) = xB; BX(0, XC) = 0.0f; BX(0, XJ) = 0.0f;
        BX(0, XN) = xN; BX(0, XE) = 0.0f; BX(0, XSCALE) = 1.0f;
        bc[2] = (float) own;
    }
    WG_SYNC();
    own = (bc[2] != 0.0f);

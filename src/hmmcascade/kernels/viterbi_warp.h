/* viterbi_warp.h: the body of the viterbi_warp<C> kernels (viterbi.cl includes it once per chunk
 * size, with VW_C nodes per lane and the kernel's name VW_NAME defined).
 *
 * One warp (32 work-items) per pair; lane l holds nodes l*C+1 .. l*C+C of the rows M, I, D and
 * their 8 transitions in registers, as plain ints (models of M <= 32*C nodes; the host sends
 * longer ones to viterbi_wg).  Per row i:
 *
 *   1. M and I of the lane's nodes, descending (each reads row i-1 at node k-1 and k; node
 *      k0-1 of the lane before comes by a shuffle made at the end of row i-1);
 *   2. E(i) = max M over the warp (redux.sync);
 *   3. the D->D chain along the whole row: per lane the composition f(x) = max(A, x + S) of
 *      its nodes' steps x -> max(M(k) + tMD_k, x + tDD_k) (S, a sum of tDD, is the same on
 *      every row: its scan is done once), a max-plus scan over the lanes (5 shuffles) gives
 *      D at the lane's first node, and the lane replays its chain from it;
 *   4. C, J, B as viterbi_filter.
 *
 * Arithmetic.  HMMER's words saturate at -32768 and 32767; here the sums are plain ints.  Above:
 * no value reaches 32767 before E(i) does (I and D are M plus transitions <= 0, the emission is
 * added to M only), and E(i) >= 32767 is the overflow exit, as in HMMER.  Below: every M cell
 * of rows i >= 1 is at least B + tBM_k + e, far above -32768 for any model, and I, D cells of
 * real nodes are finite from row 2 / node 2 on; cells that HMMER holds at -32768 (no path) are
 * lower here, and lose every max they enter to a finite candidate, as in HMMER.  So every finite
 * cell, E, C and the result are HMMER's words.
 *
 * The full D->D chain instead of HMMER's lazy F: D->D paths change no M cell when HMMER skips
 * them (Dmax + ddbound <= B(i), ddbound bounding every D->...->D->M path by the B->M path into
 * the same cell), so M (and E, C) are the same whether they are added or not; D cells may
 * differ, and only feed M.  tests/test_viterbi.py checks the words against viterbi_filter's.
 *
 * Nodes past the model: their table words are -32768 (the host pads to 4-node words) or, for
 * whole words past Q, -32768 constants here: their cells stay very negative (bounded: each is
 * a max with a finite-but-low candidate) and feed nothing of the model.
 */

#define VW_Q (VW_C / 4)              /* words of 4 nodes per lane */

__kernel __attribute__((reqd_work_group_size(VW_LANES * VW_WARPS, 1, 1)))
void VW_NAME(
    __global const uchar *dsq,        /* packed residues                          */
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const short *seq_xw_move,/* [n_seq] N/C/J move word, per length     */
    __global const int   *pair_seq,
    __global const int   *pair_model, /* [n_pairs] model, M <= 32 * VW_C         */
    const int n_pairs,
    const int max_Q,                  /* (unused: the signature is viterbi_wg's)  */
    __global const short4 *msc,       /* per model [KP][Q] words of 4 nodes       */
    __global const long  *msc_off,    /* [n_models] start, in words               */
    __global const short4 *tsc_t,     /* per model [8][Q] words: transition t of 4 nodes */
    __global const long  *tsc_off,    /* [n_models] start, in words               */
    __global const int   *model_M,
    __global const short2 *xw_e,      /* [n_models] E move, E loop                */
    __global const short *ddbound,    /* [n_models] (unused: no lazy F)           */
    const short base_w,
    __global short *out_xc)           /* [n_pairs] C(L), -32768, or 32767 overflow */
{
    __local int vw_tmp[VW_LANES * VW_WARPS];
    const int lane = (int) get_local_id(0) & (VW_LANES - 1);
    const int warp = (int) get_local_id(0) / VW_LANES;
    /* largest pairs first (the host sorts them smallest first) */
    const int p = ((int) get_num_groups(0) - 1 - (int) get_group_id(0)) * VW_WARPS + warp;
    if (p >= n_pairs) return;                      /* uniform over the warp */
    __local int *tmp = vw_tmp + warp * VW_LANES;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const short4 *msc_m = msc + msc_off[m];
    __global const short4 *t = tsc_t + tsc_off[m];
    const int q0 = lane * VW_Q;                    /* the lane's first word */

#ifdef VW_TGLOBAL   /* transitions read where used (L1-cached): the long-model variants */
#define TRV(tt, jj) (int) ((q0 + (jj) / 4 < Q) ? ((__global const short *) (t + (tt) * Q + q0 + (jj) / 4))[(jj) % 4] : WORD_NEG_INF)
#else
    int tr[N_TRANS][VW_C];                         /* transition t of node j: tr[t][j] */
#pragma unroll
    for (int tt = 0; tt < N_TRANS; tt++) {
#pragma unroll
        for (int w = 0; w < VW_Q; w++) {
            const int4 v = q0 + w < Q ? convert_int4(t[tt * Q + q0 + w]) : (int4) (WORD_NEG_INF);
            tr[tt][4 * w] = v.x; tr[tt][4 * w + 1] = v.y; tr[tt][4 * w + 2] = v.z; tr[tt][4 * w + 3] = v.w;
        }
    }
#define TRV(tt, jj) tr[tt][jj]
#endif

    /* The lane's D->D sum S, and its running sums over the scan's steps (the same every row). */
    int S = 0;
#pragma unroll
        for (int j = 0; j < VW_C; j++) S += TRV(T_DD, j);
    int Sstep[5];
#pragma unroll
        for (int st = 0; st < 5; st++) {
        const int d = 1 << st;
        Sstep[st] = S;
        const int o = vw_up(S, d, lane, tmp);
        if (lane >= d) S += o;
    }

    int Mc[VW_C], Ic[VW_C], Dc[VW_C];
#pragma unroll
        for (int j = 0; j < VW_C; j++) Mc[j] = Ic[j] = Dc[j] = WORD_NEG_INF;
    int pM = WORD_NEG_INF, pI = WORD_NEG_INF, pD = WORD_NEG_INF;   /* row i-1, node k0-1 */

    const int move = seq_xw_move[s];
    const short2 xe = xw_e[m];
    const int xN = base_w;                         /* N loop is 0: N stays base_w */
    int xB = xN + move;
    short xJ = WORD_NEG_INF, xC = WORD_NEG_INF;
    for (int i = 0; i < L; i++) {
        __global const short4 *e4 = msc_m + (int) x[i] * Q + q0;
        int e[VW_C];
#pragma unroll
        for (int w = 0; w < VW_Q; w++) {
            const int4 v = q0 + w < Q ? convert_int4(e4[w]) : (int4) (WORD_NEG_INF);
            e[4 * w] = v.x; e[4 * w + 1] = v.y; e[4 * w + 2] = v.z; e[4 * w + 3] = v.w;
        }
        /* M and I, descending: node j reads row i-1 at nodes j-1 (still unchanged) and j */
        int em = WORD_NEG_INF;
#pragma unroll
        for (int j = VW_C - 1; j >= 0; j--) {
            const int mp = j ? Mc[j - 1] : pM, ip = j ? Ic[j - 1] : pI, dp = j ? Dc[j - 1] : pD;
            int sv = max(xB + TRV(T_BM, j), mp + TRV(T_MM, j));
            sv = max(sv, ip + TRV(T_IM, j));
            sv = max(sv, dp + TRV(T_DM, j));
            sv += e[j];
            Ic[j] = max(Mc[j] + TRV(T_MI, j), Ic[j] + TRV(T_II, j));
            Mc[j] = sv;
            em = max(em, sv);
        }
        const int xE = vw_max(em, lane, tmp);
        /* D: the lane's chain from -infinity (A), the scan, the replay from the lane's first D */
        int A = Mc[0] + TRV(T_MD, 0);
#pragma unroll
        for (int j = 1; j < VW_C; j++) A = max(Mc[j] + TRV(T_MD, j), A + TRV(T_DD, j));
#pragma unroll
        for (int st = 0; st < 5; st++) {
            const int d = 1 << st;
            const int o = vw_up(A, d, lane, tmp);
            if (lane >= d) A = max(A, o + Sstep[st]);
        }
        const int din = vw_up(A, 1, lane, tmp);
        Dc[0] = lane ? din : WORD_NEG_INF;
#pragma unroll
        for (int j = 1; j < VW_C; j++) Dc[j] = max(Mc[j - 1] + TRV(T_MD, j - 1), Dc[j - 1] + TRV(T_DD, j - 1));

        if (xE >= 32767) {                         /* uniform: xE is the warp's */
            if (lane == 0) out_xc[p] = 32767;
            return;
        }
        xC = (short) max((int) xC, xE + xe.x);
        xJ = (short) max((int) xJ, xE + xe.y);
        xB = max((int) xJ + move, xN + move);
        /* row i's last nodes for the next lane's first node at row i+1 */
        const int nm = vw_up(Mc[VW_C - 1], 1, lane, tmp);
        const int ni = vw_up(Ic[VW_C - 1], 1, lane, tmp);
        const int nd = vw_up(Dc[VW_C - 1], 1, lane, tmp);
        pM = lane ? nm : WORD_NEG_INF;
        pI = lane ? ni : WORD_NEG_INF;
        pD = lane ? nd : WORD_NEG_INF;
    }
    if (lane == 0) out_xc[p] = xC;
}

#undef VW_Q
#undef TRV

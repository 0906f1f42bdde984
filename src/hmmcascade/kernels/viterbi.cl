/* viterbi.cl: HMMER's Viterbi filter (p7_ViterbiFilter), 16-bit, word-exact.
 *
 * What it computes: for each (sequence, model) pair, the optimal local
 * multihit alignment score in HMMER's signed 16-bit arithmetic: 1/500-bit
 * units, -32768 = -infinity, base_w (12000) = 0, all additions saturating.
 *
 * Recurrence, residue x_i, nodes k = 1..M (t* are HMMER's word scores):
 *
 *   M(i,k) = max(B(i-1) + tBM_k, M(i-1,k-1) + tMM_k, I(i-1,k-1) + tIM_k,
 *                D(i-1,k-1) + tDM_k) + e(x_i, k)
 *   I(i,k) = max(M(i-1,k) + tMI_k, I(i-1,k) + tII_k)      (insert emissions 0)
 *   D(i,k+1) = max(M(i,k) + tMD_k, D(i,k) + tDD_k)
 *   E(i) = max_k M(i,k)
 *   N = base_w;  C(i) = max(C(i-1), E(i) + tEC);  J(i) = max(J(i-1), E(i) + tEJ)
 *   B(i) = max(J(i) + tJB, N + tNB)                       (NN = CC = JJ = 0)
 *
 * HMMER's "lazy F": D->D paths of row i are added only if
 * max_k D(i,k) + ddbound_w > B(i); otherwise D keeps the M->D paths alone.
 * We do the same (a second pass over the row when the test says so), so
 * every word equals HMMER's.  Overflow (E(i) >= 32767) writes 32767; the
 * host turns that into +infinity (passes), as HMMER does.  Otherwise the
 * kernel writes C(L); the host converts: (C + tCT - base_w) / scale_w - 3.
 *
 * Two kernels compute the same words (tests/test_viterbi.py checks them equal
 * on every pair).  Four nodes travel as one short4 word (tables padded with
 * -32768 to a multiple of 4 nodes): match scores [x][q]; transitions [q][t]
 * for viterbi_filter, [t][q] for viterbi_wg (transition t of nodes 4q+1..4q+4).
 *
 * viterbi_filter: one work-item per pair (filter survivors).  Rows M, I, D
 *   live in global scratch as words interleaved by pair (word q of pair p at
 *   [q * n_pairs + p]).  Within a word, M and I are computed in parallel; the
 *   M->D moves shift by one node; the D->D pass is sequential.
 *
 * viterbi_wg: one work-group of GROUP_WG (32) work-items per pair, rows in
 *   local memory; see the comment above the kernel.
 */
#include "hmmcascade.h"
#include "warp.h"

#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel void viterbi_filter(
    __global const uchar *dsq,        /* packed residues                          */
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const short *seq_xw_move,/* [n_seq] N/C/J move word, per length     */
    __global const int   *pair_seq,
    __global const int   *pair_model,
    const int n_pairs,
    const int max_Q,                  /* rows hold max_Q words per pair           */
    __global const short4 *msc,       /* per model [KP][Q] words of 4 nodes       */
    __global const long  *msc_off,    /* [n_models] start, in words               */
    __global const short4 *tsc,       /* per model [Q][8] words: transition t of 4 nodes */
    __global const long  *tsc_off,    /* [n_models] start, in words               */
    __global const int   *model_M,
    __global const short2 *xw_e,      /* [n_models] E move, E loop                */
    __global const short *ddbound,    /* [n_models]                               */
    const short base_w,
    __global short4 *rows,            /* scratch: 3 * max_Q * n_pairs words       */
    __global short *out_xc)           /* [n_pairs] C(L), -32768, or 32767 overflow */
{
    const int p = get_global_id(0);
    if (p >= n_pairs) return;
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const short4 *msc_m = msc + msc_off[m];
    __global const short4 *t = tsc + tsc_off[m];
    const long stride = n_pairs;
    __global short4 *mr = rows + p;
    __global short4 *ir = mr + (long) max_Q * stride;
    __global short4 *dr = ir + (long) max_Q * stride;
    const short4 neg = (short4) (WORD_NEG_INF);

    const int move = seq_xw_move[s];
    const short2 xe = xw_e[m];
    const int dd_bound = ddbound[m];

    for (int q = 0; q < Q; q++) mr[q * stride] = ir[q * stride] = dr[q * stride] = neg;

    const short xN = base_w;                       /* N loop is 0: N stays base_w */
    short xB = (short) (xN + move);
    short xJ = WORD_NEG_INF, xC = WORD_NEG_INF;
    for (int i = 0; i < L; i++) {
        __global const short4 *e = msc_m + (int) x[i] * Q;
        const short4 xBv = (short4) (xB);
        short cm = WORD_NEG_INF, ci = WORD_NEG_INF, cd = WORD_NEG_INF;  /* row i-1 at node 4q      */
        short dcarry = WORD_NEG_INF;                                    /* M->D into node 4q+1     */
        short4 xEv = neg, dmaxv = neg;
        for (int q = 0; q < Q; q++) {
            __global const short4 *tq = t + q * N_TRANS;
            const short4 om = mr[q * stride], oi = ir[q * stride], od = dr[q * stride];
            const short4 mpv = (short4) (cm, om.x, om.y, om.z);
            const short4 ipv = (short4) (ci, oi.x, oi.y, oi.z);
            const short4 dpv = (short4) (cd, od.x, od.y, od.z);
            cm = om.w; ci = oi.w; cd = od.w;
            short4 sv = max(max(add_sat(xBv, tq[T_BM]), add_sat(mpv, tq[T_MM])),
                            max(add_sat(ipv, tq[T_IM]), add_sat(dpv, tq[T_DM])));
            sv = add_sat(sv, e[q]);
            xEv = max(xEv, sv);
            const short4 md = add_sat(sv, tq[T_MD]);          /* M->D into nodes 4q+2 .. 4q+5 */
            const short4 dv = (short4) (dcarry, md.x, md.y, md.z);
            dcarry = md.w;
            dmaxv = max(dmaxv, md);
            mr[q * stride] = sv;
            dr[q * stride] = dv;
            ir[q * stride] = max(add_sat(om, tq[T_MI]), add_sat(oi, tq[T_II]));
        }
        const short xE = max(max(xEv.x, xEv.y), max(xEv.z, xEv.w));
        const short dmax = max(max(dmaxv.x, dmaxv.y), max(dmaxv.z, dmaxv.w));
        if (xE >= 32767) { out_xc[p] = 32767; return; }
        xC = (short) max((int) xC, (int) xE + xe.x);
        xJ = (short) max((int) xJ, (int) xE + xe.y);
        xB = (short) max((int) xJ + move, (int) xN + move);
        if ((int) dmax + dd_bound > (int) xB) {     /* lazy F: add the D->D paths */
            short dv = WORD_NEG_INF, tdd = WORD_NEG_INF;
            for (int q = 0; q < Q; q++) {
                short4 w = dr[q * stride];
                const short4 dd = t[q * N_TRANS + T_DD];
                w.x = max(w.x, add_sat(dv, tdd));
                w.y = max(w.y, add_sat(w.x, dd.x));
                w.z = max(w.z, add_sat(w.y, dd.y));
                w.w = max(w.w, add_sat(w.z, dd.z));
                dv = w.w;
                tdd = dd.w;
                dr[q * stride] = w;
            }
        }
    }
    out_xc[p] = xC;
}
#endif

/* viterbi_wg: viterbi_filter's recurrence, one work-group of GROUP_WG work-items per pair.
 *
 * Layout.  Word q (nodes 4q+1..4q+4) of a row belongs to work-item q mod 32, so a row's
 * table reads are contiguous across the group: match scores msc[x][q], transitions
 * transposed to tsc_t[t][q].  Rows i-1 and i of M, I and D sit in local memory (6 * max_Q
 * short4 words, a kernel argument sized by the host for the launch's longest model):
 *
 *     rows: | M(i-1) | I(i-1) | D'(i-1) | M(i) | I(i) | D'(i) |   each max_Q words
 *
 * D is kept shifted by one node, D'(k) = D(k+1), so that word q of D' is what node
 * 4q+1..4q+4 sends on: without D->D paths it is just md = M + tMD of the same word.
 * Row i reads row i-1's words q-1 and q (written by other work-items) and writes row i:
 * one barrier per row.
 *
 * E and the lazy-F test.  E(i) = max M and Dmax = max md over the row are group maxima
 * (group_max_u32).  As in viterbi_filter (and HMMER), D->D paths are added only when
 * Dmax + ddbound > B(i), and then along the whole row; otherwise D' = md.  (Either way
 * the scores are the same: ddbound bounds every D->...->D->M path into row i+1 by that
 * node's B->M path, and row i's D feeds nothing else.  Applying the same rule keeps even
 * the D rows word for word those of viterbi_filter, and skips the scan where the test
 * allows: about half the rows of tests/test_viterbi.py's pairs.)
 *
 * The D->D chain, when added: D'(k) = max(md(k), sat(D'(k-1) + tDD(k))), D'(0) = -32768.
 * With tDD <= 0 (log probabilities, checked on the host) and md >= -32768, saturation
 * changes nothing: max(md, sat(x + t)) = max(md, x + t) in int, by induction, and every
 * D' stays within [-32768, 32767].  So each step is f_k(x) = max(A, x + B) in plain int,
 * and these compose: (A2, B2) o (A1, B1) = (max(A2, A1 + B2), B1 + B2).  Work-item l
 * composes its own contiguous chunk of words [l*c, (l+1)*c) serially (c odd: local
 * reads free of bank conflicts), group_maxplus_prefix scans the 32 compositions, and
 * each work-item replays its chunk from its prefix, writing D' in place.  This is
 * viterbi_filter's sequential D->D pass, value for value (the same int16 words), so
 * the row handed on is the same.
 *
 * Limits: max_Q words per model (the host sizes local memory: 48 bytes per word);
 * pairs are taken in reverse order of the list (the host sorts it smallest first). */
#define VIT_WG GROUP_WG
#define DD_ID (-32768)      /* (A, B) = (-32768, 0): the identity on D' values (all >= -32768) */

/* D' before work-item l's chunk: the compositions (A, B) of work-items 0..l-1, in order,
 * applied to D'(0) = -32768.  Work-item 0 gets -32768. */
inline int group_maxplus_prefix(int A, int B, __local int2 *tmp)
{
    const int lane = (int) get_local_id(0);
#if defined(HMMC_PTX_SHFL)
    for (int d = 1; d < VIT_WG; d <<= 1) {      /* inclusive scan, Hillis-Steele */
        int a, b;
        asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(a) : "r"(A), "r"(d));
        asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(b) : "r"(B), "r"(d));
        if (lane >= d) { A = max(A, a + B); B += b; }
    }
    const int end = max(A, DD_ID + B);          /* D' after this work-item's chunk */
    int x;
    asm volatile("shfl.sync.up.b32 %0, %1, 1, 0, 0xffffffff;" : "=r"(x) : "r"(end));
    return lane ? x : DD_ID;
#else
    tmp[lane] = (int2) (A, B);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0) {
        int x = DD_ID;
        for (int l = 0; l < VIT_WG; l++) {
            const int2 ab = tmp[l];
            tmp[l].x = x;
            x = max(ab.x, x + ab.y);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return tmp[lane].x;   /* tmp is written again only after the caller's row barrier */
#endif
}

/* Group maximum of int16 values (as group_max_u32 of v + 32768). */
inline short group_max_i16(short v, __local uint *red)
{
    return (short) ((int) group_max_u32((uint) ((int) v + 32768), red) - 32768);
}

#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel __attribute__((reqd_work_group_size(VIT_WG, 1, 1)))
void viterbi_wg(
    __global const uchar *dsq,        /* packed residues                          */
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const short *seq_xw_move,/* [n_seq] N/C/J move word, per length     */
    __global const int   *pair_seq,
    __global const int   *pair_model, /* [n_pairs] model, at most max_Q words     */
    const int n_pairs,
    const int max_Q,                  /* words per local row                      */
    __global const short4 *msc,       /* per model [KP][Q] words of 4 nodes       */
    __global const long  *msc_off,    /* [n_models] start, in words               */
    __global const short4 *tsc_t,     /* per model [8][Q] words: transition t of 4 nodes */
    __global const long  *tsc_off,    /* [n_models] start, in words               */
    __global const int   *model_M,
    __global const short2 *xw_e,      /* [n_models] E move, E loop                */
    __global const short *ddbound,    /* [n_models]                               */
    const short base_w,
    __local short4 *rows,             /* 6 * max_Q words: M, I, D' of rows i-1, i */
    __global short *out_xc)           /* [n_pairs] C(L), -32768, or 32767 overflow */
{
    __local uint red[VIT_WG];
    __local int2 scan[VIT_WG];
    const int p = (int) get_num_groups(0) - 1 - (int) get_group_id(0);   /* largest pairs first */
    const int lane = (int) get_local_id(0);
    if (p >= n_pairs) return;                      /* uniform over the group */
    const int s = pair_seq[p];
    const int m = pair_model[p];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const short4 *msc_m = msc + msc_off[m];
    __global const short4 *t = tsc_t + tsc_off[m];
    __global const short4 *tBM = t + T_BM * Q, *tMM = t + T_MM * Q, *tIM = t + T_IM * Q,
                          *tDM = t + T_DM * Q, *tMD = t + T_MD * Q, *tMI = t + T_MI * Q,
                          *tII = t + T_II * Q, *tDD = t + T_DD * Q;
    const short4 neg = (short4) (WORD_NEG_INF);
    const int chunk = ((Q + VIT_WG - 1) / VIT_WG) | 1;
    const int c_lo = min(Q, lane * chunk), c_hi = min(Q, c_lo + chunk);

    const int move = seq_xw_move[s];
    const short2 xe = xw_e[m];
    const int dd_bound = ddbound[m];

    __local short4 *cur = rows, *nxt = rows + 3 * max_Q;
    for (int q = lane; q < Q; q += VIT_WG) cur[q] = cur[max_Q + q] = cur[2 * max_Q + q] = neg;
    barrier(CLK_LOCAL_MEM_FENCE);

    const short xN = base_w;                       /* N loop is 0: N stays base_w */
    short xB = (short) (xN + move);
    short xJ = WORD_NEG_INF, xC = WORD_NEG_INF;
    for (int i = 0; i < L; i++) {
        __global const short4 *e = msc_m + (int) x[i] * Q;
        __local const short4 *pm = cur, *pi = cur + max_Q, *pd = cur + 2 * max_Q;
        __local short4 *nm = nxt, *ni = nxt + max_Q, *nd = nxt + 2 * max_Q;
        const short4 xBv = (short4) (xB);
        short4 xEv = neg, dmaxv = neg;
        for (int q = lane; q < Q; q += VIT_WG) {
            const short4 om = pm[q], oi = pi[q], od = pd[q];
            /* row i-1 at nodes 4q..4q+3; D(k) = D'(k-1) */
            const short4 lm = q ? pm[q - 1] : neg, li = q ? pi[q - 1] : neg, ld = q ? pd[q - 1] : neg;
            const short4 mpv = (short4) (lm.w, om.x, om.y, om.z);
            const short4 ipv = (short4) (li.w, oi.x, oi.y, oi.z);
            const short4 dpv = (short4) (ld.z, ld.w, od.x, od.y);
            short4 sv = max(max(add_sat(xBv, tBM[q]), add_sat(mpv, tMM[q])),
                            max(add_sat(ipv, tIM[q]), add_sat(dpv, tDM[q])));
            sv = add_sat(sv, e[q]);
            xEv = max(xEv, sv);
            const short4 md = add_sat(sv, tMD[q]);  /* M->D: D'(4q+1..4q+4) without D->D */
            dmaxv = max(dmaxv, md);
            nm[q] = sv;
            nd[q] = md;
            ni[q] = max(add_sat(om, tMI[q]), add_sat(oi, tII[q]));
        }
        const short xE = group_max_i16(max(max(xEv.x, xEv.y), max(xEv.z, xEv.w)), red);
        const short dmax = group_max_i16(max(max(dmaxv.x, dmaxv.y), max(dmaxv.z, dmaxv.w)), red);
        if (xE >= 32767) {                         /* uniform: xE is the group's */
            if (lane == 0) out_xc[p] = 32767;
            return;
        }
        xC = (short) max((int) xC, (int) xE + xe.x);
        xJ = (short) max((int) xJ, (int) xE + xe.y);
        xB = (short) max((int) xJ + move, (int) xN + move);
        if ((int) dmax + dd_bound > (int) xB) {    /* lazy F (uniform): add the D->D paths */
            barrier(CLK_LOCAL_MEM_FENCE);          /* every md of row i written */
            int A = DD_ID, B = 0;
            for (int q = c_lo; q < c_hi; q++) {
                const int4 w = convert_int4(nd[q]), d = convert_int4(tDD[q]);
                A = max(w.x, A + d.x); B += d.x;
                A = max(w.y, A + d.y); B += d.y;
                A = max(w.z, A + d.z); B += d.z;
                A = max(w.w, A + d.w); B += d.w;
            }
            int dv = group_maxplus_prefix(A, B, scan);
            for (int q = c_lo; q < c_hi; q++) {
                int4 w = convert_int4(nd[q]);
                const int4 d = convert_int4(tDD[q]);
                w.x = max(w.x, dv + d.x);
                w.y = max(w.y, w.x + d.y);
                w.z = max(w.z, w.y + d.z);
                w.w = max(w.w, w.z + d.w);
                dv = w.w;
                nd[q] = convert_short4(w);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);              /* row i complete before row i+1 reads it */
        __local short4 *tmp = cur; cur = nxt; nxt = tmp;
    }
    if (lane == 0) out_xc[p] = xC;
}
#endif

/* viterbi_warp<C>: viterbi_filter's words, one warp per pair, C nodes per lane in registers (see
 * viterbi_warp.h and warp.h). */
#define VW_WARPS 1

#if !defined(HMMC_PART) || HMMC_PART == 1
#define VW_C 4
#define VW_NAME viterbi_warp4
#include "viterbi_warp.h"
#undef VW_C
#undef VW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 2
#define VW_C 8
#define VW_NAME viterbi_warp8
#include "viterbi_warp.h"
#undef VW_C
#undef VW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 3
#define VW_C 12
#define VW_NAME viterbi_warp12
#include "viterbi_warp.h"
#undef VW_C
#undef VW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 4
#define VW_C 16
#define VW_NAME viterbi_warp16
#include "viterbi_warp.h"
#undef VW_C
#undef VW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 5
#define VW_C 24
#define VW_NAME viterbi_warp24
#define VW_TGLOBAL 1
#include "viterbi_warp.h"
#undef VW_C
#undef VW_NAME
#undef VW_TGLOBAL
#endif
#if !defined(HMMC_PART) || HMMC_PART == 6
#define VW_C 32
#define VW_NAME viterbi_warp32
#define VW_TGLOBAL 1
#include "viterbi_warp.h"
#undef VW_C
#undef VW_NAME
#undef VW_TGLOBAL
#endif

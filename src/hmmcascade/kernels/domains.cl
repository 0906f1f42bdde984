/* domains.cl: HMMER's post-filter stages for cascade survivors, float32.
 *
 *   fb_parser      Forward and Backward parsers (multihit, length L) over a
 *                  whole target, the posterior domain decoding
 *                  (p7_DomainDecoding: btot, etot, mocc per residue) and the
 *                  region loop of p7_domaindef_ByPosteriorHeuristics on them
 *                  (rt1 = 0.25, rt2 = 0.10, rt3 = 0.20): per pair a list of
 *                  regions (i, j, is_multidomain) and the expected number of
 *                  domains btot[L].
 *   envelope       For one envelope i..j: Forward and Backward with full
 *                  matrices (unihit, length model of the whole target),
 *                  posterior decoding (p7_Decoding), null2 by expectation
 *                  (p7_Null2_ByExpectation, before its degeneracy
 *                  averaging), optimal accuracy (p7_OptimalAccuracy) and
 *                  its traceback (p7_OATrace), when mode & 1.  Otherwise
 *                  (mode 0 or 2) it stops after the Forward matrix, which
 *                  is sampled from for a multi-domain region
 *                  (p7_StochasticTrace).  mode & 2 says which emission
 *                  table msc is (below).
 *
 * The arithmetic follows HMMER's SSE implementation (impl_sse/fwdback.c,
 * decoding.c, null2.c, optacc.c) operation by operation, except the order
 * of a few sums inside a row (HMMER's striped D->D passes), so values agree
 * to float rounding.  Where HMMER's *choices* depend on its striped node
 * order (ties in the OA traceback's E state, the lane sums of null2), the
 * striped order is reproduced exactly: node k sits in lane (k-1)/Q of
 * vector (k-1)%Q, Q = max(2, ceil(M/4)).  The region decisions repeat the
 * float32 comparisons of hmmcascade.domaindef.decode.find_regions exactly.
 *
 * Work: one work-item per job, four nodes per float4 word (W = 4 ceil(M/4)
 * nodes, tables padded with zeros).  The Backward pass computes each row in
 * one sweep over the nodes: the sum B(i) it needs first is accumulated from
 * row i+1's final M cells while row i+1 is written, and the D->D chain and
 * the M <- D terms follow in the same descending sweep.  Every value is the
 * same float expression, in the same order, as in the three-pass form.
 *
 * Scratch layout ("word-interleaved").  Each job's scratch is a sequence of
 * floats e = 0, 1, 2, ...; float e of the job lives at
 *
 *     p[((e >> 2) * ws) * 4 + (e & 3)],   p = scr + scr_off[job],
 *
 * i.e. words of 4 floats, consecutive words ws words apart.  With ws = the
 * work-group size and scr_off[job] = group base + 4 * local id, the jobs of
 * a work-group interleave word by word: when all lanes of a warp touch the
 * same word of their scratch (same node of the same row), the accesses are
 * contiguous.  The host sorts jobs by (M, model, length), so that lanes of a
 * group share the model and the row layout, and sizes each group for its
 * largest job.  With ws = 1 a job's scratch is plain contiguous floats (the
 * host's choice on CPUs, one job per work-group, where that is cache-friendly).
 * DP rows are read and written as whole words; specials as single floats.
 *
 *   fb_parser (ws = work-group size):
 *     [0, 3W) Forward row (M, I, D: W each), [3W, 6W) Backward row,
 *     then residue i = 0..L: 16 floats at 6W + 16 i:
 *       0..5 Forward specials (E N J B C SCALE), 6..11 Backward specials,
 *       12 btot, 13 etot, 14 mocc.
 *   envelope, full (mode 1 or 3; ws = work-group size): row i = 0..Ld at
 *     i * R, R = 6W + 24: F (or, later, OA scores) 3W, B (later posteriors)
 *     3W, then specials fx, bx, px (posteriors), ox (OA): 6 each.
 *   envelope, Forward only (mode 0 or 2; ws = 1, contiguous per job; read by
 *     other kernels): F as [(Ld+1)][3][W], then fx as [(Ld+1)][6].
 *
 * Tables as in hmmcascade.h (float odds, float probabilities, 4-node words):
 * transition t of node k at tsc[((k-1)/4) * 32 + t * 4 + (k-1)%4].
 * Emission (x, k) at msc[x * exs + ((k-1)/4) * ews + (k-1)%4], in one of
 * two tables (a model's block starts at word msc_off[m]):
 *   the filters' [x][W] table: exs = W, ews = 4 (envelope, mode & 2 == 0);
 *   node-major words [W/4][KP][4]: exs = 4, ews = 4 * KP (fb_parser; envelope
 *   with mode & 2), so a warp reading node k for 32 different residues
 *   touches one 464-byte block instead of up to 20 rows of the table.
 */
#include "hmmcascade.h"
#include "warp.h"

/* The arguments of every envelope-stage kernel (envelope, envelope_wg, envelope_warp<C>,
 * region_forward_lanes, region_forward_wide, region_forward_warp<C>): the jobs, the tables, the
 * scratch and the outputs, as envelope's comment below describes them. */
#define ENVELOPE_JOB_ARGS \
    __global const uchar *dsq, __global const long *seq_off, \
    __global const int *job_seq, __global const int *job_model, \
    __global const int *job_i, __global const int *job_len, __global const float4 *job_xfm, \
    const int n_jobs, const int mode, \
    __global const float *msc, __global const long *msc_off, \
    __global const float *tsc, __global const long *tsc_off, __global const int *model_M, \
    __global float *scr, __global const long *scr_off, \
    __global float *null2, __global const long *null2_off, \
    __global int4 *trace, __global float *trace_pp, __global const long *trace_off, \
    __global float4 *info, __global int *disp, __global int4 *cols

/* fb_parser's per-residue record */
#define REC 16
#define R_BX 6
#define R_BTOT 12
#define R_ETOT 13
#define R_MOCC 14

#define RT1 0.25f
#define RT2 0.10f
#define RT3 0.20f

#define TR(tsc, k, t) ((tsc)[(((k) - 1) >> 2) * 32 + (t) * 4 + (((k) - 1) & 3)])

/* Position of float e of a job's word-interleaved scratch (see the file comment). */
inline long el(const long e, const int ws) { return (((e >> 2) * ws) << 2) + (e & 3); }

/* The word that starts at float e (e a multiple of 4); its word q is at [q * ws]. */
inline __global float4 *words(__global float *p, const int ws, const long e)
{
    return (__global float4 *) (p + (((e >> 2) * ws) << 2));
}

/* HMMER divides by a float scale through double 1.0/x rounded to float. */
inline float inv_as_hmmer(float x)
{
#ifdef cl_khr_fp64
    return (float) (1.0 / (double) x);
#else
    return 1.0f / x;
#endif
}

/* ---------------------------------------------------------------------------------------------
 * The Forward and Backward parsers of fb_parser in HMMER's own summation order (impl_sse/fwdback.c,
 * forward_engine and backward_engine in parsing mode; docs/hmmer-striped-order.md).  A row is Q =
 * max(2, ceil(M/4)) float4 vectors; lane l of vector q holds node l Q + q + 1 (zero past M), and
 * every vector operation is HMMER's SSE operation on the same four floats in the same order: the
 * M, I and D cells, E's lane sums (M then D in one accumulator), the in-lane D->D pass and the
 * lane-crossing passes (cut short for M >= 100 when one changes nothing, Forward only), B's lane
 * sums, and the horizontal sums (a0 + a1) + (a2 + a3).  The row lives in the job's scratch (one
 * row, updated in place as HMMER's parsers do; words at stride ws); the specials go where
 * the envelope kernel puts them.
 * --------------------------------------------------------------------------------------------- */

/* Transition t of the nodes of striped vector q (0 past M). */
inline float4 st_tr(__global const float *tsc, const int M, const int Q, const int q, const int t)
{
    const int k0 = q + 1, k1 = Q + q + 1, k2 = 2 * Q + q + 1, k3 = 3 * Q + q + 1;
    return (float4) (k0 <= M ? TR(tsc, k0, t) : 0.0f, k1 <= M ? TR(tsc, k1, t) : 0.0f,
                     k2 <= M ? TR(tsc, k2, t) : 0.0f, k3 <= M ? TR(tsc, k3, t) : 0.0f);
}

/* Emissions (residue row er, word stride ews) of the nodes of striped vector q (0 past M). */
#define ST_EM1(k) ((k) <= M ? er[(((k) - 1) >> 2) * ews + (((k) - 1) & 3)] : 0.0f)
inline float4 st_em(__global const float *er, const int ews, const int M, const int Q, const int q)
{
    return (float4) (ST_EM1(q + 1), ST_EM1(Q + q + 1), ST_EM1(2 * Q + q + 1), ST_EM1(3 * Q + q + 1));
}
#undef ST_EM1

inline float4 st_rshift(const float4 a) { return (float4) (0.0f, a.x, a.y, a.z); }   /* esl_sse_rightshift_ps */
inline float4 st_lshift(const float4 a) { return (float4) (a.y, a.z, a.w, 0.0f); }   /* move_ss + shuffle */
inline float st_hsum(const float4 a) { return (a.x + a.y) + (a.z + a.w); }

#define SM(q) R[(q) * ws]
#define SI(q) R[(Q + (q)) * ws]
#define SD(q) R[(2 * Q + (q)) * ws]

/* p7_ForwardParser: specials of row i at x0 + i * xrow ; the row at float 0 of p
 * (3 Q words).  Returns the score in nats. */
float forward_parser_striped(__global const uchar *dsq, const int L, const int M, const int Q,
                             __global const float *msc, const int exs, const int ews,
                             __global const float *tsc, const float4 xfm,
                             __global float *p, const int ws, const long x0, const int xrow)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float4 *R = words(p, ws, 0);
    for (int q = 0; q < 3 * Q; q++) R[q * ws] = (float4) (0.0f);
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f;
    float xB = nmove;
    p[el(x0 + XE, ws)] = 0.0f; p[el(x0 + XN, ws)] = 1.0f; p[el(x0 + XJ, ws)] = 0.0f;
    p[el(x0 + XB, ws)] = xB; p[el(x0 + XC, ws)] = 0.0f; p[el(x0 + XSCALE, ws)] = 1.0f;
    float totscale = 0.0f;
    for (int i = 1; i <= L; i++) {
        __global const float *er = msc + (int) dsq[i - 1] * exs;
        float4 dcv = (float4) (0.0f), xEv = (float4) (0.0f);
        const float4 xBv = (float4) (xB);
        float4 mpv = st_rshift(SM(Q - 1)), dpv = st_rshift(SD(Q - 1)), ipv = st_rshift(SI(Q - 1));
        for (int q = 0; q < Q; q++) {
            float4 sv = xBv * st_tr(tsc, M, Q, q, T_BM);
            sv = sv + mpv * st_tr(tsc, M, Q, q, T_MM);
            sv = sv + ipv * st_tr(tsc, M, Q, q, T_IM);
            sv = sv + dpv * st_tr(tsc, M, Q, q, T_DM);
            sv = sv * st_em(er, ews, M, Q, q);
            xEv = xEv + sv;
            mpv = SM(q); dpv = SD(q); ipv = SI(q);
            SM(q) = sv; SD(q) = dcv;
            dcv = sv * st_tr(tsc, M, Q, q, T_MD);
            sv = mpv * st_tr(tsc, M, Q, q, T_MI);
            SI(q) = sv + ipv * st_tr(tsc, M, Q, q, T_II);
        }
        dcv = st_rshift(dcv);
        SD(0) = (float4) (0.0f);
        for (int q = 0; q < Q; q++) {
            SD(q) = dcv + SD(q);
            dcv = SD(q) * st_tr(tsc, M, Q, q, T_DD);
        }
        if (M < 100) {
            for (int j = 1; j < 4; j++) {
                dcv = st_rshift(dcv);
                for (int q = 0; q < Q; q++) {
                    SD(q) = dcv + SD(q);
                    dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                }
            }
        } else {
            for (int j = 1; j < 4; j++) {
                dcv = st_rshift(dcv);
                int4 cv = (int4) (0);
                for (int q = 0; q < Q; q++) {
                    const float4 old = SD(q);
                    const float4 sv = dcv + old;
                    cv = cv | isgreater(sv, old);
                    SD(q) = sv;
                    dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                }
                if (!any(cv)) break;
            }
        }
        for (int q = 0; q < Q; q++) xEv = SD(q) + xEv;
        xE = st_hsum(xEv);
        xN = xN * nloop;
        xC = xC * nloop + xE * emove;
        xJ = xJ * nloop + xE * eloop;
        xB = xJ * nmove + xN * nmove;
        const long xr = x0 + (long) i * xrow;
        if (xE > 1.0e4f) {
            xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
            const float4 sv = (float4) (inv_as_hmmer(xE));
            for (int q = 0; q < 3 * Q; q++) R[q * ws] = R[q * ws] * sv;
            p[el(xr + XSCALE, ws)] = xE;
            totscale = ADD_LOG_AS_HMMER(totscale, xE);
            xE = 1.0f;
        } else {
            p[el(xr + XSCALE, ws)] = 1.0f;
        }
        p[el(xr + XE, ws)] = xE; p[el(xr + XN, ws)] = xN; p[el(xr + XJ, ws)] = xJ;
        p[el(xr + XB, ws)] = xB; p[el(xr + XC, ws)] = xC;
    }
    return ADD_LOG_AS_HMMER(totscale, xC * nmove);
}

/* p7_BackwardParser, scaled by the Forward's factors (specials at fx0 + i * xrow) or its own once
 * B exceeds 1e16; the row at float r0 of p (3 Q words); specials at bx0 + i * xrow .  Returns has_own_scales. */
int backward_parser_striped(__global const uchar *dsq, const int L, const int M, const int Q,
                            __global const float *msc, const int exs, const int ews,
                            __global const float *tsc, const float4 xfm,
                            __global float *p, const int ws, const long r0, const long fx0,
                            const long bx0, const int xrow)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float4 *R = words(p, ws, r0);
    int own = 0;
    float xJ = 0.0f, xB = 0.0f, xN = 0.0f;
    float xC = nmove;
    float xE = xC * emove;
    float4 xEv = (float4) (xE);
    float4 dcv = (float4) (0.0f), dpv;
    for (int q = 0; q < Q; q++) { SM(q) = xEv; SD(q) = xEv; SI(q) = (float4) (0.0f); }
    /* row L: the D->D paths from D(Q-1), three more passes, then M->D */
    dpv = st_lshift(SD(Q - 1));
    for (int q = Q - 1; q >= 0; q--) {
        dcv = dpv * st_tr(tsc, M, Q, q, T_DD);
        SD(q) = SD(q) + dcv;
        dpv = SD(q);
    }
    for (int j = 1; j < 4; j++) {
        dcv = st_lshift(dcv);
        for (int q = Q - 1; q >= 0; q--) {
            dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
            SD(q) = SD(q) + dcv;
        }
    }
    dcv = st_lshift(SD(0));
    for (int q = Q - 1; q >= 0; q--) {
        SM(q) = SM(q) + dcv * st_tr(tsc, M, Q, q, T_MD);
        dcv = SD(q);
    }
    {
        const float sc = p[el(fx0 + (long) L * xrow + XSCALE, ws)];
        if (sc > 1.0f) {
            xE = xE / sc; xN = xN / sc; xC = xC / sc; xJ = xJ / sc; xB = xB / sc;
            const float4 v = (float4) (inv_as_hmmer(sc));
            for (int q = 0; q < 3 * Q; q++) R[q * ws] = R[q * ws] * v;
        }
        const long xr = bx0 + (long) L * xrow;
        p[el(xr + XSCALE, ws)] = sc;
        p[el(xr + XE, ws)] = xE; p[el(xr + XN, ws)] = xN; p[el(xr + XJ, ws)] = xJ;
        p[el(xr + XB, ws)] = xB; p[el(xr + XC, ws)] = xC;
    }
    for (int i = L - 1; i >= 1; i--) {
        __global const float *er = msc + (int) dsq[i] * exs;   /* x_{i+1} */
        float4 tmmv = st_lshift(st_tr(tsc, M, Q, 0, T_MM));
        float4 timv = st_lshift(st_tr(tsc, M, Q, 0, T_IM));
        float4 tdmv = st_lshift(st_tr(tsc, M, Q, 0, T_DM));
        float4 mpv = st_lshift(SM(0) * st_em(er, ews, M, Q, 0));
        float4 xBv = (float4) (0.0f);
        for (int q = Q - 1; q >= 0; q--) {
            const float4 ipv = SI(q);
            SI(q) = ipv * st_tr(tsc, M, Q, q, T_II) + mpv * timv;
            SD(q) = mpv * tdmv;
            const float4 mcv = ipv * st_tr(tsc, M, Q, q, T_MI) + mpv * tmmv;
            mpv = SM(q) * st_em(er, ews, M, Q, q);
            SM(q) = mcv;
            tdmv = st_tr(tsc, M, Q, q, T_DM);
            timv = st_tr(tsc, M, Q, q, T_IM);
            tmmv = st_tr(tsc, M, Q, q, T_MM);
            xBv = xBv + mpv * st_tr(tsc, M, Q, q, T_BM);
        }
        xB = st_hsum(xBv);
        xC = xC * nloop;
        xJ = (xB * nmove) + (xJ * nloop);
        xN = (xB * nmove) + (xN * nloop);
        xE = (xC * emove) + (xJ * eloop);
        xEv = (float4) (xE);
        dpv = st_lshift(SD(0) + xEv);
        for (int q = Q - 1; q >= 0; q--) {
            dcv = dpv * st_tr(tsc, M, Q, q, T_DD);
            SD(q) = SD(q) + (dcv + xEv);
            dpv = SD(q);
            SM(q) = SM(q) + xEv;
        }
        for (int j = 1; j < 4; j++) {
            dcv = st_lshift(dcv);
            for (int q = Q - 1; q >= 0; q--) {
                dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                SD(q) = SD(q) + dcv;
            }
        }
        dcv = st_lshift(SD(0));
        for (int q = Q - 1; q >= 0; q--) {
            SM(q) = SM(q) + dcv * st_tr(tsc, M, Q, q, T_MD);
            dcv = SD(q);
        }
        if (xB > 1.0e16f) own = 1;
        float sc;
        if (own) sc = (xB > 1.0e4f) ? xB : 1.0f;
        else     sc = p[el(fx0 + (long) i * xrow + XSCALE, ws)];
        if (sc > 1.0f) {
            xE = xE / sc; xN = xN / sc; xJ = xJ / sc; xB = xB / sc; xC = xC / sc;
            const float4 v = (float4) (inv_as_hmmer(sc));
            for (int q = 0; q < 3 * Q; q++) R[q * ws] = R[q * ws] * v;
        }
        const long xr = bx0 + (long) i * xrow;
        p[el(xr + XSCALE, ws)] = sc;
        p[el(xr + XE, ws)] = xE; p[el(xr + XN, ws)] = xN; p[el(xr + XJ, ws)] = xJ;
        p[el(xr + XB, ws)] = xB; p[el(xr + XC, ws)] = xC;
    }
    {   /* row 0: N and B only */
        __global const float *er = msc + (int) dsq[0] * exs;
        float4 xBv = (float4) (0.0f);
        for (int q = 0; q < Q; q++) {
            float4 mpv = SM(q) * st_em(er, ews, M, Q, q);
            mpv = mpv * st_tr(tsc, M, Q, q, T_BM);
            xBv = xBv + mpv;
        }
        xB = st_hsum(xBv);
        xN = (xB * nmove) + (xN * nloop);
        p[el(bx0 + XB, ws)] = xB; p[el(bx0 + XC, ws)] = 0.0f; p[el(bx0 + XJ, ws)] = 0.0f;
        p[el(bx0 + XN, ws)] = xN; p[el(bx0 + XE, ws)] = 0.0f; p[el(bx0 + XSCALE, ws)] = 1.0f;
    }
    return own;
}
#undef SM
#undef SI
#undef SD

/* p7_Forward in HMMER's striped order, as forward_parser_striped, with every row kept in node
 * order (the layout every reader of the matrices takes): row i at float mat0 + i * mrow, M, I, D
 * cells of nodes 1..W (W each, zero past M); specials at x0 + i * xrow.  A striped vector's four nodes are read and written one by one (nodes past M
 * read as zero and are not stored: their cells are zero, as in HMMER, whose tables are zero there).
 * Returns the score in nats. */
#define NCELL(r, st, k) p[el((r) + (long) (st) * W + (k) - 1, ws)]
#define NLD1(r, st, k) ((k) <= M ? NCELL(r, st, k) : 0.0f)
#define NLD(r, st, q) ((float4) (NLD1(r, st, (q) + 1), NLD1(r, st, Q + (q) + 1), \
                                 NLD1(r, st, 2 * Q + (q) + 1), NLD1(r, st, 3 * Q + (q) + 1)))
#define NST1(r, st, k, v) { if ((k) <= M) NCELL(r, st, k) = (v); }
#define NST(r, st, q, v) { const float4 v_ = (v); NST1(r, st, (q) + 1, v_.x) NST1(r, st, Q + (q) + 1, v_.y) \
                           NST1(r, st, 2 * Q + (q) + 1, v_.z) NST1(r, st, 3 * Q + (q) + 1, v_.w) }
float forward_matrix_striped(__global const uchar *dsq, const int L, const int M, const int W,
                             __global const float *msc, const int exs, const int ews,
                             __global const float *tsc, const float4 xfm,
                             __global float *p, const int ws, const long mat0, const int mrow,
                             const long x0, const int xrow)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    const int Q = max(2, (M - 1) / 4 + 1);
    {
        __global float4 *r0 = words(p, ws, mat0);
        for (int q = 0; q < 3 * (W >> 2); q++) r0[q * ws] = (float4) (0.0f);
    }
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f;
    float xB = nmove;
    p[el(x0 + XE, ws)] = 0.0f; p[el(x0 + XN, ws)] = 1.0f; p[el(x0 + XJ, ws)] = 0.0f;
    p[el(x0 + XB, ws)] = xB; p[el(x0 + XC, ws)] = 0.0f; p[el(x0 + XSCALE, ws)] = 1.0f;
    float totscale = 0.0f;
    for (int i = 1; i <= L; i++) {
        const long rp = mat0 + (long) (i - 1) * mrow, rc = mat0 + (long) i * mrow;
        __global const float *er = msc + (int) dsq[i - 1] * exs;
        float4 dcv = (float4) (0.0f), xEv = (float4) (0.0f);
        const float4 xBv = (float4) (xB);
        if (mrow != 0)   /* cells of nodes past M: zero (read by decoding and null2; stored nowhere else) */
            for (int k = M + 1; k <= W; k++) { NCELL(rc, 0, k) = 0.0f; NCELL(rc, 1, k) = 0.0f; NCELL(rc, 2, k) = 0.0f; }
        float4 mpv = st_rshift(NLD(rp, 0, Q - 1)), dpv = st_rshift(NLD(rp, 2, Q - 1)), ipv = st_rshift(NLD(rp, 1, Q - 1));
        for (int q = 0; q < Q; q++) {
            float4 sv = xBv * st_tr(tsc, M, Q, q, T_BM);
            sv = sv + mpv * st_tr(tsc, M, Q, q, T_MM);
            sv = sv + ipv * st_tr(tsc, M, Q, q, T_IM);
            sv = sv + dpv * st_tr(tsc, M, Q, q, T_DM);
            sv = sv * st_em(er, ews, M, Q, q);
            xEv = xEv + sv;
            mpv = NLD(rp, 0, q); dpv = NLD(rp, 2, q); ipv = NLD(rp, 1, q);
            NST(rc, 0, q, sv)
            NST(rc, 2, q, dcv)
            dcv = sv * st_tr(tsc, M, Q, q, T_MD);
            sv = mpv * st_tr(tsc, M, Q, q, T_MI);
            NST(rc, 1, q, sv + ipv * st_tr(tsc, M, Q, q, T_II))
        }
        dcv = st_rshift(dcv);
        for (int q = 0; q < Q; q++) {
            const float4 d = dcv + (q == 0 ? (float4) (0.0f) : NLD(rc, 2, q));
            NST(rc, 2, q, d)
            dcv = d * st_tr(tsc, M, Q, q, T_DD);
        }
        if (M < 100) {
            for (int j = 1; j < 4; j++) {
                dcv = st_rshift(dcv);
                for (int q = 0; q < Q; q++) {
                    NST(rc, 2, q, dcv + NLD(rc, 2, q))
                    dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                }
            }
        } else {
            for (int j = 1; j < 4; j++) {
                dcv = st_rshift(dcv);
                int4 cv = (int4) (0);
                for (int q = 0; q < Q; q++) {
                    const float4 old = NLD(rc, 2, q);
                    const float4 sv = dcv + old;
                    cv = cv | isgreater(sv, old);
                    NST(rc, 2, q, sv)
                    dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                }
                if (!any(cv)) break;
            }
        }
        for (int q = 0; q < Q; q++) xEv = NLD(rc, 2, q) + xEv;
        xE = st_hsum(xEv);
        xN = xN * nloop;
        xC = xC * nloop + xE * emove;
        xJ = xJ * nloop + xE * eloop;
        xB = xJ * nmove + xN * nmove;
        const long xr = x0 + (long) i * xrow;
        if (xE > 1.0e4f) {
            xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
            const float s = inv_as_hmmer(xE);
            __global float4 *cur = words(p, ws, rc);
            for (int q = 0; q < 3 * (W >> 2); q++) cur[q * ws] = cur[q * ws] * s;
            p[el(xr + XSCALE, ws)] = xE;
            totscale = ADD_LOG_AS_HMMER(totscale, xE);
            xE = 1.0f;
        } else {
            p[el(xr + XSCALE, ws)] = 1.0f;
        }
        p[el(xr + XE, ws)] = xE; p[el(xr + XN, ws)] = xN; p[el(xr + XJ, ws)] = xJ;
        p[el(xr + XB, ws)] = xB; p[el(xr + XC, ws)] = xC;
    }
    return ADD_LOG_AS_HMMER(totscale, xC * nmove);
}
#undef NST
#undef NST1
#undef NLD
#undef NLD1
#undef NCELL

/* p7_Backward in HMMER's striped order (as backward_parser_striped), every row kept in
 * node order: row i at float mat0 + i * mrow (M, I, D cells of nodes 1..W, zero past M); Forward specials
 * at fx0 + i * xrow (their SCALE read), Backward specials at bx0 + i * xrow.  Nodes past M hold
 * zero here; where HMMER's differ (row L's cells, set to E in every lane), the value HMMER reads is
 * used.  Returns has_own_scales. */
#define NCELL(r, st, k) p[el((r) + (long) (st) * W + (k) - 1, ws)]
#define NLD1(r, st, k) ((k) <= M ? NCELL(r, st, k) : 0.0f)
#define NLD(r, st, q) ((float4) (NLD1(r, st, (q) + 1), NLD1(r, st, Q + (q) + 1), \
                                 NLD1(r, st, 2 * Q + (q) + 1), NLD1(r, st, 3 * Q + (q) + 1)))
#define NST1(r, st, k, v) { if ((k) <= M) NCELL(r, st, k) = (v); }
#define NST(r, st, q, v) { const float4 v_ = (v); NST1(r, st, (q) + 1, v_.x) NST1(r, st, Q + (q) + 1, v_.y) \
                           NST1(r, st, 2 * Q + (q) + 1, v_.z) NST1(r, st, 3 * Q + (q) + 1, v_.w) }
int backward_matrix_striped(__global const uchar *dsq, const int L, const int M, const int W,
                            __global const float *msc, const int exs, const int ews,
                            __global const float *tsc, const float4 xfm,
                            __global float *p, const int ws, const long fx0, const long mat0, const int mrow,
                            const long bx0, const int xrow)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int W4 = W >> 2;
    int own = 0;
    float xJ = 0.0f, xB = 0.0f, xN = 0.0f;
    float xC = nmove;
    float xE = xC * emove;
    float4 xEv = (float4) (xE);
    float4 dcv = (float4) (0.0f), dpv;
    {   /* row L */
        const long rc = mat0 + (long) L * mrow;
        __global float4 *cur = words(p, ws, rc);
        for (int q = 0; q < W4; q++) { cur[q * ws] = xEv; cur[(W4 + q) * ws] = (float4) (0.0f); cur[(2 * W4 + q) * ws] = xEv; }
        for (int k = M + 1; k <= W; k++) { NCELL(rc, 0, k) = 0.0f; NCELL(rc, 2, k) = 0.0f; }
        dpv = st_lshift(xEv);   /* HMMER's D(Q-1), E in every lane (its nodes past M too) */
        for (int q = Q - 1; q >= 0; q--) {
            dcv = dpv * st_tr(tsc, M, Q, q, T_DD);
            dpv = NLD(rc, 2, q) + dcv;
            NST(rc, 2, q, dpv)
        }
        for (int j = 1; j < 4; j++) {
            dcv = st_lshift(dcv);
            for (int q = Q - 1; q >= 0; q--) {
                dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                NST(rc, 2, q, NLD(rc, 2, q) + dcv)
            }
        }
        dcv = st_lshift(NLD(rc, 2, 0));
        for (int q = Q - 1; q >= 0; q--) {
            NST(rc, 0, q, NLD(rc, 0, q) + dcv * st_tr(tsc, M, Q, q, T_MD))
            dcv = NLD(rc, 2, q);
        }
        const float sc = p[el(fx0 + (long) L * xrow + XSCALE, ws)];
        if (sc > 1.0f) {
            xE = xE / sc; xN = xN / sc; xC = xC / sc; xJ = xJ / sc; xB = xB / sc;
            const float v = inv_as_hmmer(sc);
            for (int q = 0; q < 3 * W4; q++) cur[q * ws] = cur[q * ws] * v;
        }
        const long xr = bx0 + (long) L * xrow;
        p[el(xr + XSCALE, ws)] = sc;
        p[el(xr + XE, ws)] = xE; p[el(xr + XN, ws)] = xN; p[el(xr + XJ, ws)] = xJ;
        p[el(xr + XB, ws)] = xB; p[el(xr + XC, ws)] = xC;
    }
    for (int i = L - 1; i >= 1; i--) {
        const long rn = mat0 + (long) (i + 1) * mrow, rc = mat0 + (long) i * mrow;
        __global const float *er = msc + (int) dsq[i] * exs;   /* x_{i+1} */
        if (mrow != 0)   /* cells of nodes past M: zero (read by decoding and null2; stored nowhere else) */
            for (int k = M + 1; k <= W; k++) { NCELL(rc, 0, k) = 0.0f; NCELL(rc, 1, k) = 0.0f; NCELL(rc, 2, k) = 0.0f; }
        float4 tmmv = st_lshift(st_tr(tsc, M, Q, 0, T_MM));
        float4 timv = st_lshift(st_tr(tsc, M, Q, 0, T_IM));
        float4 tdmv = st_lshift(st_tr(tsc, M, Q, 0, T_DM));
        float4 mpv = st_lshift(NLD(rn, 0, 0) * st_em(er, ews, M, Q, 0));
        float4 xBv = (float4) (0.0f);
        for (int q = Q - 1; q >= 0; q--) {
            const float4 ipv = NLD(rn, 1, q);
            NST(rc, 1, q, ipv * st_tr(tsc, M, Q, q, T_II) + mpv * timv)
            NST(rc, 2, q, mpv * tdmv)
            const float4 mcv = ipv * st_tr(tsc, M, Q, q, T_MI) + mpv * tmmv;
            mpv = NLD(rn, 0, q) * st_em(er, ews, M, Q, q);
            NST(rc, 0, q, mcv)
            tdmv = st_tr(tsc, M, Q, q, T_DM);
            timv = st_tr(tsc, M, Q, q, T_IM);
            tmmv = st_tr(tsc, M, Q, q, T_MM);
            xBv = xBv + mpv * st_tr(tsc, M, Q, q, T_BM);
        }
        xB = st_hsum(xBv);
        xC = xC * nloop;
        xJ = (xB * nmove) + (xJ * nloop);
        xN = (xB * nmove) + (xN * nloop);
        xE = (xC * emove) + (xJ * eloop);
        xEv = (float4) (xE);
        dpv = st_lshift(NLD(rc, 2, 0) + xEv);
        for (int q = Q - 1; q >= 0; q--) {
            dcv = dpv * st_tr(tsc, M, Q, q, T_DD);
            dpv = NLD(rc, 2, q) + (dcv + xEv);
            NST(rc, 2, q, dpv)
            NST(rc, 0, q, NLD(rc, 0, q) + xEv)
        }
        for (int j = 1; j < 4; j++) {
            dcv = st_lshift(dcv);
            for (int q = Q - 1; q >= 0; q--) {
                dcv = dcv * st_tr(tsc, M, Q, q, T_DD);
                NST(rc, 2, q, NLD(rc, 2, q) + dcv)
            }
        }
        dcv = st_lshift(NLD(rc, 2, 0));
        for (int q = Q - 1; q >= 0; q--) {
            NST(rc, 0, q, NLD(rc, 0, q) + dcv * st_tr(tsc, M, Q, q, T_MD))
            dcv = NLD(rc, 2, q);
        }
        if (xB > 1.0e16f) own = 1;
        float sc;
        if (own) sc = (xB > 1.0e4f) ? xB : 1.0f;
        else     sc = p[el(fx0 + (long) i * xrow + XSCALE, ws)];
        if (sc > 1.0f) {
            xE = xE / sc; xN = xN / sc; xJ = xJ / sc; xB = xB / sc; xC = xC / sc;
            const float v = inv_as_hmmer(sc);
            __global float4 *cur = words(p, ws, rc);
            for (int q = 0; q < 3 * W4; q++) cur[q * ws] = cur[q * ws] * v;
        }
        const long xr = bx0 + (long) i * xrow;
        p[el(xr + XSCALE, ws)] = sc;
        p[el(xr + XE, ws)] = xE; p[el(xr + XN, ws)] = xN; p[el(xr + XJ, ws)] = xJ;
        p[el(xr + XB, ws)] = xB; p[el(xr + XC, ws)] = xC;
    }
    {   /* row 0: N and B only */
        const long rn = mat0 + (long) mrow;
        __global const float *er = msc + (int) dsq[0] * exs;
        float4 xBv = (float4) (0.0f);
        for (int q = 0; q < Q; q++) {
            float4 mpv = NLD(rn, 0, q) * st_em(er, ews, M, Q, q);
            mpv = mpv * st_tr(tsc, M, Q, q, T_BM);
            xBv = xBv + mpv;
        }
        xB = st_hsum(xBv);
        xN = (xB * nmove) + (xN * nloop);
        p[el(bx0 + XB, ws)] = xB; p[el(bx0 + XC, ws)] = 0.0f; p[el(bx0 + XJ, ws)] = 0.0f;
        p[el(bx0 + XN, ws)] = xN; p[el(bx0 + XE, ws)] = 0.0f; p[el(bx0 + XSCALE, ws)] = 1.0f;
        if (mrow != 0) {
            __global float4 *r0 = words(p, ws, mat0);
            for (int q = 0; q < 3 * W4; q++) r0[q * ws] = (float4) (0.0f);
        }
    }
    return own;
}
#undef NST
#undef NST1
#undef NLD
#undef NLD1
#undef NCELL

/* p7_DomainDecoding (btot, etot, mocc per residue, into the records) and the region loop of
 * p7_domaindef_ByPosteriorHeuristics (rt1 = 0.25, rt2 = 0.10, rt3 = 0.20) on a job's residue
 * records (16 floats from float rec0 of its scratch p, word stride ws; fb_parser_warp's are
 * contiguous: ws = 1), once its Forward and Backward specials are there; writes the job's output
 * row o (see fb_parser).  fsc: the Forward score; own: whether the Backward used its own scales. */
void domain_decoding(__global float *p, const int ws, const long rec0, const int L, const float nloop,
                     const int own, const float fsc, const int region_cap, __global int *o)
{
#define FXR(i, c) p[el(rec0 + (long) (i) * REC + (c), ws)]
#define BXR(i, c) p[el(rec0 + (long) (i) * REC + R_BX + (c), ws)]
#define DDR(i, c) p[el(rec0 + (long) (i) * REC + (c), ws)]
    const float bxn0 = BXR(0, XN);
    float scaleproduct = inv_as_hmmer(bxn0);
    float btot = 0.0f, etot = 0.0f;
    DDR(0, R_BTOT) = 0.0f; DDR(0, R_ETOT) = 0.0f; DDR(0, R_MOCC) = 0.0f;
    /* region loop state (find_regions): open start ri (-1: none), triggered */
    int ri = -1, trig = 0, nreg = 0;
    float bprev = 0.0f, eprev = 0.0f;
    for (int i = 1; i <= L; i++) {
        btot = btot + (((FXR(i - 1, XB) * BXR(i - 1, XB)) * FXR(i - 1, XSCALE)) * scaleproduct);
        if (own) scaleproduct = scaleproduct * (FXR(i - 1, XSCALE) / BXR(i - 1, XSCALE));
        etot = etot + (((FXR(i, XE) * BXR(i, XE)) * FXR(i, XSCALE)) * scaleproduct);
        float njcp = ((FXR(i - 1, XN) * BXR(i, XN)) * nloop) * scaleproduct;
        njcp = njcp + ((FXR(i - 1, XJ) * BXR(i, XJ)) * nloop) * scaleproduct;
        njcp = njcp + ((FXR(i - 1, XC) * BXR(i, XC)) * nloop) * scaleproduct;
#ifdef cl_khr_fp64
        const float mocc = (float) (1.0 - (double) njcp);
#else
        const float mocc = 1.0f - njcp;
#endif
        DDR(i, R_BTOT) = btot; DDR(i, R_ETOT) = etot; DDR(i, R_MOCC) = mocc;
        /* find_regions: each difference is rounded to float before the next subtraction */
        if (!trig) {
            const float bdiff = btot - bprev;
            const float lowb = mocc - bdiff;
            if (lowb < RT2) ri = i;
            else if (ri == -1) ri = i;
            if (mocc >= RT1) trig = 1;
        } else {
            const float ediff = etot - eprev;
            const float lowe = mocc - ediff;
            if (lowe < RT2) {
                /* _is_multidomain(ri, i): max over z of min(etot[z] - etot[ri-1], btot[i] - btot[z-1])
                 * >= rt3, false when any term is NaN (numpy's max propagates it, Python's max drops it) */
                const float e0 = DDR(ri - 1, R_ETOT);
                float mx = -1.0f;
                int nan = 0;
                for (int z = ri; z <= i; z++) {
                    const float ev = DDR(z, R_ETOT) - e0;
                    const float bv = btot - DDR(z - 1, R_BTOT);
                    if (isnan(ev) || isnan(bv)) nan = 1;
                    else mx = fmax(mx, (ev < bv) ? ev : bv);
                }
                const int multi = (!nan && mx >= RT3) ? 1 : 0;
                if (nreg < region_cap) { o[6 + 2 * nreg] = ri; o[7 + 2 * nreg] = 2 * i + multi; }
                nreg++;
                ri = -1; trig = 0;
            }
        }
        bprev = btot; eprev = etot;
    }
#undef FXR
#undef BXR
#undef DDR
    o[0] = as_int(fsc);
    o[1] = as_int(LOG_AS_HMMER(bxn0));
    o[2] = as_int((float) own);
    o[3] = as_int(isinf(scaleproduct) ? 1.0f : 0.0f);
    o[4] = as_int(btot);
    o[5] = nreg;
}

/* fb_parser's and fb_parser_wg's arguments */
#define FB_PARSER_ARGS \
    __global const uchar *dsq, __global const long *seq_off, __global const int *seq_len, \
    __global const float4 *seq_xfm, \
    __global const int2 *job, __global const long *scr_off, const int j0, const int n_jobs, \
    __global const float *msc, __global const long *msc_off, \
    __global const float *tsc, __global const long *tsc_off, __global const int *model_M, \
    __global float *scr, const int region_cap, __global int *out

/* Whole-target Forward + Backward parsers, p7_DomainDecoding and the region loop.
 *
 * Jobs j0 .. n_jobs-1 (global id + j0), job[j] = (sequence, model); scr_off[j]: float offset of
 * the job's word-interleaved scratch (ws = work-group size; see the file comment).
 * Output row j of out, 6 + 2 * region_cap ints: floats fwd score, bck score (nats), own scales,
 * range error (scaleproduct overflowed), nexpected = btot[L]; int count of regions; then up to
 * region_cap regions as (i, 2 j + is_multidomain).  count > region_cap: only the first
 * region_cap are written (the host redoes that pair from btot, etot, mocc in the scratch). */
#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel void fb_parser(FB_PARSER_ARGS)
{
    const int j = j0 + REVERSED_GID();
    if (j >= n_jobs) return;
    const int ws = get_local_size(0);
    const int s = job[j].x, m = job[j].y;
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float *e = msc + msc_off[m] * 4;
    __global const float *t = tsc + tsc_off[m] * 4;
    const float4 xfm = seq_xfm[s];
    __global float *p = scr + scr_off[j];
    const int Q = max(2, W >> 2);       /* HMMER's striped vectors per row */
    const long rec0 = 24 * (long) Q;    /* two rows of 3 Q words, then the residue records: fx, bx, btot, etot, mocc */
    const float fsc = forward_parser_striped(x, L, M, Q, e, 4, 4 * KP, t, xfm, p, ws, rec0, REC);
    const int own = backward_parser_striped(x, L, M, Q, e, 4, 4 * KP, t, xfm, p, ws, 12 * (long) Q, rec0,
                                            rec0 + R_BX, REC);
    domain_decoding(p, ws, rec0, L, xfm.y, own, fsc, region_cap, out + (long) j * (6 + 2 * region_cap));
}
#endif

/* Striped position of node k (1-based) for a model with Q vectors. */
inline int striped_rank(const int k, const int Q) { return ((k - 1) % Q) * 4 + (k - 1) / Q; }

/* OA row, node k (component c): M and I from row i-1 (node k-1 in pm, pi, pd; node k in om, oi)
 * and the posteriors; then the D chain (D(k) = dv; dv <- max(masked M(k), masked D(k))) and E. */
#define OA_NODE(c) {                                                                \
        float sv_ = (tBM.c > 0.0f) ? xBv : 0.0f;                                    \
        sv_ = fmax(sv_, (tMM.c > 0.0f) ? pm : 0.0f);                                \
        sv_ = fmax(sv_, (tIM.c > 0.0f) ? pi : 0.0f);                                \
        sv_ = fmax(sv_, (tDM.c > 0.0f) ? pd : 0.0f);                                \
        sv_ = sv_ + ppm.c;                                                          \
        pm = om.c; pi = oi.c; pd = od.c;                                            \
        float iv_ = (tMI.c > 0.0f) ? pm : 0.0f;                                     \
        iv_ = fmax(iv_, (tII.c > 0.0f) ? pi : 0.0f);                                \
        m4.c = sv_; i4.c = iv_ + ppi.c; d4.c = dv;                                  \
        const float a_ = (tMD.c > 0.0f) ? sv_ : 0.0f;                               \
        const float b_ = (tDD.c > 0.0f) ? dv : 0.0f;                                \
        xE = fmax(xE, fmax(sv_, dv));                                               \
        dv = fmax(a_, b_);                                                          \
    }

/* Envelope scratch (full layout, file comment): row i's special c of the Forward (set 0), Backward
 * (1), posterior (2) and OA (3) specials, at float i * R + 6 W + set * NX + c. */
#define ENV_X(p, ws, R, W, i, set, c) (p)[el((long) (i) * (R) + 6 * (W) + (set) * NX + (c), ws)]

/* p7_Decoding's specials of row i >= 1 (N, J, C posteriors; E and B 0). */
inline void decode_specials(__global float *p, const int ws, const int R, const int W, const int i,
                            const float nloop, const float scaleproduct)
{
#define FXs(i, c) ENV_X(p, ws, R, W, i, 0, c)
#define BXs(i, c) ENV_X(p, ws, R, W, i, 1, c)
#define PXs(i, c) ENV_X(p, ws, R, W, i, 2, c)
    PXs(i, XE) = 0.0f;
    PXs(i, XN) = ((FXs(i - 1, XN) * BXs(i, XN)) * nloop) * scaleproduct;
    PXs(i, XJ) = ((FXs(i - 1, XJ) * BXs(i, XJ)) * nloop) * scaleproduct;
    PXs(i, XC) = ((FXs(i - 1, XC) * BXs(i, XC)) * nloop) * scaleproduct;
    PXs(i, XB) = 0.0f;
#undef FXs
#undef BXs
#undef PXs
}

/* p7_Null2_ByExpectation's odds of residue r before degeneracy averaging: the node weights (row 0
 * of F: W M weights, then W I weights) summed in HMMER's striped lane order, plus xfactor;
 * er: the residue's emission odds (node k at er[((k-1)/4) * ews + (k-1)%4]). */
inline float null2_residue(__global const float *p, const int ws, const int W, const int M, const int Q,
                           __global const float *er, const int ews, const float xfactor)
{
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int q = 0; q < Q; q++)
        for (int l = 0; l < 4; l++) {
            const int k = l * Q + q + 1;
            if (k > M) continue;
            lane[l] = lane[l] + p[el(k - 1, ws)] * er[((k - 1) >> 2) * ews + ((k - 1) & 3)];
            lane[l] = lane[l] + p[el(W + k - 1, ws)];
        }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + xfactor;
}

/* p7_OptimalAccuracy's specials of row i >= 1 from its E (xE); masked transitions give 0.0. */
inline void oa_specials(__global float *p, const int ws, const int R, const int W, const int i, const float xE,
                        const float4 xfm)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
#define PXs(i, c) ENV_X(p, ws, R, W, i, 2, c)
#define OXs(i, c) ENV_X(p, ws, R, W, i, 3, c)
    OXs(i, XE) = xE;
    float t1 = (nloop == 0.0f) ? 0.0f : OXs(i - 1, XJ) + PXs(i, XJ);
    float t2 = (eloop == 0.0f) ? 0.0f : xE;
    const float oj = fmax(t1, t2);
    OXs(i, XJ) = oj;
    t1 = (nloop == 0.0f) ? 0.0f : OXs(i - 1, XC) + PXs(i, XC);
    t2 = (emove == 0.0f) ? 0.0f : xE;
    OXs(i, XC) = fmax(t1, t2);
    const float on = (nloop == 0.0f) ? 0.0f : OXs(i - 1, XN) + PXs(i, XN);
    OXs(i, XN) = on;
    t1 = (nmove == 0.0f) ? 0.0f : on;
    t2 = (nmove == 0.0f) ? 0.0f : oj;
    OXs(i, XB) = fmax(t1, t2);
#undef PXs
#undef OXs
}

/* p7_OATrace of an envelope job, written backwards from the end of its trace slot (tr, tpp: Ld + M + 8
 * entries of (state, k, i, 0) and posteriors).  The job's full scratch p (word stride ws, rows of R
 * floats, file comment): F rows hold the OA scores, B rows the posteriors.  Returns the entries
 * written, or -1 where the traceback failed. */
int oa_trace(__global const float *p, const int ws, const int R, const int W, const int M, const int Q,
             const int Ld, __global const float *t, const float4 xfm, __global int4 *tr, __global float *tpp)
{
    const float nmove = xfm.x, nloop = xfm.y, emove_cfg = xfm.z, eloop_cfg = xfm.w;
    const float NEG = -INFINITY;
    const long B0 = 3 * W, px0 = 6 * W + 2 * NX, ox0 = px0 + NX;
#define FC(i, st, k) p[el((long) (i) * R + (st) * W + (k) - 1, ws)]
#define BC(i, st, k) p[el((long) (i) * R + B0 + (st) * W + (k) - 1, ws)]
#define PX(i, c) p[el((long) (i) * R + px0 + (c), ws)]
#define OX(i, c) p[el((long) (i) * R + ox0 + (c), ws)]
    const int cap = Ld + M + 8;
    int n = 0;
    int i = Ld, k = 0, s0 = ST_C;
    tr[cap - 1 - n] = (int4) (ST_T, 0, i, 0); tpp[cap - 1 - n] = 0.0f; n++;
    tr[cap - 1 - n] = (int4) (ST_C, 0, i, 0); tpp[cap - 1 - n] = 0.0f; n++;
    int ok = 1;
    while (s0 != ST_S) {
        int s1 = -1;
        if (n >= cap) { ok = 0; break; }
        if (s0 == ST_M) {
            float path[4];
            const float mv = (k > 1) ? FC(i - 1, 0, k - 1) : 0.0f;
            const float iv = (k > 1) ? FC(i - 1, 1, k - 1) : 0.0f;
            const float dvv = (k > 1) ? FC(i - 1, 2, k - 1) : 0.0f;
            path[3] = (TR(t, k, T_BM) == 0.0f) ? NEG : OX(i - 1, XB);
            path[0] = (TR(t, k, T_MM) == 0.0f) ? NEG : mv;
            path[1] = (TR(t, k, T_IM) == 0.0f) ? NEG : iv;
            path[2] = (TR(t, k, T_DM) == 0.0f) ? NEG : dvv;
            int best = 0;
            for (int a = 1; a < 4; a++) if (path[a] > path[best]) best = a;
            const int states[4] = {ST_M, ST_I, ST_D, ST_B};
            s1 = states[best];
            k--; i--;
        } else if (s0 == ST_D) {
            const float a = (k > 1 && TR(t, k - 1, T_MD) != 0.0f) ? FC(i, 0, k - 1) : NEG;
            const float b = (k > 1 && TR(t, k - 1, T_DD) != 0.0f) ? FC(i, 2, k - 1) : NEG;
            s1 = (a >= b) ? ST_M : ST_D;
            k--;
        } else if (s0 == ST_I) {
            const float a = (TR(t, k, T_MI) == 0.0f) ? NEG : FC(i - 1, 0, k);
            const float b = (TR(t, k, T_II) == 0.0f) ? NEG : FC(i - 1, 1, k);
            s1 = (a >= b) ? ST_M : ST_I;
            i--;
        } else if (s0 == ST_N) {
            s1 = (i == 0) ? ST_S : ST_N;
        } else if (s0 == ST_C) {
            const float a = (nloop == 0.0f) ? NEG : OX(i - 1, XC) + PX(i, XC);
            const float b = (emove_cfg == 0.0f) ? NEG : OX(i, XE);
            s1 = (a > b) ? ST_C : ST_E;
        } else if (s0 == ST_J) {
            const float a = (nloop == 0.0f) ? NEG : OX(i - 1, XJ) + PX(i, XJ);
            const float b = (eloop_cfg == 0.0f) ? NEG : OX(i, XE);
            s1 = (a > b) ? ST_J : ST_E;
        } else if (s0 == ST_E) {
            float best = NEG;
            int bs = -1, bk = 0;
            for (int q = 0; q < Q; q++) {
                for (int l = 0; l < 4; l++) {
                    const int kk = l * Q + q + 1;
                    const float v = (kk <= W) ? FC(i, 0, kk) : 0.0f;
                    if (v >= best) { best = v; bs = ST_M; bk = kk; }
                }
                for (int l = 0; l < 4; l++) {
                    const int kk = l * Q + q + 1;
                    const float v = (kk <= W) ? FC(i, 2, kk) : 0.0f;
                    if (v > best) { best = v; bs = ST_D; bk = kk; }
                }
            }
            s1 = bs; k = bk;
            if (k > M) { ok = 0; break; }
        } else if (s0 == ST_B) {
            const float a = (nmove == 0.0f) ? NEG : OX(i, XN);
            const float b = (nmove == 0.0f) ? NEG : OX(i, XJ);
            s1 = (a > b) ? ST_N : ST_J;
        }
        if (s1 < 0) { ok = 0; break; }
        float post = 0.0f;
        if (s1 == ST_M) post = BC(i, 0, k);
        else if (s1 == ST_I) post = BC(i, 1, k);
        else if (s1 == s0 && (s1 == ST_N || s1 == ST_C || s1 == ST_J)) {
            post = PX(i, (s1 == ST_N ? XN : (s1 == ST_C ? XC : XJ)));
        }
        tr[cap - 1 - n] = (int4) (s1, k, i, 0);
        tpp[cap - 1 - n] = post;
        n++;
        if ((s1 == ST_N || s1 == ST_J || s1 == ST_C) && s1 == s0) i--;
        s0 = s1;
    }
    return ok ? n : -1;
#undef FC
#undef BC
#undef PX
#undef OX
}

/* The displayed columns of an OA trace of nt entries at the end of its slot tr[0..cap-1]
 * (p7_alidisplay_Create's span, as hmmcascade.domaindef.alignment finds it: z1 = the first M
 * after the first B, z2 = the last M at or before the first E after z1, or the trace's end),
 * copied to cols[base...] as (state, k, i, posterior bits) at a base taken from the launch's
 * counter.  disp = (base, columns); columns 0 for a trace without B or without M after it. */
void oa_display(__global const int4 *tr, __global const float *tpp, const int nt, const int cap,
                __global int *disp, volatile __global int *counter, __global int4 *cols)
{
    int z1 = -1;
    for (int a = cap - max(nt, 0); a < cap; a++) {
        if (tr[a].x == ST_B) { z1 = a + 1; break; }
    }
    if (z1 >= 0) {
        while (z1 < cap && tr[z1].x != ST_M) z1++;
        if (z1 >= cap) z1 = -1;
    }
    if (z1 < 0) { disp[0] = 0; disp[1] = 0; return; }
    int z2 = cap - 1;
    for (int a = z1 + 1; a < cap; a++) {
        if (tr[a].x == ST_E) { z2 = a; break; }
    }
    while (tr[z2].x != ST_M) z2--;
    const int n = z2 - z1 + 1;
    const int base = atomic_add(counter, n);
    for (int a = 0; a < n; a++) {
        int4 v = tr[z1 + a];
        v.w = as_int(tpp[z1 + a]);
        cols[base + a] = v;
    }
    disp[0] = base;
    disp[1] = n;
}

/* Envelope job: see the file comment.
 * mode & 2: msc is the node-major emission table, else the filters' [x][W] one.
 * mode & 1 (full): scratch in the word-interleaved layout (ws = work-group size; the host groups jobs);
 *   null2[null2_off[j] + 0..19]: the 20 canonical null2 odds (before degeneracy averaging);
 *   trace + trace_off[j], trace_pp + trace_off[j]: up to Ld + M + 8 entries of (state, k, i, 0)
 *   and their posteriors, written from the end of the slot (T) backwards;
 *   info[j] = (envelope score nats, OA score, entries or -1 on failure, 1 if decoding overflowed);
 *   disp[2 j], disp[2 j + 1]: where the displayed columns of the trace went in cols, and how many
 *   (oa_display; disp[2 n_jobs] counts the launch's columns, zero before the launch).
 * mode & 1 == 0: Forward only, contiguous F and fx at scr + scr_off[j]; info[j] = (score, 0, 0, 0). */
#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel void envelope(
    ENVELOPE_JOB_ARGS)
{
    const int j = REVERSED_GID();
    if (j >= n_jobs) return;
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int Q4 = W >> 2;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int Ld = job_len[j];
    __global const uchar *x = dsq + seq_off[s] + (job_i[j] - 1);
    __global const float *e = msc + msc_off[m] * 4;
    __global const float *t = tsc + tsc_off[m] * 4;
    __global const float4 *t4 = (__global const float4 *) t;
    const float4 xfm = job_xfm[j];
    __global float *p = scr + scr_off[j];
    const int exs = (mode & 2) ? 4 : W, ews = (mode & 2) ? 4 * KP : 4;   /* emission table layout */

    if ((mode & 1) == 0) {
        const float envsc = forward_matrix_striped(x, Ld, M, W, e, exs, ews, t, xfm, p, 1, 0, 3 * W,
                                                   (long) (Ld + 1) * 3 * W, NX);
        info[j] = (float4) (envsc, 0.0f, 0.0f, 0.0f);
        return;
    }
    const int ws = get_local_size(0);
    const int R = 6 * W + 24;              /* floats per row: F, B, fx, bx, px, ox */
    const long B0 = 3 * W, fx0 = 6 * W, bx0 = fx0 + NX, px0 = bx0 + NX, ox0 = px0 + NX;
#define FC(i, st, k) p[el((long) (i) * R + (st) * W + (k) - 1, ws)]        /* F / OA cell */
#define BC(i, st, k) p[el((long) (i) * R + B0 + (st) * W + (k) - 1, ws)]   /* B / posterior cell */
#define FX(i, c) p[el((long) (i) * R + fx0 + (c), ws)]
#define BX(i, c) p[el((long) (i) * R + bx0 + (c), ws)]
#define PX(i, c) p[el((long) (i) * R + px0 + (c), ws)]
#define OX(i, c) p[el((long) (i) * R + ox0 + (c), ws)]
#define FROW(i) words(p, ws, (long) (i) * R)
#define BROW(i) words(p, ws, (long) (i) * R + B0)

    const float envsc = forward_matrix_striped(x, Ld, M, W, e, exs, ews, t, xfm, p, ws, 0, R, fx0, R);
    const int own = backward_matrix_striped(x, Ld, M, W, e, exs, ews, t, xfm, p, ws, fx0, B0, R, bx0, R);

    /* p7_Decoding: B <- posterior probabilities (D cells 0). */
    float scaleproduct = inv_as_hmmer(BX(0, XN));
    const float nloop = xfm.y;
    {
        __global float4 *b = BROW(0);
        for (int q = 0; q < 3 * Q4; q++) b[q * ws] = (float4) (0.0f);
    }
    PX(0, XE) = 0.0f; PX(0, XN) = 0.0f; PX(0, XJ) = 0.0f; PX(0, XC) = 0.0f; PX(0, XB) = 0.0f;
    PX(0, XSCALE) = 1.0f;
    for (int i = 1; i <= Ld; i++) {
        __global float4 *f = FROW(i);
        __global float4 *b = BROW(i);
        const float totr = scaleproduct * FX(i, XSCALE);
        for (int q = 0; q < Q4; q++) {
            b[q * ws] = (f[q * ws] * b[q * ws]) * totr;
            b[(2 * Q4 + q) * ws] = (float4) (0.0f);
            b[(Q4 + q) * ws] = (f[(Q4 + q) * ws] * b[(Q4 + q) * ws]) * totr;
        }
        decode_specials(p, ws, R, W, i, nloop, scaleproduct);
        if (own) scaleproduct = scaleproduct * (FX(i, XSCALE) / BX(i, XSCALE));
    }
    if (isinf(scaleproduct)) { info[j] = (float4) (envsc, 0.0f, 0.0f, 1.0f); return; }

    /* p7_Null2_ByExpectation, up to the odds: per-node posterior weights in the striped lane order.
     * Workspace: row 0 of F, W M weights then W I weights. */
    {
        __global float *n2 = null2 + null2_off[j];
        __global float4 *acc = FROW(0);
        {
            __global float4 *b1 = BROW(1);
            for (int q = 0; q < Q4; q++) { acc[q * ws] = b1[q * ws]; acc[(Q4 + q) * ws] = b1[(Q4 + q) * ws]; }
        }
        float aN = PX(1, XN), aC = PX(1, XC), aJ = PX(1, XJ);
        for (int i = 2; i <= Ld; i++) {
            __global float4 *b = BROW(i);
            for (int q = 0; q < Q4; q++) {
                acc[q * ws] = b[q * ws] + acc[q * ws];
                acc[(Q4 + q) * ws] = b[(Q4 + q) * ws] + acc[(Q4 + q) * ws];
            }
            aN = aN + PX(i, XN); aC = aC + PX(i, XC); aJ = aJ + PX(i, XJ);
        }
#ifdef cl_khr_fp64
        const float norm = (float) (1.0 / (double) (float) Ld);
#else
        const float norm = 1.0f / (float) Ld;
#endif
        for (int q = 0; q < 2 * Q4; q++) acc[q * ws] = acc[q * ws] * norm;
        aN = aN * norm; aC = aC * norm; aJ = aJ * norm;
        const float xfactor = (aN + aC) + aJ;
        for (int r = 0; r < 20; r++)
            n2[r] = null2_residue(p, ws, W, M, Q, e + r * exs, ews, xfactor);
    }

    /* p7_OptimalAccuracy: F <- OA scores.  Masked transitions (probability 0)
     * contribute 0.0, as HMMER's and-with-compare does. */
    const float NEG = -INFINITY;
    {
        __global float4 *f0 = FROW(0);
        for (int q = 0; q < 3 * Q4; q++) f0[q * ws] = (float4) (NEG);
    }
    OX(0, XE) = NEG; OX(0, XN) = 0.0f; OX(0, XJ) = NEG; OX(0, XB) = 0.0f; OX(0, XC) = NEG;
    OX(0, XSCALE) = 1.0f;
    for (int i = 1; i <= Ld; i++) {
        __global float4 *prv = FROW(i - 1);
        __global float4 *cur = FROW(i);
        __global float4 *pp = BROW(i);
        const float xBv = OX(i - 1, XB);
        float xE = NEG;
        float pm = NEG, pi = NEG, pd = NEG;   /* row i-1, node k-1 */
        float dv = NEG;                       /* D(i,k) of the chain */
        for (int q = 0; q < Q4; q++) {
            const float4 om = prv[q * ws], oi = prv[(Q4 + q) * ws], od = prv[(2 * Q4 + q) * ws];
            const float4 ppm = pp[q * ws], ppi = pp[(Q4 + q) * ws];
            __global const float4 *tq = t4 + q * 8;
            const float4 tBM = tq[T_BM], tMM = tq[T_MM], tIM = tq[T_IM], tDM = tq[T_DM];
            const float4 tMD = tq[T_MD], tMI = tq[T_MI], tII = tq[T_II], tDD = tq[T_DD];
            float4 m4, i4, d4;
            OA_NODE(x) OA_NODE(y) OA_NODE(z) OA_NODE(w)
            cur[q * ws] = m4; cur[(Q4 + q) * ws] = i4; cur[(2 * Q4 + q) * ws] = d4;
        }
        oa_specials(p, ws, R, W, i, xE, xfm);
    }
    const float oasc = OX(Ld, XC);

    const int nt = oa_trace(p, ws, R, W, M, Q, Ld, t, xfm, trace + trace_off[j], trace_pp + trace_off[j]);
    info[j] = (float4) (envsc, oasc, (float) nt, 0.0f);
    oa_display(trace + trace_off[j], trace_pp + trace_off[j], nt, Ld + M + 8, disp + 2 * j, disp + 2 * n_jobs, cols);
#undef FC
#undef BC
#undef FX
#undef BX
#undef PX
#undef OX
#undef FROW
#undef BROW
}
#endif


/* ---------------------------------------------------------------------------------------------
 * region_forward_lanes: envelope's Forward-only mode (mode & 1 == 0: a multi-domain region's multihit
 * Forward matrix, sampled from by region_ensemble) with four work-items per job, one per lane of
 * HMMER's striped vectors: work-item c computes component c of every float4 operation of
 * forward_matrix_striped, in the same order, so the matrix, the specials and the score are the same
 * floats (HMMER's p7_Forward; docs/hmmer-striped-order.md).  Lane c holds nodes c Q + 1 .. c Q + Q,
 * contiguous in the node-ordered rows.  What crosses lanes goes through local memory: the right
 * shifts (the previous row's cells of node c Q, read from the matrix after the row's barrier; the
 * D->D carries), the lane-crossing passes' "changed anything" test, and E's horizontal sum
 * (a0 + a1) + (a2 + a3).  The specials are computed by the job's four work-items alike; lane 0
 * stores them.  A work-group of 4 G work-items takes G jobs side by side (G = local size / 4, at
 * most 8; jobs in a launch come sorted by size, so neighbours take about as long): every work-item
 * reaches every barrier of the group's longest job, a job past its own rows (or past the passes
 * HMMER's early end skips) only exchanging.  Same arguments and outputs as envelope's mode 0.
 * --------------------------------------------------------------------------------------------- */
#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel void region_forward_lanes(
    ENVELOPE_JOB_ARGS)
{
    __local float xf[32];
    __local int xi[32];
    const int lid = (int) get_local_id(0), c = lid & 3, g0 = lid & ~3;   /* lane; the job's first work-item */
    const int G = (int) get_local_size(0) >> 2;
    const int j = ((int) get_num_groups(0) - 1 - (int) get_group_id(0)) * G + (lid >> 2);  /* largest first */
    const int live = j < n_jobs;
    const int s = live ? job_seq[j] : 0, m = live ? job_model[j] : 0;
    const int M = live ? model_M[m] : 0;
    const int W = (M + 3) / 4 * 4;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int L = live ? job_len[j] : 0;
    __global const uchar *x = dsq + seq_off[s] + (live ? job_i[j] - 1 : 0);
    __global const float *msc_m = msc + msc_off[m] * 4;
    __global const float *tsc_m = tsc + tsc_off[m] * 4;
    const float4 xfm = live ? job_xfm[j] : (float4) (0.0f);
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *p = scr + (live ? scr_off[j] : 0);
    const int exs = (mode & 2) ? 4 : W, ews = (mode & 2) ? 4 * KP : 4;   /* emission table layout */
    const long mrow = 3 * W, x0 = (long) (L + 1) * 3 * W;
    const int k0 = c * Q + 1;                      /* the lane's first node */
#define LC(r, st, k) p[(r) + (long) (st) * W + (k) - 1]
#define LLD(r, st, k) ((k) <= M ? LC(r, st, k) : 0.0f)
#define LTR(k, t) ((k) <= M ? TR(tsc_m, k, t) : 0.0f)
#define LEM(k) ((k) <= M ? er[(((k) - 1) >> 2) * ews + (((k) - 1) & 3)] : 0.0f)
    /* the group's longest job: its rows are the loop's */
    xi[lid] = L;
    barrier(CLK_LOCAL_MEM_FENCE);
    int Lmax = 0;
    for (int t = 0; t < 4 * G; t += 4) Lmax = max(Lmax, xi[t]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (live) {
        for (int q = c; q < 3 * W; q += 4) p[q] = 0.0f;
        if (c == 0) {
            p[x0 + XE] = 0.0f; p[x0 + XN] = 1.0f; p[x0 + XJ] = 0.0f;
            p[x0 + XB] = nmove; p[x0 + XC] = 0.0f; p[x0 + XSCALE] = 1.0f;
        }
    }
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f;
    float xB = nmove;
    float totscale = 0.0f;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    for (int i = 1; i <= Lmax; i++) {
        const int on = i <= L;                     /* this job has row i */
        const long rp = (long) (i - 1) * mrow, rc = (long) i * mrow;
        __global const uchar *er_x = x + (on ? i - 1 : 0);
        __global const float *er = msc_m + (on ? (int) er_x[0] : 0) * exs;
        float dcv = 0.0f, xEv = 0.0f;
        if (on) {
            if (c == 0)    /* cells of nodes past M: zero */
                for (int k = M + 1; k <= W; k++) { LC(rc, 0, k) = 0.0f; LC(rc, 1, k) = 0.0f; LC(rc, 2, k) = 0.0f; }
            /* the right shift of the previous row's last vector: node c Q of lane c - 1, 0 in lane 0 */
            float mpv = c ? LLD(rp, 0, k0 - 1) : 0.0f, dpv = c ? LLD(rp, 2, k0 - 1) : 0.0f,
                  ipv = c ? LLD(rp, 1, k0 - 1) : 0.0f;
            for (int q = 0; q < Q; q++) {
                const int k = k0 + q;
                float sv = xB * LTR(k, T_BM);
                sv = sv + mpv * LTR(k, T_MM);
                sv = sv + ipv * LTR(k, T_IM);
                sv = sv + dpv * LTR(k, T_DM);
                sv = sv * LEM(k);
                xEv = xEv + sv;
                mpv = LLD(rp, 0, k); dpv = LLD(rp, 2, k); ipv = LLD(rp, 1, k);
                if (k <= M) { LC(rc, 0, k) = sv; LC(rc, 2, k) = dcv; }
                dcv = sv * LTR(k, T_MD);
                sv = mpv * LTR(k, T_MI);
                if (k <= M) LC(rc, 1, k) = sv + ipv * LTR(k, T_II);
            }
        }
        /* dcv = right shift of dcv */
        xf[lid] = dcv;
        barrier(CLK_LOCAL_MEM_FENCE);
        dcv = c ? xf[lid - 1] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (on)
            for (int q = 0; q < Q; q++) {
                const int k = k0 + q;
                const float d = dcv + (q == 0 ? 0.0f : LLD(rc, 2, k));
                if (k <= M) LC(rc, 2, k) = d;
                dcv = d * LTR(k, T_DD);
            }
        int passing = on;                          /* HMMER's lane-crossing passes not ended yet */
        for (int jj = 1; jj < 4; jj++) {
            xf[lid] = dcv;
            barrier(CLK_LOCAL_MEM_FENCE);
            dcv = c ? xf[lid - 1] : 0.0f;
            barrier(CLK_LOCAL_MEM_FENCE);
            int cv = 0;
            if (passing)
                for (int q = 0; q < Q; q++) {
                    const int k = k0 + q;
                    const float old = LLD(rc, 2, k);
                    const float sv = dcv + old;
                    cv = cv | (sv > old);
                    if (k <= M) LC(rc, 2, k) = sv;
                    dcv = dcv * LTR(k, T_DD);
                }
            /* M >= 100: a pass that changed no D in any lane is the last (HMMER's early end) */
            xi[lid] = cv;
            barrier(CLK_LOCAL_MEM_FENCE);
            const int any_cv = xi[g0] | xi[g0 + 1] | xi[g0 + 2] | xi[g0 + 3];
            barrier(CLK_LOCAL_MEM_FENCE);
            if (M >= 100 && !any_cv) passing = 0;
        }
        if (on)
            for (int q = 0; q < Q; q++) xEv = LLD(rc, 2, k0 + q) + xEv;
        xf[lid] = xEv;
        barrier(CLK_LOCAL_MEM_FENCE);
        xE = (xf[g0] + xf[g0 + 1]) + (xf[g0 + 2] + xf[g0 + 3]);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (on) {
            xN = xN * nloop;
            xC = xC * nloop + xE * emove;
            xJ = xJ * nloop + xE * eloop;
            xB = xJ * nmove + xN * nmove;
            const long xr = x0 + (long) i * NX;
            if (xE > 1.0e4f) {
                xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
                const float sc = inv_as_hmmer(xE);
                for (int q = 0; q < Q; q++) {    /* the lane's own cells (those past M are zero) */
                    const int k = k0 + q;
                    if (k <= M) { LC(rc, 0, k) = LC(rc, 0, k) * sc; LC(rc, 1, k) = LC(rc, 1, k) * sc;
                                  LC(rc, 2, k) = LC(rc, 2, k) * sc; }
                }
                if (c == 0) p[xr + XSCALE] = xE;
                totscale = ADD_LOG_AS_HMMER(totscale, xE);
                xE = 1.0f;
            } else if (c == 0) {
                p[xr + XSCALE] = 1.0f;
            }
            if (c == 0) {
                p[xr + XE] = xE; p[xr + XN] = xN; p[xr + XJ] = xJ;
                p[xr + XB] = xB; p[xr + XC] = xC;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);   /* the row, before the next reads its node c Q */
    }
    if (live && c == 0) info[j] = (float4) (ADD_LOG_AS_HMMER(totscale, xC * nmove), 0.0f, 0.0f, 0.0f);
#undef LEM
#undef LTR
#undef LLD
#undef LC
}
#endif


/* ---------------------------------------------------------------------------------------------
 * region_forward_wide: region_forward_lanes' matrix with a work-group (G >= 4 work-items) per job.
 * Of a row's striped Forward, the M and I cells and the first D values (M(k-1) tMD(k-1) inside a
 * lane, 0 at a lane's first node) are each one float expression of the previous row: computed for
 * every node at once, node k by work-item (k - 1) mod G.  What is a chain in HMMER's order is walked
 * one lane (striped vector component) per work-item, as region_forward_lanes walks it:
 *   - the D->D chain of HMMER's first pass, D(q) = c + D(q), c = D(q) tDD(q), by work-items 0..3,
 *     and beside it the lane's sum of its M cells (q ascending), by work-items 4..7 (with fewer than
 *     8 work-items, by 0..3 before their chains): the same loop, the sum's step being c = (c + M(q)) 1;
 *   - each lane-crossing pass: its carry, c = c tDD(q), is a chain of products alone (work-items
 *     0..3 write it per node); what it adds, D(q) = c(q) + D(q), and whether that changed a D (HMMER's
 *     early end for M >= 100), is one expression per node, taken by every work-item;
 *   - the lane's sum of E continued with its D cells (q ascending) by the work-item holding its M
 *     sum, and E = (a0 + a1) + (a2 + a3).
 * The chains' operands are in local memory (`row`: 3 x 4 Q floats, Q of the launch's longest model: the
 * row's M cells (then a pass's carries), its D cells and the model's tDD; the host launches
 * region_forward_lanes where they do not fit), so a chain step waits on local memory, not on a global
 * store made by another work-item; the D cells are stored to the matrix when the chains end, rescaled
 * where the row is.  The same floats as region_forward_lanes and envelope's mode 0; the same arguments
 * and outputs, and `row`.  Job = the group number, reversed (largest first).  (No barrier sits in a
 * branch.)
 * --------------------------------------------------------------------------------------------- */
#if !defined(HMMC_PART) || HMMC_PART == 0
__kernel void region_forward_wide(
    ENVELOPE_JOB_ARGS, __local float *row)
{
    __local float xf[4], xs[4], xend[4];
    __local int xi[3];
    const int lid = (int) get_local_id(0), G = (int) get_local_size(0);
    const int j = (int) get_num_groups(0) - 1 - (int) get_group_id(0);   /* largest first */
    if (j >= n_jobs) return;                       /* (the whole group: no barrier is skipped by part of it) */
    const int c = lid & 3;                         /* the lane of this work-item's chains */
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int L = job_len[j];
    __global const uchar *x = dsq + seq_off[s] + job_i[j] - 1;
    __global const float *msc_m = msc + msc_off[m] * 4;
    __global const float *tsc_m = tsc + tsc_off[m] * 4;
    const float4 xfm = job_xfm[j];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *p = scr + scr_off[j];
    const int exs = (mode & 2) ? 4 : W, ews = (mode & 2) ? 4 * KP : 4;   /* emission table layout */
    const long mrow = 3 * W, x0 = (long) (L + 1) * 3 * W;
    const int q0 = c * Q;                          /* the lane's first node, 0-based */
    const int nq = 4 * Q;
    const int chain = lid < 4 || (G >= 8 && lid < 8);   /* this work-item walks a chain of the first pass */
    const int dchain = lid < 4;                    /* ... the D->D chain (else the sum of the M cells) */
    const int esum = G >= 8 ? (lid >= 4 && lid < 8) : lid < 4;   /* it holds lane c's sum of E */
    /* the current row's M cells (then a pass's carries) and D cells of the 4 Q lane nodes (0 past M), and tDD */
    __local float *rm = row, *rd = row + nq, *tdd = row + 2 * nq;
#define LC(r, st, k) p[(r) + (long) (st) * W + (k) - 1]
#define LLD(r, st, k) ((k) <= M ? LC(r, st, k) : 0.0f)
#define LTR(k, t) ((k) <= M ? TR(tsc_m, k, t) : 0.0f)
#define LEM(k) ((k) <= M ? er[(((k) - 1) >> 2) * ews + (((k) - 1) & 3)] : 0.0f)
    for (int q = lid; q < 3 * W; q += G) p[q] = 0.0f;
    for (int k = 1 + lid; k <= nq; k += G) tdd[k - 1] = LTR(k, T_DD);
    if (lid == 0) {
        p[x0 + XE] = 0.0f; p[x0 + XN] = 1.0f; p[x0 + XJ] = 0.0f;
        p[x0 + XB] = nmove; p[x0 + XC] = 0.0f; p[x0 + XSCALE] = 1.0f;
    }
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f;
    float xB = nmove;
    float totscale = 0.0f;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    for (int i = 1; i <= L; i++) {
        const long rp = (long) (i - 1) * mrow, rc = (long) i * mrow;
        __global const float *er = msc_m + (int) x[i - 1] * exs;
        for (int k = M + 1 + lid; k <= W; k += G) { LC(rc, 0, k) = 0.0f; LC(rc, 1, k) = 0.0f; LC(rc, 2, k) = 0.0f; }
        if (lid == 0) { xi[0] = 0; xi[1] = 0; xi[2] = 0; }
        /* every node of the lanes (4 Q, those past M zero): M, I and the first D values */
        for (int k = 1 + lid; k <= nq; k += G) {
            const int q = (k - 1) % Q;
            const float mpv = k > 1 ? LLD(rp, 0, k - 1) : 0.0f, dpv = k > 1 ? LLD(rp, 2, k - 1) : 0.0f,
                        ipv = k > 1 ? LLD(rp, 1, k - 1) : 0.0f;
            float sv = xB * LTR(k, T_BM);
            sv = sv + mpv * LTR(k, T_MM);
            sv = sv + ipv * LTR(k, T_IM);
            sv = sv + dpv * LTR(k, T_DM);
            sv = sv * LEM(k);
            const float dcv = sv * LTR(k, T_MD);
            rm[k - 1] = k <= M ? sv : 0.0f;
            if (k <= M) {
                LC(rc, 0, k) = sv;
                const float iv = LLD(rp, 0, k) * LTR(k, T_MI);
                LC(rc, 1, k) = iv + LLD(rp, 1, k) * LTR(k, T_II);
            }
            if (q == 0) rd[k - 1] = 0.0f;
            if (q < Q - 1) rd[k] = k + 1 <= M ? dcv : 0.0f;
            else xend[(k - 1) / Q] = dcv;         /* the lane's last: right-shifted into the next lane */
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        float xEv = 0.0f, dcv = 0.0f;
        if (G < 8 && lid < 4)                      /* (fewer than 8 work-items: the M sum first) */
            for (int q = 0; q < Q; q++) xEv = xEv + rm[q0 + q];
        if (chain) {
            /* HMMER's first D->D pass (work-items 0..3) or the lane's sum of its M cells (4..7): one loop */
            __local float *src = dchain ? rd : rm;
            float acc = dchain && c ? xend[c - 1] : 0.0f;
            /* (four nodes' operands loaded before their steps: a step then waits on the step before,
               not on local memory) */
#define WIDE_STEP(k, v, t) { const float d = acc + (v); if (dchain) rd[k] = (k) < M ? d : 0.0f; acc = d * (t); }
            int q = 0;
            for (; q + 4 <= Q; q += 4) {
                const int k = q0 + q;              /* 0-based node */
                const float v0 = dchain && q == 0 ? 0.0f : src[k], v1 = src[k + 1], v2 = src[k + 2],
                            v3 = src[k + 3];
                const float t0 = dchain ? tdd[k] : 1.0f, t1 = dchain ? tdd[k + 1] : 1.0f,
                            t2 = dchain ? tdd[k + 2] : 1.0f, t3 = dchain ? tdd[k + 3] : 1.0f;
                WIDE_STEP(k, v0, t0) WIDE_STEP(k + 1, v1, t1) WIDE_STEP(k + 2, v2, t2) WIDE_STEP(k + 3, v3, t3)
            }
            for (; q < Q; q++) {
                const int k = q0 + q;
                WIDE_STEP(k, dchain && q == 0 ? 0.0f : src[k], dchain ? tdd[k] : 1.0f)
            }
#undef WIDE_STEP
            if (dchain) dcv = acc;
            else xEv = acc;
        }
        if (dchain) xf[c] = dcv;
        barrier(CLK_LOCAL_MEM_FENCE);
        int passing = 1;                           /* HMMER's lane-crossing passes not ended yet */
        for (int jj = 0; jj < 3; jj++) {
            /* the pass's carries (right shift of the lanes' last), a chain of products per lane, into rm */
            if (passing && dchain) {
                dcv = c ? xf[c - 1] : 0.0f;
                int q = 0;
                for (; q + 4 <= Q; q += 4) {
                    const int k = q0 + q;
                    const float t0 = tdd[k], t1 = tdd[k + 1], t2 = tdd[k + 2], t3 = tdd[k + 3];
                    rm[k] = dcv; dcv = dcv * t0;
                    rm[k + 1] = dcv; dcv = dcv * t1;
                    rm[k + 2] = dcv; dcv = dcv * t2;
                    rm[k + 3] = dcv; dcv = dcv * t3;
                }
                for (; q < Q; q++) {
                    const int k = q0 + q;
                    rm[k] = dcv;
                    dcv = dcv * tdd[k];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (passing) {                         /* what the carries add, and whether it changed a D */
                int cv = 0;
                for (int k = lid; k < nq; k += G) {
                    const float old = rd[k];
                    const float sv = rm[k] + old;
                    cv = cv | (sv > old);
                    rd[k] = k < M ? sv : 0.0f;
                }
                if (cv) xi[jj] = 1;
                if (dchain) xf[c] = dcv;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            /* M >= 100: a pass that changed no D in any lane is the last (HMMER's early end) */
            if (M >= 100 && !xi[jj]) passing = 0;
        }
        if (esum) {
            int q = 0;
            for (; q + 4 <= Q; q += 4) {
                const float v0 = rd[q0 + q], v1 = rd[q0 + q + 1], v2 = rd[q0 + q + 2], v3 = rd[q0 + q + 3];
                xEv = v0 + xEv; xEv = v1 + xEv; xEv = v2 + xEv; xEv = v3 + xEv;
            }
            for (; q < Q; q++) xEv = rd[q0 + q] + xEv;
            xs[c] = xEv;
        }
        barrier(CLK_LOCAL_MEM_FENCE);              /* (the lanes' D cells, before they are stored) */
        xE = (xs[0] + xs[1]) + (xs[2] + xs[3]);
        xN = xN * nloop;
        xC = xC * nloop + xE * emove;
        xJ = xJ * nloop + xE * eloop;
        xB = xJ * nmove + xN * nmove;
        const long xr = x0 + (long) i * NX;
        if (xE > 1.0e4f) {
            xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
            const float sc = inv_as_hmmer(xE);
            for (int k = 1 + lid; k <= M; k += G) {   /* (the node's M and I cells: this work-item's own) */
                LC(rc, 0, k) = LC(rc, 0, k) * sc; LC(rc, 1, k) = LC(rc, 1, k) * sc; LC(rc, 2, k) = rd[k - 1] * sc;
            }
            if (lid == 0) p[xr + XSCALE] = xE;
            totscale = ADD_LOG_AS_HMMER(totscale, xE);
            xE = 1.0f;
        } else {
            for (int k = 1 + lid; k <= M; k += G) LC(rc, 2, k) = rd[k - 1];
            if (lid == 0) p[xr + XSCALE] = 1.0f;
        }
        if (lid == 0) {
            p[xr + XE] = xE; p[xr + XN] = xN; p[xr + XJ] = xJ;
            p[xr + XB] = xB; p[xr + XC] = xC;
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);   /* the row, before the next reads it */
    }
    if (lid == 0) info[j] = (float4) (ADD_LOG_AS_HMMER(totscale, xC * nmove), 0.0f, 0.0f, 0.0f);
#undef LEM
#undef LTR
#undef LLD
#undef LC
}
#endif

/* ---------------------------------------------------------------------------------------------
 * envelope_wg: the envelope kernel's full mode (mode & 1) with a work-group per job.
 *
 * The same results as `envelope`, bit for bit: every cell is the same float expression of the
 * same operands (FP_CONTRACT is off, so a product stored and added later rounds as when it is
 * added at once), and every order-dependent sum or chain (the D->D chains, the E and B lane
 * sums, the null2 column and lane sums) is taken in the same order as there.  What is
 * independent across the nodes of a row (M and I cells, decoding, the column sums) is spread
 * over the group's work-items, word q (4 nodes) to work-item q mod G, so a warp reads and
 * writes consecutive words; what is a chain across the nodes of a row is walked from operands
 * the others left in local memory (the model's tDD among them, loaded once), one HMMER lane
 * (striped vector component) by each of work-items 0..3, each chain's operands loaded four nodes
 * ahead of its steps:
 *   Forward   the first pass D(k) = M(k-1) tMD(k-1) + D(k-1) tDD(k-1), beside it (work-items
 *             4..7) the lane's sum of its M cells, after the passes the sum of its D cells (xE);
 *   Backward  the first pass D(k) = M'(k+1) tDM(k+1) + (D(k+1) tDD(k) + xE), the lane sums of the
 *             next B (their terms made by every work-item); rows L and 0 whole, by work-item 0;
 *   both      in the lane-crossing passes only the carry is a chain (c = c tDD: products alone,
 *             written per node), which every work-item adds to its nodes' D (Forward: noting
 *             whether a D grew, HMMER's early end for M >= 100);
 *   OA        D(k) = max(masked M(k-1), masked D(k-1)) and the row's maximum xE as a scan over
 *             segments of nodes, one a work-item (max is exact in any order);
 * and the specials by work-item 0.  The OA traceback is work-item 0's walk, as in `envelope`.
 * (No barrier sits in a branch: PoCL 3.1 computed wrong values with one behind a condition that
 * was the same for the whole group.)
 *
 * Scratch: the full layout of `envelope` with ws = 1 (each job's rows contiguous at
 * scr + scr_off[job]).  Local memory: lw, five rows of 4 Q = max(8, W) floats and 8 floats
 * (envelopes.env_wg_local_bytes) for the launch's largest W; at most ENVELOPE_WG_MAX work-items.
 * Job = the group number, reversed (largest jobs, sorted last, start first).
 * --------------------------------------------------------------------------------------------- */
#define WG_SYNC() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define ENVELOPE_WG_MAX 64   /* the most work-items a group (the OA scan's segments) */
/* the OA scan by warp shuffles where there are (one warp a group: the host's ENVELOPE_WG, 32), or
 * where asked for (HMMC_OA_WARP_SCAN: the same steps through local memory, tests on other devices) */
#if defined(HMMC_PTX_SHFL) || defined(HMMC_OA_WARP_SCAN)
#define OA_WARP_SCAN 1
#endif

#if !defined(HMMC_PART) || HMMC_PART == 0
#include "zero_words.h"

/* acc + v[0] + v[1] + ... + v[n-1], added in that order (four operands loaded ahead) */
inline float wg_lane_sum(__local const float *v, const int n, float acc)
{
    int q = 0;
    for (; q + 4 <= n; q += 4) {
        const float v0 = v[q], v1 = v[q + 1], v2 = v[q + 2], v3 = v[q + 3];
        acc = acc + v0; acc = acc + v1; acc = acc + v2; acc = acc + v3;
    }
    for (; q < n; q++) acc = acc + v[q];
    return acc;
}

__kernel void envelope_wg(
    ENVELOPE_JOB_ARGS, __local float4 *lw)
{
    __local float lane_f[4];   /* the chains' lane carries and sums */
    __local int lane_i[4];     /* the Forward passes' "changed" flags */
    __local float seg_c[ENVELOPE_WG_MAX], seg_x[ENVELOPE_WG_MAX];   /* the OA scan's segments */
    __local int seg_p[ENVELOPE_WG_MAX];
    const int j = (int) (get_num_groups(0) - 1 - get_group_id(0));
    if (j >= n_jobs) return;   /* the whole group */
    const int lid = (int) get_local_id(0), G = (int) get_local_size(0);
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int Q4 = W >> 2;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int Ld = job_len[j];
    __global const uchar *x = dsq + seq_off[s] + (job_i[j] - 1);
    __global const float *e = msc + msc_off[m] * 4;
    __global const float *t = tsc + tsc_off[m] * 4;
    __global const float4 *t4 = (__global const float4 *) t;
    const float4 xfm = job_xfm[j];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *p = scr + scr_off[j];
    const int exs = (mode & 2) ? 4 : W, ews = (mode & 2) ? 4 * KP : 4;
    const int R = 6 * W + 24;
    const long B0 = 3 * W, fx0 = 6 * W, bx0 = fx0 + NX, px0 = bx0 + NX, ox0 = px0 + NX;
#define FC(i, st, k) p[(long) (i) * R + (st) * W + (k) - 1]
#define BC(i, st, k) p[(long) (i) * R + B0 + (st) * W + (k) - 1]
#define FX(i, c) p[(long) (i) * R + fx0 + (c)]
#define BX(i, c) p[(long) (i) * R + bx0 + (c)]
#define PX(i, c) p[(long) (i) * R + px0 + (c)]
#define OX(i, c) p[(long) (i) * R + ox0 + (c)]
#define FROW(i) ((__global float4 *) (p + (long) (i) * R))
#define BROW(i) ((__global float4 *) (p + (long) (i) * R + B0))
#define LW4(a, q) (((__local float4 *) (a))[q])

#include "wg_fb.h"

    /* ---- p7_Decoding: B <- posterior probabilities (D cells 0); each work-item its own words ---- */
    float scaleproduct = inv_as_hmmer(BX(0, XN));
    {
        __global float4 *b = BROW(0);
        for (int q = lid; q < 3 * Q4; q += G) b[q] = (float4) (0.0f);
    }
    if (lid == 0) {
        PX(0, XE) = 0.0f; PX(0, XN) = 0.0f; PX(0, XJ) = 0.0f; PX(0, XC) = 0.0f; PX(0, XB) = 0.0f;
        PX(0, XSCALE) = 1.0f;
    }
    for (int i = 1; i <= Ld; i++) {
        __global float4 *f = FROW(i);
        __global float4 *b = BROW(i);
        const float totr = scaleproduct * FX(i, XSCALE);
        for (int q = lid; q < Q4; q += G) {
            const float4 bm = (f[q] * b[q]) * totr, bi = (f[Q4 + q] * b[Q4 + q]) * totr;
            b[q] = bm;
            b[2 * Q4 + q] = (float4) (0.0f);
            b[Q4 + q] = bi;
            /* null2's column sums (below) as the rows are made, in row order: la M, lb I (each work-item
               its own words, the same words as there) */
            if (i == 1) { LW4(la, q) = bm; LW4(lb, q) = bi; }
            else { LW4(la, q) = bm + LW4(la, q); LW4(lb, q) = bi + LW4(lb, q); }
        }
        if (lid == 0) {
            decode_specials(p, 1, R, W, i, nloop, scaleproduct);
        }
        if (own) scaleproduct = scaleproduct * (FX(i, XSCALE) / BX(i, XSCALE));
    }
    if (isinf(scaleproduct)) {   /* the same value in every work-item */
        if (lid == 0) info[j] = (float4) (bc[4], 0.0f, 0.0f, 1.0f);
        return;
    }
    WG_SYNC();

    /* ---- p7_Null2_ByExpectation, up to the odds (workspace: row 0 of F) ---- */
    {
        __global float *n2 = null2 + null2_off[j];
        __global float4 *acc = FROW(0);
#ifdef cl_khr_fp64
        const float norm = (float) (1.0 / (double) (float) Ld);
#else
        const float norm = 1.0f / (float) Ld;
#endif
        for (int q = lid; q < Q4; q += G) {   /* the column sums over the rows (the decoding's la, lb) */
            acc[q] = LW4(la, q) * norm; acc[Q4 + q] = LW4(lb, q) * norm;
        }
        if (lid == 0) {
            float aN = PX(1, XN), aC = PX(1, XC), aJ = PX(1, XJ);
            for (int i = 2; i <= Ld; i++) { aN = aN + PX(i, XN); aC = aC + PX(i, XC); aJ = aJ + PX(i, XJ); }
            aN = aN * norm; aC = aC * norm; aJ = aJ * norm;
            bc[3] = (aN + aC) + aJ;
        }
        WG_SYNC();
        const float xfactor = bc[3];
        for (int r = lid; r < 20; r += G)
            n2[r] = null2_residue(p, 1, W, M, Q, e + r * exs, ews, xfactor);
        WG_SYNC();
    }

    /* ---- p7_OptimalAccuracy: F <- OA scores ---- */
    const float NEG = -INFINITY;
    {
        __global float4 *f0 = FROW(0);
        for (int q = lid; q < 3 * Q4; q += G) f0[q] = (float4) (NEG);
    }
    if (lid == 0) {
        OX(0, XE) = NEG; OX(0, XN) = 0.0f; OX(0, XJ) = NEG; OX(0, XB) = 0.0f; OX(0, XC) = NEG;
        OX(0, XSCALE) = 1.0f;
    }
    WG_SYNC();
    for (int i = 1; i <= Ld; i++) {
        __global float4 *prv = FROW(i - 1);
        __global float4 *cur = FROW(i);
        __global float4 *pp = BROW(i);
        const float xBv = OX(i - 1, XB);
        for (int q = lid; q < Q4; q += G) {   /* M and I cells; masked M and M for work-item 0 */
            const float4 om = prv[q], oi = prv[Q4 + q], od = prv[2 * Q4 + q];
            float mp = NEG, ip = NEG, dp = NEG;
            if (q > 0) { mp = prv[q - 1].w; ip = prv[Q4 + q - 1].w; dp = prv[2 * Q4 + q - 1].w; }
            const float4 ppm = pp[q], ppi = pp[Q4 + q];
            __global const float4 *tq = t4 + q * 8;
            const float4 tBM = tq[T_BM], tMM = tq[T_MM], tIM = tq[T_IM], tDM = tq[T_DM];
            const float4 tMD = tq[T_MD], tMI = tq[T_MI], tII = tq[T_II];
            const float4 pm = (float4) (mp, om.x, om.y, om.z);
            const float4 pi = (float4) (ip, oi.x, oi.y, oi.z);
            const float4 pd = (float4) (dp, od.x, od.y, od.z);
            float4 sv, iv, am;
#define OA_WG_NODE(c) {                                                             \
                float sv_ = (tBM.c > 0.0f) ? xBv : 0.0f;                            \
                sv_ = fmax(sv_, (tMM.c > 0.0f) ? pm.c : 0.0f);                      \
                sv_ = fmax(sv_, (tIM.c > 0.0f) ? pi.c : 0.0f);                      \
                sv_ = fmax(sv_, (tDM.c > 0.0f) ? pd.c : 0.0f);                      \
                sv_ = sv_ + ppm.c;                                                  \
                float iv_ = (tMI.c > 0.0f) ? om.c : 0.0f;                           \
                iv_ = fmax(iv_, (tII.c > 0.0f) ? oi.c : 0.0f);                      \
                sv.c = sv_; iv.c = iv_ + ppi.c;                                     \
                am.c = (tMD.c > 0.0f) ? sv_ : 0.0f;                                 \
            }
            OA_WG_NODE(x) OA_WG_NODE(y) OA_WG_NODE(z) OA_WG_NODE(w)
#undef OA_WG_NODE
            cur[q] = sv; cur[Q4 + q] = iv;
            LW4(la, q) = am; LW4(lb, q) = sv;
        }
        WG_SYNC();
        {   /* the D chain D(k) = max(masked M(k-1), masked D(k-1)) and the row's maximum: a scan over
               segments of nodes, one a work-item (max is exact in any order) */
            const int S = (W + G - 1) / G, n0 = min(W, lid * S), n1 = min(W, n0 + S);
            int pass = 1;          /* the segment's map: x -> max(cst, x), or cst where it passes no D */
            float cst = NEG;
            for (int n = n0; n < n1; n++) {
                if (tdd[n] > 0.0f) cst = fmax(la[n], cst);
                else { pass = 0; cst = fmax(la[n], 0.0f); }
            }
#ifdef OA_WARP_SCAN
            /* one warp (G = VW_LANES = ENVELOPE_WG): the segments' maps composed by a scan over the
               lanes, lane l's map becoming lanes 0..l's in turn, (p, c) after (p', c') being
               (p & p', p ? max(c, c') : c); the value entering segment l is lane l-1's c (its map
               applied to -inf), lane 0's -inf; the row's maximum a butterfly */
            for (int d = 1; d < VW_LANES; d <<= 1) {
                const float oc = fw_up(cst, d, lid, seg_p);
                const int op = vw_up(pass, d, lid, seg_p);
                if (lid >= d) { cst = pass ? fmax(cst, oc) : cst; pass = pass & op; }
            }
            float dv = fw_up(cst, 1, lid, seg_p), mx = NEG;
            if (lid == 0) dv = NEG;
#else
            seg_c[lid] = cst; seg_p[lid] = pass;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {
                float xv = NEG;
                for (int g = 0; g < G; g++) { seg_x[g] = xv; xv = seg_p[g] ? fmax(seg_c[g], xv) : seg_c[g]; }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            float dv = seg_x[lid], mx = NEG;
#endif
            for (int n = n0; n < n1; n++) {
                lc[n] = dv;
                const float b_ = (tdd[n] > 0.0f) ? dv : 0.0f;
                mx = fmax(mx, fmax(lb[n], dv));
                dv = fmax(la[n], b_);
            }
#ifdef OA_WARP_SCAN
            mx = fw_max(mx, lid, seg_p);
            if (lid == 0) oa_specials(p, 1, R, W, i, mx, xfm);
#else
            seg_c[lid] = mx;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {
                float xEo = NEG;
                for (int g = 0; g < G; g++) xEo = fmax(xEo, seg_c[g]);
                oa_specials(p, 1, R, W, i, xEo, xfm);
            }
#endif
        }
        WG_SYNC();
        for (int q = lid; q < Q4; q += G) cur[2 * Q4 + q] = LW4(lc, q);
        WG_SYNC();
    }
    if (lid != 0) return;
    const float envsc = bc[4];
    const float oasc = OX(Ld, XC);
    const int nt = oa_trace(p, 1, R, W, M, Q, Ld, t, xfm, trace + trace_off[j], trace_pp + trace_off[j]);
    info[j] = (float4) (envsc, oasc, (float) nt, 0.0f);
    oa_display(trace + trace_off[j], trace_pp + trace_off[j], nt, Ld + M + 8, disp + 2 * j, disp + 2 * n_jobs, cols);
#undef FC
#undef BC
#undef FX
#undef BX
#undef PX
#undef OX
#undef FROW
#undef BROW
#undef LW4
}

/* ---------------------------------------------------------------------------------------------
 * fb_parser_wg: fb_parser's outputs bit for bit (the Forward and Backward parsers in HMMER's
 * striped order, p7_DomainDecoding and the region loop) with a work-group per job: the Forward
 * and Backward rows as envelope_wg computes them (wg_fb.h), two rows in turn in the job's
 * scratch; the residue records (16 floats each: Forward specials, Backward specials, btot,
 * etot, mocc) after them, as fb_parser's; the decoding and the region loop by work-item 0.
 *
 * Scratch: 6 W floats (two rows of M, I, D) then the records, contiguous per job at
 * scr + scr_off[job].  Local memory: as envelope_wg (envelopes.env_wg_local_bytes).
 * --------------------------------------------------------------------------------------------- */
__kernel void fb_parser_wg(FB_PARSER_ARGS, __local float4 *lw)
{
    __local float lane_f[4];
    __local int lane_i[4];
    const int j = j0 + (int) (get_num_groups(0) - 1 - get_group_id(0));   /* largest jobs first */
    if (j >= n_jobs) return;   /* the whole group */
    const int lid = (int) get_local_id(0), G = (int) get_local_size(0);
    const int s = job[j].x, m = job[j].y;
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int Q4 = W >> 2;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int Ld = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float *e = msc + msc_off[m] * 4;
    __global const float *t = tsc + tsc_off[m] * 4;
    __global const float4 *t4 = (__global const float4 *) t;
    const float4 xfm = seq_xfm[s];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *p = scr + scr_off[j];
    __global float *rp = p + 6 * (long) W;   /* the residue records */
    const int exs = 4, ews = 4 * KP;         /* node-major emission table */
#define FROW(i) ((__global float4 *) (p + (long) ((i) & 1) * 3 * W))
#define BROW(i) FROW(i)
#define BC(i, st, k) p[(long) ((i) & 1) * 3 * W + (st) * W + (k) - 1]
#define FX(i, c) rp[(long) (i) * REC + (c)]
#define BX(i, c) rp[(long) (i) * REC + R_BX + (c)]
#define LW4(a, q) (((__local float4 *) (a))[q])
#include "wg_fb.h"
    if (lid == 0) domain_decoding(rp, 1, 0, Ld, nloop, own, bc[4], region_cap, out + (long) j * (6 + 2 * region_cap));
#undef FROW
#undef BROW
#undef BC
#undef FX
#undef BX
#undef LW4
}
#endif

/* fb_parser_warp<C>: fb_parser's outputs (to float rounding), one warp per job, C nodes per lane in
 * registers (see fb_parser_warp.h and warp.h); C <= 16 (kernel_table.DOMAIN_WARP_MAX_NODES). */
#if !defined(HMMC_PART) || HMMC_PART == 1
#define PW_C 4
#define PW_NAME fb_parser_warp4
#include "fb_parser_warp.h"
#undef PW_C
#undef PW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 2
#define PW_C 8
#define PW_NAME fb_parser_warp8
#include "fb_parser_warp.h"
#undef PW_C
#undef PW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 3
#define PW_C 12
#define PW_NAME fb_parser_warp12
#include "fb_parser_warp.h"
#undef PW_C
#undef PW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 4
#define PW_C 16
#define PW_NAME fb_parser_warp16
#include "fb_parser_warp.h"
#undef PW_C
#undef PW_NAME
#endif

/* envelope_warp<C>: envelope_wg's outputs (to float rounding), one warp per envelope, C nodes per
 * lane in registers (see envelope_warp.h and warp.h); C <= 16 (kernel_table.DOMAIN_WARP_MAX_NODES). */
#if !defined(HMMC_PART) || HMMC_PART == 5
#define EW_C 4
#define EW_NAME envelope_warp4
#include "envelope_warp.h"
#undef EW_C
#undef EW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 6
#define EW_C 8
#define EW_NAME envelope_warp8
#include "envelope_warp.h"
#undef EW_C
#undef EW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 7
#define EW_C 12
#define EW_NAME envelope_warp12
#include "envelope_warp.h"
#undef EW_C
#undef EW_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 8
#define EW_C 16
#define EW_NAME envelope_warp16
#include "envelope_warp.h"
#undef EW_C
#undef EW_NAME
#endif


/* region_forward_warp<C>: the envelope kernel's Forward-only mode (mode 0 or 2; its layout and
 * info), one warp per job, C nodes per lane in registers (see region_forward_warp.h). */
#if !defined(HMMC_PART) || HMMC_PART == 9
#define RF_C 4
#define RF_NAME region_forward_warp4
#include "region_forward_warp.h"
#undef RF_C
#undef RF_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 10
#define RF_C 8
#define RF_NAME region_forward_warp8
#include "region_forward_warp.h"
#undef RF_C
#undef RF_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 11
#define RF_C 12
#define RF_NAME region_forward_warp12
#include "region_forward_warp.h"
#undef RF_C
#undef RF_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 12
#define RF_C 16
#define RF_NAME region_forward_warp16
#include "region_forward_warp.h"
#undef RF_C
#undef RF_NAME
#endif
#if !defined(HMMC_PART) || HMMC_PART == 13
#define RF_C 24
#define RF_NAME region_forward_warp24
#define RF_TGLOBAL 1
#include "region_forward_warp.h"
#undef RF_C
#undef RF_NAME
#undef RF_TGLOBAL
#endif
#if !defined(HMMC_PART) || HMMC_PART == 14
#define RF_C 32
#define RF_NAME region_forward_warp32
#define RF_TGLOBAL 1
#include "region_forward_warp.h"
#undef RF_C
#undef RF_NAME
#undef RF_TGLOBAL
#endif

/* domains.cl: HMMER's post-filter stages for cascade survivors, float32.
 *
 *   fb_parser      Forward and Backward parsers (multihit, length L) over a
 *                  whole target and the posterior domain decoding
 *                  (p7_DomainDecoding): btot, etot, mocc per residue.
 *   envelope       For one envelope i..j: Forward and Backward with full
 *                  matrices (unihit, length model of the whole target),
 *                  posterior decoding (p7_Decoding), null2 by expectation
 *                  (p7_Null2_ByExpectation, before its degeneracy
 *                  averaging), optimal accuracy (p7_OptimalAccuracy) and
 *                  its traceback (p7_OATrace).  With mode 0 it stops after
 *                  the Forward matrix, which the host samples from for a
 *                  multi-domain region (p7_StochasticTrace).
 *
 * The arithmetic follows HMMER's SSE implementation (impl_sse/fwdback.c,
 * decoding.c, null2.c, optacc.c) operation by operation, except the order
 * of a few sums inside a row (HMMER's striped D->D passes), so values agree
 * to float rounding.  Where HMMER's *choices* depend on its striped node
 * order (ties in the OA traceback's E state, the lane sums of null2), the
 * striped order is reproduced exactly: node k sits in lane (k-1)/Q of
 * vector (k-1)%Q, Q = max(2, ceil(M/4)).
 *
 * One work-item per job; matrices live in global memory, row-major:
 *   cell (i, state s, node k) at  mat[(i * 3 + s) * W + (k - 1)],  W = 4 * ceil(M/4)
 *   s = 0 M, 1 I, 2 D;  specials xmx[i * 6 + {E N J B C SCALE}].
 * Tables as in hmmcascade.h (float odds, float probabilities, 4-node words
 * read here as plain float arrays: node k of transition t at
 * tsc[((k-1)/4) * 32 + t * 4 + (k-1)%4], emission (x, k) at msc[x * W + k-1]).
 */
#include "hmmcascade.h"

#define XE 0
#define XN 1
#define XJ 2
#define XB 3
#define XC 4
#define XSCALE 5
#define NX 6

/* trace state codes (HMMER's p7T_ numbering) */
#define ST_M 1
#define ST_D 2
#define ST_I 3
#define ST_S 4
#define ST_N 5
#define ST_B 6
#define ST_E 7
#define ST_C 8
#define ST_T 9
#define ST_J 10

#define TR(tsc, k, t) ((tsc)[(((k) - 1) >> 2) * 32 + (t) * 4 + (((k) - 1) & 3)])

/* HMMER divides by a float scale through double 1.0/x rounded to float. */
inline float inv_as_hmmer(float x)
{
#ifdef cl_khr_fp64
    return (float) (1.0 / (double) x);
#else
    return 1.0f / x;
#endif
}

/* Sparse rescaling of one DP row (M, I, D cells) by a factor > 1, as HMMER: cells * (1/sc). */
inline void rescale_row(__global float *row, const int n, const float sc)
{
    const float s = inv_as_hmmer(sc);
    for (int k = 0; k < n; k++) row[k] = row[k] * s;
}

/* Forward (p7_Forward / p7_ForwardParser) over dsq[0..L-1].
 * full != 0: rows 0..L of mat are written; else mat holds one row, updated in place.
 * xmx gets rows 0..L of specials.  Returns the score in nats. */
float forward_pass(__global const uchar *dsq, const int L, const int M, const int W,
                   __global const float *msc, __global const float *tsc,
                   const float4 xfm, /* N move, N loop, E move, E loop (J and C as N) */
                   __global float *mat, const int full, __global float *xmx)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global float *row = mat;
    for (int k = 0; k < 3 * W; k++) row[k] = 0.0f;
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xE = 0.0f;
    float xB = nmove;
    xmx[XE] = 0.0f; xmx[XN] = 1.0f; xmx[XJ] = 0.0f; xmx[XB] = xB; xmx[XC] = 0.0f; xmx[XSCALE] = 1.0f;
    float totscale = 0.0f;
    for (int i = 1; i <= L; i++) {
        __global float *prv = full ? mat + (long) (i - 1) * 3 * W : mat;
        __global float *cur = full ? mat + (long) i * 3 * W : mat;
        __global float *pm = prv, *pi = prv + W, *pd = prv + 2 * W;
        __global float *cm = cur, *ci = cur + W, *cd = cur + 2 * W;
        __global const float *e = msc + (int) dsq[i - 1] * W;
        float mprev = 0.0f, iprev = 0.0f, dprev = 0.0f;   /* row i-1, node k-1 */
        float sprev = 0.0f, dcur = 0.0f;                  /* row i, node k-1: M and D */
        float lm[4] = {0.0f, 0.0f, 0.0f, 0.0f}, ld[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int k = 1; k <= W; k++) {
            const float om = pm[k - 1], oi = pi[k - 1], od = pd[k - 1];
            float sv = xB * TR(tsc, k, T_BM);
            sv = sv + mprev * TR(tsc, k, T_MM);
            sv = sv + iprev * TR(tsc, k, T_IM);
            sv = sv + dprev * TR(tsc, k, T_DM);
            sv = sv * e[k - 1];
            /* D(i,k) from row i node k-1 */
            const float dv = (k == 1) ? 0.0f : sprev * TR(tsc, k - 1, T_MD) + dcur * TR(tsc, k - 1, T_DD);
            const float iv = om * TR(tsc, k, T_MI) + oi * TR(tsc, k, T_II);
            mprev = om; iprev = oi; dprev = od;
            cm[k - 1] = sv; ci[k - 1] = iv; cd[k - 1] = dv;
            lm[(k - 1) & 3] = lm[(k - 1) & 3] + sv;
            ld[(k - 1) & 3] = ld[(k - 1) & 3] + dv;
            sprev = sv; dcur = dv;
        }
        xE = ((lm[0] + lm[1]) + (lm[2] + lm[3])) + ((ld[0] + ld[1]) + (ld[2] + ld[3]));
        xN = xN * nloop;
        xC = xC * nloop + xE * emove;
        xJ = xJ * nloop + xE * eloop;
        xB = xJ * nmove + xN * nmove;
        __global float *xr = xmx + i * NX;
        if (xE > 1.0e4f) {
            xN = xN / xE; xC = xC / xE; xJ = xJ / xE; xB = xB / xE;
            rescale_row(cur, 3 * W, xE);
            xr[XSCALE] = xE;
            totscale = totscale + LOG_AS_HMMER(xE);
            xE = 1.0f;
        } else {
            xr[XSCALE] = 1.0f;
        }
        xr[XE] = xE; xr[XN] = xN; xr[XJ] = xJ; xr[XB] = xB; xr[XC] = xC;
    }
    return totscale + LOG_AS_HMMER(xC * nmove);
}

/* Backward (p7_Backward / p7_BackwardParser), scaled by the Forward's factors
 * (or its own when they do not suffice).  full: rows 0..L of mat; else one row.
 * Writes bxmx rows 0..L; returns has_own_scales. */
int backward_pass(__global const uchar *dsq, const int L, const int M, const int W,
                  __global const float *msc, __global const float *tsc, const float4 xfm,
                  __global const float *fxmx, __global float *mat, const int full,
                  __global float *bxmx)
{
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    int own = 0;
    __global float *cur = full ? mat + (long) L * 3 * W : mat;
    float xJ = 0.0f, xB = 0.0f, xN = 0.0f;
    float xC = nmove;
    float xE = xC * emove;
    {
        __global float *cm = cur, *ci = cur + W, *cd = cur + 2 * W;
        for (int k = 0; k < W; k++) { ci[k] = 0.0f; cm[k] = xE; cd[k] = xE; }
        float dnext = 0.0f;
        for (int k = M; k >= 1; k--) {   /* D(k) = xE + D(k+1) tDD(k) */
            cd[k - 1] = cd[k - 1] + dnext * TR(tsc, k, T_DD);
            dnext = cd[k - 1];
        }
        for (int k = M + 1; k <= W; k++) cd[k - 1] = cm[k - 1] = 0.0f;
        dnext = 0.0f;
        for (int k = M; k >= 1; k--) {
            cm[k - 1] = cm[k - 1] + dnext * TR(tsc, k, T_MD);
            dnext = cd[k - 1];
        }
        const float sc = fxmx[L * NX + XSCALE];
        if (sc > 1.0f) {
            xE = xE / sc; xN = xN / sc; xC = xC / sc; xJ = xJ / sc; xB = xB / sc;
            rescale_row(cur, 3 * W, sc);
        }
        __global float *xr = bxmx + L * NX;
        xr[XSCALE] = sc;
        xr[XE] = xE; xr[XN] = xN; xr[XJ] = xJ; xr[XB] = xB; xr[XC] = xC;
    }
    for (int i = L - 1; i >= 1; i--) {
        __global float *nxt = full ? mat + (long) (i + 1) * 3 * W : mat;
        cur = full ? mat + (long) i * 3 * W : mat;
        __global float *nm = nxt, *ni = nxt + W;
        __global float *cm = cur, *ci = cur + W, *cd = cur + 2 * W;
        __global const float *e = msc + (int) dsq[i] * W;   /* x_{i+1} */
        float mpv_next = 0.0f;   /* M(i+1,k+1) * e(k+1) */
        float xBl[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int k = M; k >= 1; k--) {
            const float ipv = ni[k - 1];
            const float mpk = nm[k - 1] * e[k - 1];
            const float tim = (k < M) ? TR(tsc, k + 1, T_IM) : 0.0f;
            const float tdm = (k < M) ? TR(tsc, k + 1, T_DM) : 0.0f;
            const float tmm = (k < M) ? TR(tsc, k + 1, T_MM) : 0.0f;
            ci[k - 1] = ipv * TR(tsc, k, T_II) + mpv_next * tim;
            cd[k - 1] = mpv_next * tdm;
            cm[k - 1] = ipv * TR(tsc, k, T_MI) + mpv_next * tmm;
            xBl[(k - 1) & 3] = xBl[(k - 1) & 3] + mpk * TR(tsc, k, T_BM);
            mpv_next = mpk;
        }
        for (int k = M + 1; k <= W; k++) ci[k - 1] = cd[k - 1] = cm[k - 1] = 0.0f;
        xB = (xBl[0] + xBl[1]) + (xBl[2] + xBl[3]);
        xC = xC * nloop;
        xJ = (xB * nmove) + (xJ * nloop);
        xN = (xB * nmove) + (xN * nloop);
        xE = (xC * emove) + (xJ * eloop);
        float dnext = 0.0f;
        for (int k = M; k >= 1; k--) {
            cd[k - 1] = cd[k - 1] + (dnext * TR(tsc, k, T_DD) + xE);
            dnext = cd[k - 1];
            cm[k - 1] = cm[k - 1] + xE;
        }
        dnext = 0.0f;
        for (int k = M; k >= 1; k--) {
            cm[k - 1] = cm[k - 1] + dnext * TR(tsc, k, T_MD);
            dnext = cd[k - 1];
        }
        if (xB > 1.0e16f) own = 1;
        float sc;
        if (own) sc = (xB > 1.0e4f) ? xB : 1.0f;
        else     sc = fxmx[i * NX + XSCALE];
        if (sc > 1.0f) {
            xE = xE / sc; xN = xN / sc; xJ = xJ / sc; xB = xB / sc; xC = xC / sc;
            rescale_row(cur, 3 * W, sc);
        }
        __global float *xr = bxmx + i * NX;
        xr[XSCALE] = sc;
        xr[XE] = xE; xr[XN] = xN; xr[XJ] = xJ; xr[XB] = xB; xr[XC] = xC;
    }
    /* row 0: only N and B */
    {
        __global float *nm = full ? mat + 3 * W : mat;
        __global const float *e = msc + (int) dsq[0] * W;
        float xBl[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int k = 1; k <= M; k++) {
            float mpv = nm[k - 1] * e[k - 1];
            mpv = mpv * TR(tsc, k, T_BM);
            xBl[(k - 1) & 3] = xBl[(k - 1) & 3] + mpv;
        }
        xB = (xBl[0] + xBl[1]) + (xBl[2] + xBl[3]);
        xN = (xB * nmove) + (xN * nloop);
        __global float *xr = bxmx;
        xr[XB] = xB; xr[XC] = 0.0f; xr[XJ] = 0.0f; xr[XN] = xN; xr[XE] = 0.0f; xr[XSCALE] = 1.0f;
        if (full) {
            __global float *r0 = mat;
            for (int k = 0; k < 3 * W; k++) r0[k] = 0.0f;
        }
    }
    return own;
}

/* Whole-target Forward + Backward parsers and p7_DomainDecoding.
 * Per job: scratch at scr + scr_off[j]: 2 rows (3W each) + 2 * (L+1) * 6 specials.
 * Output at dd + dd_off[j]: (L+1) * 3 floats: btot, etot, mocc; info[j]: fwd, bck score, own scales. */
__kernel void fb_parser(
    __global const uchar *dsq, __global const long *seq_off, __global const int *seq_len,
    __global const float4 *seq_xfm,
    __global const int *job_seq, __global const int *job_model, const int n_jobs,
    __global const float *msc, __global const long *msc_off,
    __global const float *tsc, __global const long *tsc_off, __global const int *model_M,
    __global float *scr, __global const long *scr_off,
    __global float *dd, __global const long *dd_off, __global float4 *info)
{
    const int j = get_global_id(0);
    if (j >= n_jobs) return;
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int L = seq_len[s];
    __global const uchar *x = dsq + seq_off[s];
    __global const float *e = msc + msc_off[m] * 4;
    __global const float *t = tsc + tsc_off[m] * 4;
    const float4 xfm = seq_xfm[s];
    __global float *frow = scr + scr_off[j];
    __global float *brow = frow + 3 * W;
    __global float *fx = brow + 3 * W;
    __global float *bx = fx + (L + 1) * NX;
    const float fsc = forward_pass(x, L, M, W, e, t, xfm, frow, 0, fx);
    const int own = backward_pass(x, L, M, W, e, t, xfm, fx, brow, 0, bx);
    __global float *out = dd + dd_off[j];
    float scaleproduct = inv_as_hmmer(bx[XN]);
    float btot = 0.0f, etot = 0.0f;
    out[0] = 0.0f; out[1] = 0.0f; out[2] = 0.0f;
    const float nloop = xfm.y;
    for (int i = 1; i <= L; i++) {
        btot = btot + (((fx[(i - 1) * NX + XB] * bx[(i - 1) * NX + XB]) * fx[(i - 1) * NX + XSCALE]) * scaleproduct);
        if (own) scaleproduct = scaleproduct * (fx[(i - 1) * NX + XSCALE] / bx[(i - 1) * NX + XSCALE]);
        etot = etot + (((fx[i * NX + XE] * bx[i * NX + XE]) * fx[i * NX + XSCALE]) * scaleproduct);
        float njcp = ((fx[(i - 1) * NX + XN] * bx[i * NX + XN]) * nloop) * scaleproduct;
        njcp = njcp + ((fx[(i - 1) * NX + XJ] * bx[i * NX + XJ]) * nloop) * scaleproduct;
        njcp = njcp + ((fx[(i - 1) * NX + XC] * bx[i * NX + XC]) * nloop) * scaleproduct;
        out[i * 3 + 0] = btot;
        out[i * 3 + 1] = etot;
#ifdef cl_khr_fp64
        out[i * 3 + 2] = (float) (1.0 - (double) njcp);
#else
        out[i * 3 + 2] = 1.0f - njcp;
#endif
    }
    info[j] = (float4) (fsc, LOG_AS_HMMER(bx[XN]), (float) own, isinf(scaleproduct) ? 1.0f : 0.0f);
}

/* Striped position of node k (1-based) for a model with Q vectors. */
inline int striped_rank(const int k, const int Q) { return ((k - 1) % Q) * 4 + (k - 1) / Q; }

/* Envelope job: see the file comment.
 * scratch per job: F matrix, fx, B matrix, bx, px, ox ((Ld+1) * 3W floats per matrix, (Ld+1) * 6 per specials).
 * out per job: n2 weights: [0..M-1] M weights, [M..2M-1] I weights, [2M] N+C+J factor ... see host.
 * tr per job: up to Ld + M + 8 entries of (state, k, i, pp) written from the end (T) backwards. */
__kernel void envelope(
    __global const uchar *dsq, __global const long *seq_off,
    __global const int *job_seq, __global const int *job_model,
    __global const int *job_i, __global const int *job_len, __global const float4 *job_xfm,
    const int n_jobs, const int mode,
    __global const float *msc, __global const long *msc_off,
    __global const float *tsc, __global const long *tsc_off, __global const int *model_M,
    __global float *scr, __global const long *scr_off,
    __global float *null2, __global const long *null2_off,
    __global int4 *trace, __global float *trace_pp, __global const long *trace_off,
    __global float4 *info)
{
    const int j = get_global_id(0);
    if (j >= n_jobs) return;
    const int s = job_seq[j], m = job_model[j];
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int Ld = job_len[j];
    __global const uchar *x = dsq + seq_off[s] + (job_i[j] - 1);
    __global const float *e = msc + msc_off[m] * 4;
    __global const float *t = tsc + tsc_off[m] * 4;
    const float4 xfm = job_xfm[j];
    const long msize = (long) (Ld + 1) * 3 * W;
    __global float *F = scr + scr_off[j];
    __global float *fx = F + msize;                 /* mode 0 needs only F and fx: a prefix */
    __global float *B = fx + (Ld + 1) * NX;
    __global float *bx = B + msize;
    __global float *px = bx + (Ld + 1) * NX;
    __global float *ox = px + (Ld + 1) * NX;

    const float envsc = forward_pass(x, Ld, M, W, e, t, xfm, F, 1, fx);
    if (mode == 0) { info[j] = (float4) (envsc, 0.0f, 0.0f, 0.0f); return; }
    const int own = backward_pass(x, Ld, M, W, e, t, xfm, fx, B, 1, bx);

    /* p7_Decoding: B <- posterior probabilities (D cells 0). */
    float scaleproduct = inv_as_hmmer(bx[XN]);
    const float nloop = xfm.y, eloop_cfg = xfm.w, emove_cfg = xfm.z, nmove = xfm.x;
    for (int k = 0; k < 3 * W; k++) B[k] = 0.0f;
    px[XE] = px[XN] = px[XJ] = px[XC] = px[XB] = 0.0f; px[XSCALE] = 1.0f;
    for (int i = 1; i <= Ld; i++) {
        __global float *f = F + (long) i * 3 * W;
        __global float *b = B + (long) i * 3 * W;
        const float totr = scaleproduct * fx[i * NX + XSCALE];
        for (int k = 0; k < W; k++) {
            b[k] = (f[k] * b[k]) * totr;
            b[2 * W + k] = 0.0f;
            b[W + k] = (f[W + k] * b[W + k]) * totr;
        }
        px[i * NX + XE] = 0.0f;
        px[i * NX + XN] = ((fx[(i - 1) * NX + XN] * bx[i * NX + XN]) * nloop) * scaleproduct;
        px[i * NX + XJ] = ((fx[(i - 1) * NX + XJ] * bx[i * NX + XJ]) * nloop) * scaleproduct;
        px[i * NX + XC] = ((fx[(i - 1) * NX + XC] * bx[i * NX + XC]) * nloop) * scaleproduct;
        px[i * NX + XB] = 0.0f;
        if (own) scaleproduct = scaleproduct * (fx[i * NX + XSCALE] / bx[i * NX + XSCALE]);
    }
    if (isinf(scaleproduct)) { info[j] = (float4) (envsc, 0.0f, 0.0f, 1.0f); return; }

    /* p7_Null2_ByExpectation, up to the odds: per-node posterior weights in the striped lane order. */
    {
        __global float *n2 = null2 + null2_off[j];
        __global float *acc = F;   /* row 0 of F is free workspace: W M weights, W I weights */
        __global float *b1 = B + 3 * W;
        for (int k = 0; k < W; k++) { acc[k] = b1[k]; acc[W + k] = b1[W + k]; }
        float aN = px[NX + XN], aC = px[NX + XC], aJ = px[NX + XJ];
        for (int i = 2; i <= Ld; i++) {
            __global float *b = B + (long) i * 3 * W;
            for (int k = 0; k < W; k++) { acc[k] = b[k] + acc[k]; acc[W + k] = b[W + k] + acc[W + k]; }
            aN = aN + px[i * NX + XN]; aC = aC + px[i * NX + XC]; aJ = aJ + px[i * NX + XJ];
        }
#ifdef cl_khr_fp64
        const float norm = (float) (1.0 / (double) (float) Ld);
#else
        const float norm = 1.0f / (float) Ld;
#endif
        for (int k = 0; k < W; k++) { acc[k] = acc[k] * norm; acc[W + k] = acc[W + k] * norm; }
        aN = aN * norm; aC = aC * norm; aJ = aJ * norm;
        const float xfactor = (aN + aC) + aJ;
        for (int r = 0; r < 20; r++) {
            float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            __global const float *er = e + r * W;
            for (int q = 0; q < Q; q++)
                for (int l = 0; l < 4; l++) {
                    const int k = l * Q + q + 1;
                    if (k > M) continue;
                    lane[l] = lane[l] + acc[k - 1] * er[k - 1];
                    lane[l] = lane[l] + acc[W + k - 1];
                }
            n2[r] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + xfactor;
        }
        for (int k = 0; k < 3 * W; k++) F[k] = 0.0f;
    }

    /* p7_OptimalAccuracy: F <- OA scores.  Masked transitions (probability 0)
     * contribute 0.0, as HMMER's and-with-compare does. */
    const float NEG = -INFINITY;
    for (int k = 0; k < 3 * W; k++) F[k] = NEG;
    ox[XE] = NEG; ox[XN] = 0.0f; ox[XJ] = NEG; ox[XB] = 0.0f; ox[XC] = NEG; ox[XSCALE] = 1.0f;
    for (int i = 1; i <= Ld; i++) {
        __global float *prv = F + (long) (i - 1) * 3 * W;
        __global float *cur = F + (long) i * 3 * W;
        __global float *pp = B + (long) i * 3 * W;
        const float xBv = ox[(i - 1) * NX + XB];
        float xE = NEG;
        float dprev_row_m = NEG, dprev_row_i = NEG, dprev_row_d = NEG;  /* row i-1, node k-1 */
        for (int k = 1; k <= W; k++) {
            float sv = (TR(t, k, T_BM) > 0.0f) ? xBv : 0.0f;
            sv = fmax(sv, (TR(t, k, T_MM) > 0.0f) ? dprev_row_m : 0.0f);
            sv = fmax(sv, (TR(t, k, T_IM) > 0.0f) ? dprev_row_i : 0.0f);
            sv = fmax(sv, (TR(t, k, T_DM) > 0.0f) ? dprev_row_d : 0.0f);
            sv = sv + pp[k - 1];
            dprev_row_m = prv[k - 1]; dprev_row_i = prv[W + k - 1]; dprev_row_d = prv[2 * W + k - 1];
            cur[k - 1] = sv;
            float iv = (TR(t, k, T_MI) > 0.0f) ? dprev_row_m : 0.0f;
            iv = fmax(iv, (TR(t, k, T_II) > 0.0f) ? dprev_row_i : 0.0f);
            cur[W + k - 1] = iv + pp[W + k - 1];
        }
        /* D chain: D(1) = -inf, D(k+1) = max(mask(tMD_k) M(k), mask(tDD_k) D(k)) */
        float dv = NEG;
        for (int k = 1; k <= W; k++) {
            cur[2 * W + k - 1] = dv;
            const float a = (TR(t, k, T_MD) > 0.0f) ? cur[k - 1] : 0.0f;
            const float b = (TR(t, k, T_DD) > 0.0f) ? dv : 0.0f;
            dv = fmax(a, b);
        }
        for (int k = 0; k < W; k++) xE = fmax(xE, fmax(cur[k], cur[2 * W + k]));
        __global float *xr = ox + i * NX;
        __global const float *xp = ox + (i - 1) * NX;
        xr[XE] = xE;
        float t1 = (nloop == 0.0f) ? 0.0f : xp[XJ] + px[i * NX + XJ];
        float t2 = (eloop_cfg == 0.0f) ? 0.0f : xE;
        xr[XJ] = fmax(t1, t2);
        t1 = (nloop == 0.0f) ? 0.0f : xp[XC] + px[i * NX + XC];
        t2 = (emove_cfg == 0.0f) ? 0.0f : xE;
        xr[XC] = fmax(t1, t2);
        xr[XN] = (nloop == 0.0f) ? 0.0f : xp[XN] + px[i * NX + XN];
        t1 = (nmove == 0.0f) ? 0.0f : xr[XN];
        t2 = (nmove == 0.0f) ? 0.0f : xr[XJ];
        xr[XB] = fmax(t1, t2);
    }
    const float oasc = ox[Ld * NX + XC];

    /* p7_OATrace, written backwards from the end of this job's trace slot. */
    __global int4 *tr = trace + trace_off[j];
    __global float *tpp = trace_pp + trace_off[j];
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
            __global float *prv = F + (long) (i - 1) * 3 * W;
            float path[4];
            const float mv = (k > 1) ? prv[k - 2] : 0.0f;
            const float iv = (k > 1) ? prv[W + k - 2] : 0.0f;
            const float dvv = (k > 1) ? prv[2 * W + k - 2] : 0.0f;
            path[3] = (TR(t, k, T_BM) == 0.0f) ? NEG : ox[(i - 1) * NX + XB];
            path[0] = (TR(t, k, T_MM) == 0.0f) ? NEG : mv;
            path[1] = (TR(t, k, T_IM) == 0.0f) ? NEG : iv;
            path[2] = (TR(t, k, T_DM) == 0.0f) ? NEG : dvv;
            int best = 0;
            for (int a = 1; a < 4; a++) if (path[a] > path[best]) best = a;
            const int states[4] = {ST_M, ST_I, ST_D, ST_B};
            s1 = states[best];
            k--; i--;
        } else if (s0 == ST_D) {
            __global float *cur = F + (long) i * 3 * W;
            const float a = (k > 1 && TR(t, k - 1, T_MD) != 0.0f) ? cur[k - 2] : NEG;
            const float b = (k > 1 && TR(t, k - 1, T_DD) != 0.0f) ? cur[2 * W + k - 2] : NEG;
            s1 = (a >= b) ? ST_M : ST_D;
            k--;
        } else if (s0 == ST_I) {
            __global float *prv = F + (long) (i - 1) * 3 * W;
            const float a = (TR(t, k, T_MI) == 0.0f) ? NEG : prv[k - 1];
            const float b = (TR(t, k, T_II) == 0.0f) ? NEG : prv[W + k - 1];
            s1 = (a >= b) ? ST_M : ST_I;
            i--;
        } else if (s0 == ST_N) {
            s1 = (i == 0) ? ST_S : ST_N;
        } else if (s0 == ST_C) {
            const float a = (nloop == 0.0f) ? NEG : ox[(i - 1) * NX + XC] + px[i * NX + XC];
            const float b = (emove_cfg == 0.0f) ? NEG : ox[i * NX + XE];
            s1 = (a > b) ? ST_C : ST_E;
        } else if (s0 == ST_J) {
            const float a = (nloop == 0.0f) ? NEG : ox[(i - 1) * NX + XJ] + px[i * NX + XJ];
            const float b = (eloop_cfg == 0.0f) ? NEG : ox[i * NX + XE];
            s1 = (a > b) ? ST_J : ST_E;
        } else if (s0 == ST_E) {
            __global float *cur = F + (long) i * 3 * W;
            float best = NEG;
            int bs = -1, bk = 0;
            for (int q = 0; q < Q; q++) {
                for (int l = 0; l < 4; l++) {
                    const int kk = l * Q + q + 1;
                    const float v = (kk <= W) ? cur[kk - 1] : 0.0f;
                    if (v >= best) { best = v; bs = ST_M; bk = kk; }
                }
                for (int l = 0; l < 4; l++) {
                    const int kk = l * Q + q + 1;
                    const float v = (kk <= W) ? cur[2 * W + kk - 1] : 0.0f;
                    if (v > best) { best = v; bs = ST_D; bk = kk; }
                }
            }
            s1 = bs; k = bk;
            if (k > M) { ok = 0; break; }
        } else if (s0 == ST_B) {
            const float a = (nmove == 0.0f) ? NEG : ox[i * NX + XN];
            const float b = (nmove == 0.0f) ? NEG : ox[i * NX + XJ];
            s1 = (a > b) ? ST_N : ST_J;
        }
        if (s1 < 0) { ok = 0; break; }
        float post = 0.0f;
        __global float *pr = B + (long) i * 3 * W;
        if (s1 == ST_M) post = pr[k - 1];
        else if (s1 == ST_I) post = pr[W + k - 1];
        else if (s1 == s0 && (s1 == ST_N || s1 == ST_C || s1 == ST_J)) {
            post = px[i * NX + (s1 == ST_N ? XN : (s1 == ST_C ? XC : XJ))];
        }
        tr[cap - 1 - n] = (int4) (s1, k, i, 0);
        tpp[cap - 1 - n] = post;
        n++;
        if ((s1 == ST_N || s1 == ST_J || s1 == ST_C) && s1 == s0) i--;
        s0 = s1;
    }
    info[j] = (float4) (envsc, oasc, ok ? (float) n : -1.0f, 0.0f);
}

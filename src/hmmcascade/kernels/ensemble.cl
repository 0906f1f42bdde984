/* ensemble.cl: HMMER's region_trace_ensemble() (p7_domaindef.c) for multi-domain regions.
 *
 *   region_ensemble   A work-group per region (one work-item on CPUs, a warp on GPUs)
 *                     walks 200 stochastic tracebacks of the region's multihit Forward
 *                     matrix (p7_StochasticTrace, impl_sse/stotrace.c) in rounds: while
 *                     the walk is in a run (M -> M along the diagonal, I -> I, D -> D,
 *                     C -> C, J -> J), work-item a takes the step that follows a further
 *                     steps of the run, with the draw a + 1 after the current one (the
 *                     generator jumped ahead), and the first work-item whose step leaves
 *                     the run decides where the walk goes: up to one step per work-item
 *                     per round, the same steps and draws as the serial walk.  The group
 *                     shares the loads of E's row walks, the 80 sums of null2 by trace
 *                     for each sampled domain (p7_Null2_ByTrace, impl_sse/null2.c), and
 *                     the per-residue sums (each residue by one work-item); then
 *                     single-linkage clustering of the sampled domains
 *                     (p7_spensemble_Cluster, p7_spensemble.c) and removal of dominated
 *                     clusters, the link tests shared by the group (see the clustering).
 *                     (PoCL 3.1 on a CPU did not finish a launch with work-groups of 2 or
 *                     more; CPUs use one work-item per region, GPUs were checked bit-exact
 *                     against it: benchmarks/ensemble_variants.py.)
 *
 * This is a transcription of src/hmmcascade/domaindef/ensemble.py (clustering and
 * region_trace_ensemble), traces.py (stochastic traceback, null2 by trace) and
 * easel_random.py (Easel's generator and choices), which reproduce
 * HMMER bit for bit; every float32 and double operation below is the one
 * those modules perform, in the same order (the header turns FP_CONTRACT off:
 * no fused multiply-add).  Where the Python modules precompute something
 * (TraceSampler's cut points per matrix row), the kernel computes the same value on demand:
 * the numbers are identical, only when they are computed differs.
 *
 * Random numbers: Easel's fast generator, x <- 69069 x + 1 (mod 2^32), each
 * draw x / 2^32 in double; the host passes the state right after
 * esl_randomness_Init(seed) (HMMER reseeds to 42 for every region).
 *
 * Choices (esl_vec_FNorm + esl_rnd_FChoose): the float path weights are
 * normalised with a Kahan float sum and float divisions (1/n each when the
 * sum is 0); cut point c is (double cumulative sum up to c) / (double total
 * sum); weight c is chosen by the first c with roll < cut point c.
 *
 * E's predecessor (select_e) is drawn in HMMER's striped memory order: for
 * q = 0..Q-1, the M cells of nodes q+1, Q+q+1, 2Q+q+1, 3Q+q+1, then the D
 * cells of the same nodes (Q = max(2, ceil(M/4)), nodes > M skipped), each
 * weighted by cell * (float)(1.0 / E(i)), stopping where the running double
 * sum passes the roll (walking the row again, the sum still growing, if it
 * does not).
 *
 * Input per region: the Forward matrix as kernel `envelope` (domains.cl)
 * writes it in mode 0, at fwd + fwd_off[r]:
 *   cell (i, s, k) at F[(i * 3 + s) * W + (k - 1)], s = 0 M, 1 I, 2 D, W = 4 ceil(M/4);
 *   specials after it: fx[i * 6 + {E N J B C SCALE}], rows i = 0..Lr.
 * Model tables as domains.cl reads them: transition t of node k at
 * tsc[((k-1)/4) * 32 + t * 4 + (k-1)%4]; emission odds in the node-major words
 * [W/4][KP][4] (DomainEngine._node_emissions), (x, k) at msc[((k-1)/4) * 4 KP + 4 x + (k-1)%4];
 * job_xfm[r] = (N move, N loop, E move, E loop) of the multihit model with the
 * target's length (J and C take N's).
 *
 * Per-region workspace (ints, at work + work_off[r], 16-byte aligned), with
 * S = job_segcap[r] segment pairs and H = max(Lr, M) + 1:
 *   int4 seg[S]    sampled domains (i, j, k, m), in the order HMMER adds them
 *   int  sidx[S]   their trace numbers
 *   int  avail[S], stack[S], assign[S]     single linkage (Easel's b, a, assignments)
 *   int2 runs[W + 1]   a domain's emitting nodes, (node, count), nodes decreasing
 *   int  hist[H]   endpoint counts
 *   int  sig[8 * env_cap]   significant clusters (i, j, k, m, prob bits, dominated, -, -)
 * (`ensemble_work_ints` in hmmcascade/domaindef/multidomain.py is the same formula.)
 *
 * Output per region: the mean null2 odds ratio of residues ireg..jreg at
 * n2mean + n2_off[r] (float32, before HMMER's logf), and at n2log + n2_off[r]
 * its logf as glibc computes it (glibc_logf below), or NaN where the host must
 * call the C library's logf (the function HMMER calls); envelopes (i, j) at
 * env[r * env_cap ...]; status[r] = number of envelopes, or
 *   STATUS_OVERFLOW (-1): a workspace capacity (segment pairs, significant
 *       clusters, endpoint histogram, node runs, trace steps) was too small;
 *   STATUS_ANOMALY (-2): a path the Python modules would follow differently
 *       (NaN or zero weights where it raises or wraps an index);
 * in both cases the host recomputes the region with ensemble.py.
 */
#include "hmmcascade.h"
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#include "warp.h"

/* A region's work-group of one full warp (32 work-items) on NVIDIA (inline PTX): warp votes and
 * shuffles instead of local memory and barriers, for the rounds' decisions and E's draws (see
 * select_e_warp).  ENS_NO_VOTE: the portable path everywhere. */
#if defined(HMMC_PTX_SHFL) && defined(cl_khr_fp64) && !defined(ENS_NO_VOTE)
#define ENS_VOTE 1
#endif


/* P7_DOMAINDEF defaults (p7_domaindef_Create) */
#define MIN_OVERLAP 0.8f
#define MAX_DIAGDIFF 4
#define MIN_POSTERIOR 0.25f
#define MIN_ENDPOINTP 0.02f

#define STATUS_OVERFLOW (-1)
#define STATUS_ANOMALY (-2)

#ifndef ENS_LANES
#define ENS_LANES 32   /* most work-items per region (REGION_LANES in domaindef/multidomain.py) */
#endif

#ifndef ENS_AHEAD
#define ENS_AHEAD ENS_LANES   /* work-items taking a round's steps at most */
#endif
#define RUN_ON 0     /* a round's step that continues the run */
#define RUN_BAD (-1) /* a round's step from a state the walk cannot be in */

#define TR(tsc, k, t) ((tsc)[(((k) - 1) >> 2) * 32 + (t) * 4 + (((k) - 1) & 3)])

/* esl_random() of Easel's fast (LCG) generator. */
inline double rng_next(uint *x)
{
    *x = *x * 69069u + 1u;
    return (double) (*x) * 2.3283064365386962890625e-10;   /* x / 2^32, exact */
}

/* roll < c / d, decided as the double division (correctly rounded) decides it.  The division is
 * the slowest step of a trace's walk, so the quotient is first approximated: r = 1/d by Newton's
 * step from 2 - d (d, a sum of normalised weights, is 1 within float rounding), its error checked
 * with a fused residual (|1 - d r| < 2^-42, else r is not used), q = c r then lies within
 * 2^-41 of the division's result, and a roll farther than 2^-40 from q is decided by q alone;
 * nearer (about one roll in 2^40), NaN or infinite values take the exact division.
 * ENS_EXACT_DIV: always divide. */
inline double approx_recip(const double d)
{
#ifdef ENS_EXACT_DIV
    return NAN;
#else
    double r = 2.0 - d;
    r = fma(r, fma(-d, r, 1.0), r);
    r = fma(r, fma(-d, r, 1.0), r);
    return (fabs(fma(-d, r, 1.0)) < 0x1p-42) ? r : NAN;
#endif
}

inline int roll_below(const double roll, const double c, const double d, const double r)
{
    const double q = c * r;   /* NaN when r is */
    if (roll < q * (1.0 - 0x1p-40)) return 1;
    if (roll > q * (1.0 + 0x1p-40)) return 0;
    return roll < c / d;
}

/* A choice between two weights: 1 (the first) iff roll < its cut point, the Kahan float sum
 * normalising them, the cumulative double sums divided by the total. */
inline int choose2(const float a, const float b, const double roll)
{
    float total = 0.0f, comp = 0.0f, y, t;
    y = a - comp; t = total + y; comp = (t - total) - y; total = t;
    y = b - comp; t = total + y; comp = (t - total) - y; total = t;
    float na = 0.5f, nb = 0.5f;
    if (total != 0.0f) { na = a / total; nb = b / total; }
    const double c0 = (double) na;
    const double c1 = c0 + (double) nb;
    return roll_below(roll, c0, c1, approx_recip(c1));
}

/* Choice among four weights: index 0..3. */
inline int choose4(const float p0, const float p1, const float p2, const float p3, const double roll)
{
    float total = 0.0f, comp = 0.0f, y, t;
    y = p0 - comp; t = total + y; comp = (t - total) - y; total = t;
    y = p1 - comp; t = total + y; comp = (t - total) - y; total = t;
    y = p2 - comp; t = total + y; comp = (t - total) - y; total = t;
    y = p3 - comp; t = total + y; comp = (t - total) - y; total = t;
    float n0 = 0.25f, n1 = 0.25f, n2 = 0.25f, n3 = 0.25f;
    if (total != 0.0f) { n0 = p0 / total; n1 = p1 / total; n2 = p2 / total; n3 = p3 / total; }
    const double c0 = (double) n0;
    const double c1 = c0 + (double) n1;
    const double c2 = c1 + (double) n2;
    const double c3 = c2 + (double) n3;
    const double r = approx_recip(c3);
    if (roll_below(roll, c0, c3, r)) return 0;
    if (roll_below(roll, c1, c3, r)) return 1;
    if (roll_below(roll, c2, c3, r)) return 2;
    return 3;
}

/* E's draw: node k of the chosen M (k) or D (-k) cell of row i, weights cell * norm in HMMER's
 * striped order, the running double sum compared with the roll (the row walked again while the
 * sum has not passed it, as HMMER's while(1)).  0: no choice where traces.py would raise,
 * or a NaN weight reached (numpy's search would then differ from the walk).
 * With the work-group: the weights of the walk are loaded nl at a time (work-item a the
 * a-th of the block, into lv), then every work-item adds the block to its running double sum in
 * walk order, so that all of them reach the same choice, with select_e's sums and comparisons.
 * Every work-item of the group must call it. */
inline int select_e_group(__global const float *cm, __global const float *cd, const int M, const int Q,
                          const float norm, const double roll, const int lid, const int nl,
                          __local double *lv)
{
    double total = 0.0;
    const int n = 8 * Q;   /* walk entry e: q = e / 8, cells dd = (e / 4) & 1, lane l = e & 3 */
    for (int pass = 0; pass < 4; pass++) {
        for (int e0 = 0; e0 < n; e0 += nl) {
            const int e = e0 + lid;
            double v = -1.0;   /* -1: no cell (node past M, or past the walk) */
            if (e < n) {
                const int kk = (e & 3) * Q + (e >> 3) + 1;
                if (kk <= M) v = (double) ((((e >> 2) & 1) ? cd : cm)[kk - 1] * norm);
            }
            lv[lid] = v;
            barrier(CLK_LOCAL_MEM_FENCE);
            int pick = 0, done = 0;
            for (int a = 0; a < nl && e0 + a < n; a++) {
                const double w = lv[a];
                if (w == -1.0) continue;
                if (isnan(w)) { done = 1; break; }
                total = total + w;
                if (roll < total) {
                    const int ea = e0 + a;
                    const int kk = (ea & 3) * Q + (ea >> 3) + 1;
                    pick = ((ea >> 2) & 1) ? -kk : kk;
                    done = 1;
                    break;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (done) return pick;
        }
        if (!(total > 0.0)) return 0;
    }
    return 0;
}

#ifdef ENS_VOTE
/* select_e_group for a full warp (32 work-items), the same choice without walking the sums one by
 * one: work-item a holds entry e0 + a of a block, the block's running sums come from a scan (5
 * shuffle steps), a running total A carries them over blocks and passes.  These sums group the
 * additions otherwise than the walk's sequential double sum S, but both are sums of the same
 * nonnegative numbers, each within n u (n additions, u = 2^-53) of the exact sum, far below
 * 2^-30 of it for any row (n < 4 * 8 Q entries).  So where roll < A (1 - 2^-30), S has passed
 * the roll, where roll >= A (1 + 2^-30) it has not; the first entry whose sum may have passed it
 * is the walk's choice when its sum surely has.  Otherwise (the roll within 2^-30 of a sum,
 * about once in 10^9 draws), and where a weight is NaN or infinite, select_e_group walks the
 * row as before.  Every work-item of the warp must call it. */
#ifndef ENS_E_MARGIN
#define ENS_E_MARGIN 0x1p-30   /* (tests widen it, so that most draws take the sequential walk) */
#endif
inline int select_e_warp(__global const float *cm, __global const float *cd, const int M, const int Q,
                         const float norm, const double roll, const int lid, __local double *lv)
{
    const double lo_f = 1.0 - ENS_E_MARGIN, hi_f = 1.0 + ENS_E_MARGIN;
    const int n = 8 * Q;
    double A = 0.0;
    for (int pass = 0; pass < 4; pass++) {
        for (int e0 = 0; e0 < n; e0 += 32) {
            const int e = e0 + lid;
            int real = 0;
            double w = 0.0;
            if (e < n) {
                const int kk = (e & 3) * Q + (e >> 3) + 1;
                if (kk <= M) { w = (double) ((((e >> 2) & 1) ? cd : cm)[kk - 1] * norm); real = 1; }
            }
            if (vw_ballot(!isfinite(w)))
                return select_e_group(cm, cd, M, Q, norm, roll, lid, 32, lv);
            double sum = w;
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const double o = dw_up(sum, d);
                if (lid >= d) sum = sum + o;
            }
            const double a = A + sum;
            const uint maybe = vw_ballot(real && !(roll >= a * hi_f));
            if (maybe) {
                const uint sure = vw_ballot(real && roll < a * lo_f);
                const int first = 31 - (int) clz(maybe & (0u - maybe));
                if (!((sure >> first) & 1u))
                    return select_e_group(cm, cd, M, Q, norm, roll, lid, 32, lv);
                const int ea = e0 + first;
                const int kk = (ea & 3) * Q + (ea >> 3) + 1;
                return ((ea >> 2) & 1) ? -kk : kk;
            }
            A = A + dw_idx(sum, 31);
        }
        if (!(A > 0.0)) return 0;
    }
    return 0;
}
#endif

/* p7_spensemble's link_spsamples with HMMER's defaults (overlap of the smaller span;
 * the model overlap omits HMMER's +1).  The diagonal test goes first: it needs no division. */
inline int linked(const int4 a, const int4 b)
{
    /* a, b = (i, j, k, m) */
    if (!(abs((a.x - a.z) - (b.x - b.z)) <= MAX_DIAGDIFF || abs((a.y - a.w) - (b.y - b.w)) <= MAX_DIAGDIFF))
        return 0;
    int nov = min(a.y, b.y) - max(a.x, b.x) + 1;
    int n = min(a.y - a.x + 1, b.y - b.x + 1);
    if ((float) nov / (float) n < MIN_OVERLAP) return 0;
    nov = min(a.w, b.w) - max(a.z, b.z);
    n = min(a.w - a.z + 1, b.w - b.z + 1);
    if ((float) nov / (float) n < MIN_OVERLAP) return 0;
    return 1;
}

/* A significant cluster's endpoint: the leftmost (or rightmost) value of coordinate `which`
 * (0 i, 1 j, 2 k, 3 m) reached by >= thresh of its pairs, else the most frequent (first maximum).
 * Returns -1 if the histogram does not fit. */
inline int endpoint(__global const int4 *seg, __global const int *assign, const int n, const int c,
                    const int which, const int leftmost, const int thresh, __global int *hist, const int hcap)
{
    int lo = INT_MAX, hi = INT_MIN;
    for (int p = 0; p < n; p++) {
        if (assign[p] != c) continue;
        const int4 s = seg[p];
        const int v = which == 0 ? s.x : (which == 1 ? s.y : (which == 2 ? s.z : s.w));
        lo = min(lo, v); hi = max(hi, v);
    }
    if (hi - lo + 1 > hcap) return -1;
    for (int v = 0; v <= hi - lo; v++) hist[v] = 0;
    for (int p = 0; p < n; p++) {
        if (assign[p] != c) continue;
        const int4 s = seg[p];
        const int v = which == 0 ? s.x : (which == 1 ? s.y : (which == 2 ? s.z : s.w));
        hist[v - lo]++;
    }
    if (leftmost) {
        for (int v = 0; v <= hi - lo; v++) if (hist[v] >= thresh) return lo + v;
    } else {
        for (int v = hi - lo; v >= 0; v--) if (hist[v] >= thresh) return lo + v;
    }
    int best = 0;
    for (int v = 1; v <= hi - lo; v++) if (hist[v] > hist[best]) best = v;
    return lo + best;
}

/* glibc's logf (since 2.28) in its own double steps, as hmmcascade.logf._logf_double (FP_CONTRACT
 * is off: every step rounds as numpy's); NaN for a value that is not a positive normal float, or whose
 * double result lies within LOGF_MARGIN_ULPS (logf.LOGF_MARGIN_ULPS) of a float rounding boundary:
 * the host calls the C library's logf for those (and for all, where its logf is not glibc's). */
#define LOGF_MARGIN_ULPS (1L << 17)
#ifdef cl_khr_fp64
__constant double LOGF_INVC[16] = {
    0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0, 0x1.3c995b0b80385p+0,
    0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0, 0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
    0x1.0953f419900a7p+0, 0x1p+0, 0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
    0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
__constant double LOGF_LOGC[16] = {
    -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
    -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3, -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
    -0x1.252f438e10c1ep-5, 0x0p+0, 0x1.aa5aa5df25984p-5, 0x1.c5e53aa362eb4p-4,
    0x1.526e57720db08p-3, 0x1.bc2860d22477p-3, 0x1.1058bc8a07ee1p-2, 0x1.4043057b6ee09p-2};
#endif

inline float glibc_logf(const float v)
{
#ifdef cl_khr_fp64
    const uint bits = as_uint(v);
    if (bits - 0x00800000u >= 0x7F800000u - 0x00800000u) return NAN;   /* <= 0, subnormal, inf, NaN */
    const uint tmp = bits - 0x3F330000u;
    const int i = (int) ((tmp >> 19) & 15u);
    const int k = as_int(tmp) >> 23;
    const double z = (double) as_float(bits - (tmp & 0xFF800000u));
    double r = z * LOGF_INVC[i];
    r = r - 1.0;
    double y0 = (double) k * 0x1.62e42fefa39efp-1;
    y0 = y0 + LOGF_LOGC[i];
    const double r2 = r * r;
    double y = 0x1.5575b0be00b6ap-2 * r;
    y = y + -0x1.ffffef20a4123p-2;
    y = y + -0x1.00ea348b88334p-2 * r2;
    y = y * r2;
    y0 = y0 + r;
    y = y + y0;
    const long low = (as_long(y) & ((1L << 29) - 1)) - (1L << 28);
    if (low > -LOGF_MARGIN_ULPS && low < LOGF_MARGIN_ULPS) return NAN;
    return (float) y;
#else
    return NAN;
#endif
}

__kernel void region_ensemble(
    __global const uchar *dsq, __global const long *seq_off,
    __global const int *job_seq, __global const int *job_model,
    __global const int *job_i, __global const int *job_len, __global const float4 *job_xfm,
    const int n_jobs, const int nsamples, const uint rng_init,
    __global const float *msc, __global const long *msc_off,
    __global const float *tsc, __global const long *tsc_off, __global const int *model_M,
    __global const float *fwd, __global const long *fwd_off,
    __global int *work, __global const long *work_off, __global const int *job_segcap,
    __global float *n2mean, __global const long *n2_off, __global float *n2log,
    __global int2 *env, const int env_cap, __global int *status)
{
    /* A work-group per region (get_local_size(0) work-items, up to ENS_LANES; one on CPUs, up to a
     * warp on GPUs, so that the regions' divergent walks do not serialise each other): the first
     * work-item samples the traces; all of them test the clustering's links. */
    const int r = (int) (get_num_groups(0) - 1 - get_group_id(0));   /* largest regions first */
    const int lid = (int) get_local_id(0), nl = (int) get_local_size(0);
    __local uint lmask;             /* the clustering: the linked slots of a block, bit per work-item */
    __local int shared[2];
    __local double lv[ENS_LANES];   /* E's draw: a block of the row's weights */
    __local float lnv[20];          /* a sampled domain's null2 odds */
    __local float lacc[80];         /* its 80 sums, residue y and SSE lane l at 4 y + l */
    __local int lcnt[4];            /* its runs per SSE lane */
    __local int rfirst[2];          /* a round's first work-item leaving the run */
    __local int rdec[2][ENS_LANES];  /* each work-item's step in the round */
    __local uint rx[2][ENS_LANES];   /* and the generator's state after its draw */
/* residue positions p >= lo that work-item lid owns: p = lid (mod nl), each residue's sum by one work-item */
#define OWNED_FROM(lo) ((lo) + ((lid - (lo) % nl + nl) % nl))
    if (r >= n_jobs) return;
    const int m = job_model[r];
    const int M = model_M[m];
    const int W = (M + 3) / 4 * 4;
    const int Q = max(2, (M - 1) / 4 + 1);
    const int L = job_len[r];
    const int ireg = job_i[r];
    __global const uchar *x = dsq + seq_off[job_seq[r]] + (ireg - 1);   /* residue pos (1..L) at x[pos-1] */
    __global const float *en = msc + msc_off[m] * 4;   /* node-major odds */
    __global const float *t = tsc + tsc_off[m] * 4;
    const float4 xfm = job_xfm[r];
    const float nmove = xfm.x, nloop = xfm.y, emove = xfm.z, eloop = xfm.w;
    __global const float *F = fwd + fwd_off[r];
    __global const float *fx = F + (long) (L + 1) * 3 * W;

    const int segcap = job_segcap[r];
    const int hcap = max(L, M) + 1;
    __global int *w0 = work + work_off[r];
    __global int4 *seg = (__global int4 *) w0;
    __global int *sidx = w0 + 4 * segcap;
    __global int *avail = sidx + segcap;
    __global int *stack = avail + segcap;
    __global int *assign = stack + segcap;
    __global int2 *runs = (__global int2 *) (assign + segcap);
    __global int *hist = (__global int *) (runs + (W + 1));
    __global int *sig = hist + hcap;

    for (int p = 0; p < L; p++) {
        if (x[p] >= KP) { if (lid == 0) status[r] = STATUS_ANOMALY; return; }   /* not an Easel amino code */
    }
    __global float *n2 = n2mean + n2_off[r];
    int nseg = 0;
    int st = 0;   /* 0, or the failure status */
    {   /* every work-item walks the same traces (same draws, same reads); the group shares the
         * row walks of E's draws, the 20 null2 sums of a sampled domain, and the per-residue sums
         * (residue p always by work-item p mod nl, so each residue's sum keeps its order);
         * work-item 0 alone writes the shared workspace */
        for (int p = OWNED_FROM(1); p <= L; p += nl) n2[p - 1] = 0.0f;
        uint rng = rng_init;
        /* work-item a's draw in a round: the generator's state a + 1 draws on, x -> jump_a x + jump_c */
        uint jump_a = 1u, jump_c = 0u;
        for (int d = 0; d <= lid; d++) { jump_a *= 69069u; jump_c = jump_c * 69069u + 1u; }
        const int na = min(nl, ENS_AHEAD);   /* work-items taking steps of a round */
#ifdef ENS_VOTE
        const int vote = (nl == 32);         /* a full warp: votes and shuffles (select_e_warp) */
#endif
        int round = 0;
        const long maxsteps = (long) (L + 2) * (M + 6) + 16;

        /* ---- 200 stochastic traces, each from T back to S */
        for (int tr = 0; tr < nsamples && st == 0; tr++) {
            const int tstart = nseg;
            int i = L, k = 0, s0 = ST_C;
            int hi = L;                                   /* residues hi+1..L have this trace's term */
            int sqfrom = 0, sqto = -1, hmmfrom = 0, hmmto = 0, nruns = 0, nemit = 0, lastk = 0, lastcount = 0;
            long steps = 0;
            while (s0 != ST_S) {
                int s1;
                if (s0 == ST_M || s0 == ST_I || s0 == ST_D || s0 == ST_C || s0 == ST_J) {
                    /* A round of steps: work-item a (< na) takes the step that follows a continuations
                     * of the run (M -> M along the diagonal, I -> I, D -> D, C -> C, J -> J), with the
                     * draw a + 1 after the current state; the first that leaves the run (or meets a
                     * state the walk cannot be in) decides, those before it are the run's steps. */
                    const int ii = (s0 == ST_D) ? i : i - lid;
                    const int kk = (s0 == ST_M || s0 == ST_D) ? k - lid : k;
                    const uint xa = jump_a * rng + jump_c;
                    const double roll = (double) xa * 2.3283064365386962890625e-10;
                    int dec = RUN_ON;
                    if (lid < na) {
                        if (s0 == ST_M) {                 /* M(i,k) <- B(i-1), M, I, D(i-1,k-1) */
                            if (ii < 1 || kk < 1 || kk > M) dec = RUN_BAD;
                            else {
                                __global const float *prv = F + (long) (ii - 1) * 3 * W;
                                const float pm = (kk > 1) ? prv[kk - 2] : 0.0f;
                                const float pi = (kk > 1) ? prv[W + kk - 2] : 0.0f;
                                const float pd = (kk > 1) ? prv[2 * W + kk - 2] : 0.0f;
                                const int c = choose4(fx[(ii - 1) * NX + XB] * TR(t, kk, T_BM), pm * TR(t, kk, T_MM),
                                                      pi * TR(t, kk, T_IM), pd * TR(t, kk, T_DM), roll);
                                dec = (c == 1) ? RUN_ON : ((c == 0) ? ST_B : ((c == 2) ? ST_I : ST_D));
                            }
                        } else if (s0 == ST_D) {          /* D(i,k) <- M(i,k-1), D(i,k-1) */
                            if (ii < 0 || kk < 1 || kk > M) dec = RUN_BAD;
                            else {
                                __global const float *cur = F + (long) ii * 3 * W;
                                float a = 0.0f, b = 0.0f;   /* node 1: no predecessor (Python: 0 * 0) */
                                if (kk > 1) { a = cur[kk - 2] * TR(t, kk - 1, T_MD); b = cur[2 * W + kk - 2] * TR(t, kk - 1, T_DD); }
                                dec = choose2(a, b, roll) ? ST_M : RUN_ON;
                            }
                        } else if (s0 == ST_I) {          /* I(i,k) <- M(i-1,k), I(i-1,k) */
                            if (ii < 1 || kk < 1 || kk > M) dec = RUN_BAD;
                            else {
                                __global const float *prv = F + (long) (ii - 1) * 3 * W;
                                dec = choose2(prv[kk - 1] * TR(t, kk, T_MI), prv[W + kk - 1] * TR(t, kk, T_II), roll)
                                      ? ST_M : RUN_ON;
                            }
                        } else {                          /* C(i) <- C(i-1), E(i);  J(i) <- J(i-1), E(i) */
                            if (ii < 1) dec = RUN_BAD;
                            else {
                                const int xs = (s0 == ST_C) ? XC : XJ;
                                const float etr = (s0 == ST_C) ? emove : eloop;
                                dec = choose2(fx[(ii - 1) * NX + xs] * nloop, (fx[ii * NX + XE] * etr) * fx[ii * NX + XSCALE],
                                              roll) ? RUN_ON : ST_E;
                            }
                        }
                    }
                    /* the first work-item leaving the run: by a vote on a full warp; otherwise through
                     * local memory (slots alternate between rounds, so that one round's writes never
                     * meet the previous round's reads) */
                    int J;                                /* steps that continue the run */
                    uint xJ;                              /* the generator after the round */
                    int decJ = RUN_ON;                    /* the step leaving it */
#ifdef ENS_VOTE
                    if (vote) {
                        const uint leave = vw_ballot(dec != RUN_ON);
                        J = leave ? 31 - (int) clz(leave & (0u - leave)) : na;
                        xJ = (uint) vw_idx((int) xa, (J < na) ? J : na - 1);
                        decJ = vw_idx(dec, (J < na) ? J : 0);
                    } else
#endif
                    {
                        const int slot = round & 1;
                        round++;
                        if (lid == 0) rfirst[slot] = na;
                        barrier(CLK_LOCAL_MEM_FENCE);
                        if (dec != RUN_ON) atomic_min(&rfirst[slot], lid);
                        rdec[slot][lid] = dec;
                        rx[slot][lid] = xa;
                        barrier(CLK_LOCAL_MEM_FENCE);
                        J = rfirst[slot];
                        xJ = rx[slot][(J < na) ? J : na - 1];
                        if (J < na) decJ = rdec[slot][J];
                    }
                    steps += (J < na) ? J + 1 : J;
                    if (steps > maxsteps) { st = STATUS_OVERFLOW; break; }
                    if (J > 0) {
                        if (s0 == ST_M) {                 /* J matches, each a new run of one node */
                            if (nruns + J > W + 1) { st = STATUS_OVERFLOW; break; }
                            if (lid == 0) runs[nruns - 1] = (int2) (lastk, lastcount);
                            if (lid >= 1 && lid < J) runs[nruns + lid - 1] = (int2) (k - lid, 1);
                            nruns += J; nemit += J;
                            i -= J; k -= J;
                            lastk = k; lastcount = 1;
                            sqfrom = i; hmmfrom = k;
                        } else if (s0 == ST_I) {          /* J inserts at the node of the last run */
                            nemit += J; lastcount += J;
                            i -= J;
                        } else if (s0 == ST_D) {
                            k -= J;
                        } else {
                            i -= J;
                        }
                    }
                    rng = xJ;
                    if (J == na) continue;                /* still in the run */
                    s1 = decJ;
                    if (s1 == RUN_BAD) { st = STATUS_ANOMALY; break; }
                    if (s0 == ST_M) { k--; i--; }
                    else if (s0 == ST_I) i--;
                    else if (s0 == ST_D) k--;
                } else if (s0 == ST_N) {                  /* N(i) <- N(i-1) ... N(0) <- S: no draws */
                    if (i < 0) { st = STATUS_ANOMALY; break; }
                    steps += i + 1;
                    if (steps > maxsteps) { st = STATUS_OVERFLOW; break; }
                    i = 0;
                    s1 = ST_S;
                } else if (s0 == ST_E) {                  /* E(i) <- M(i,k), D(i,k), striped order */
                    if (++steps > maxsteps) { st = STATUS_OVERFLOW; break; }
                    if (i < 0) { st = STATUS_ANOMALY; break; }
                    const double roll = rng_next(&rng);
                    const float E = fx[i * NX + XE];
                    if (E == 0.0f) { st = STATUS_ANOMALY; break; }   /* traces.py divides by zero */
                    __global const float *cm = F + (long) i * 3 * W;
                    const float norm = (float) (1.0 / (double) E);
#ifdef ENS_VOTE
                    const int pick = vote ? select_e_warp(cm, cm + 2 * W, M, Q, norm, roll, lid, lv)
                                          : select_e_group(cm, cm + 2 * W, M, Q, norm, roll, lid, nl, lv);
#else
                    const int pick = select_e_group(cm, cm + 2 * W, M, Q, norm, roll, lid, nl, lv);
#endif
                    if (pick == 0) { st = STATUS_ANOMALY; break; }
                    s1 = (pick > 0) ? ST_M : ST_D;
                    k = abs(pick);
                } else if (s0 == ST_B) {                  /* B(i) <- N(i), J(i) */
                    if (++steps > maxsteps) { st = STATUS_OVERFLOW; break; }
                    if (i < 0) { st = STATUS_ANOMALY; break; }
                    s1 = choose2(fx[i * NX + XN] * nmove, fx[i * NX + XJ] * nmove, rng_next(&rng)) ? ST_N : ST_J;
                } else { st = STATUS_ANOMALY; break; }

                /* the domain being traced back (E .. B): first/last M, emitting nodes */
                if (s1 == ST_E) {
                    sqto = -1; nruns = 0; nemit = 0;
                } else if (s1 == ST_M || s1 == ST_I) {
                    if (s1 == ST_M) {
                        if (sqto < 0) { sqto = i; hmmto = k; }
                        sqfrom = i; hmmfrom = k;
                    }
                    nemit++;
                    if (nruns > 0 && lastk == k) {
                        lastcount++;
                    } else {                              /* the last run is kept in registers */
                        if (nruns >= W + 1) { st = STATUS_OVERFLOW; break; }
                        if (lid == 0 && nruns > 0) runs[nruns - 1] = (int2) (lastk, lastcount);
                        nruns++;
                        lastk = k; lastcount = 1;
                    }
                } else if (s1 == ST_B) {
                    /* p7_trace_Index's domain: pair for the ensemble */
                    if (sqto < 0 || sqto > hi || sqfrom < 1) { st = STATUS_ANOMALY; break; }
                    if (nseg >= segcap) { st = STATUS_OVERFLOW; break; }
                    /* p7_Null2_ByTrace: float frequencies, lanes summed over q, lanes (l0+l1)+(l2+l3) */
                    const float norm = (float) (1.0 / (double) nemit);
                    if (lid == 0) {
                        runs[nruns - 1] = (int2) (lastk, lastcount);
                        seg[nseg] = (int4) (sqfrom + ireg - 1, sqto + ireg - 1, hmmfrom, hmmto);
                        sidx[nseg] = tr;
                        for (int l = 0; l < 4; l++) lcnt[l] = 0;
                    }
                    nseg++;
                    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);   /* runs written by every work-item */
                    /* the runs were recorded with nodes decreasing, so those of SSE lane l (node k in
                     * lane (k-1)/Q) are one block, lanes 3..0 in memory order: count them */
                    for (int z = lid; z < nruns; z += nl) atomic_inc(&lcnt[(runs[z].x - 1) / Q]);
                    barrier(CLK_LOCAL_MEM_FENCE);
                    /* 80 sums, residue y and SSE lane l each: 0 + freq * odds over lane l's runs in node
                     * order (memory order reversed), freq = (float) count * norm */
                    for (int task = lid; task < 80; task += nl) {
                        const int y = task >> 2, l = task & 3;
                        int lo = 0;
                        for (int l2 = 3; l2 > l; l2--) lo += lcnt[l2];
                        float acc = 0.0f;
                        for (int z = lo + lcnt[l] - 1; z >= lo; z--) {
                            const int2 rr = runs[z];
                            acc = acc + ((float) rr.y * norm) * en[((rr.x - 1) >> 2) * (4 * KP) + ((rr.x - 1) & 3) + 4 * y];
                        }
                        lacc[task] = acc;
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);
                    const float xfactor = (0.0f * norm + 0.0f * norm) + 0.0f * norm;   /* no N, C, J in a domain */
                    for (int y = lid; y < 20; y += nl)    /* lanes summed (l0 + l1) + (l2 + l3) */
                        lnv[y] = ((lacc[4 * y] + lacc[4 * y + 1]) + (lacc[4 * y + 2] + lacc[4 * y + 3])) + xfactor;
                    barrier(CLK_LOCAL_MEM_FENCE);
                    float nv[KP];
                    for (int y = 0; y < 20; y++) nv[y] = lnv[y];
                    nv[20] = 1.0f; nv[27] = 1.0f; nv[28] = 1.0f;
                    /* esl_abc_FAvgScVec: B = D,N  J = I,L  Z = E,Q  O = K  U = C  X = any */
                    nv[21] = ((0.0f + nv[2]) + nv[11]) / 2.0f;
                    nv[22] = ((0.0f + nv[7]) + nv[9]) / 2.0f;
                    nv[23] = ((0.0f + nv[3]) + nv[13]) / 2.0f;
                    nv[24] = (0.0f + nv[8]) / 1.0f;
                    nv[25] = (0.0f + nv[1]) / 1.0f;
                    {
                        float s = 0.0f;
                        for (int y = 0; y < 20; y++) s = s + nv[y];
                        nv[26] = s / 20.0f;
                    }
                    barrier(CLK_LOCAL_MEM_FENCE);   /* lnv read by all before the next domain writes it */
                    /* this trace's term of each residue: 1 outside domains and at a domain's first residue */
                    for (int p = OWNED_FROM(sqfrom); p <= hi; p += nl) {
                        if (p == sqfrom) n2[p - 1] = n2[p - 1] + 1.0f;
                        else if (p <= sqto) n2[p - 1] = n2[p - 1] + nv[x[p - 1]];
                        else n2[p - 1] = n2[p - 1] + 1.0f;
                    }
                    hi = sqfrom - 1;
                }
                if (s1 == s0 && (s1 == ST_N || s1 == ST_J || s1 == ST_C)) i--;
                s0 = s1;
            }
            if (st) break;
            if (nseg == tstart) { st = STATUS_ANOMALY; break; }   /* every path has a domain */
            for (int p = OWNED_FROM(1); p <= hi; p += nl) n2[p - 1] = n2[p - 1] + 1.0f;
            /* the trace's domains were found last to first: HMMER adds them first to last */
            if (lid == 0) {
                for (int a = tstart, b = nseg - 1; a < b; a++, b--) {
                    const int4 tmp = seg[a]; seg[a] = seg[b]; seg[b] = tmp;
                }
            }
        }
        if (st == 0) {
            __global float *lg = n2log + n2_off[r];
            for (int p = OWNED_FROM(1); p <= L; p += nl) {
                const float v = n2[p - 1] / (float) nsamples;
                n2[p - 1] = v;
                lg[p - 1] = glibc_logf(v);
            }
        }
        if (lid == 0) { shared[0] = st; shared[1] = nseg; }
    }   /* traces sampled */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    st = shared[0];
    if (st) { if (lid == 0) status[r] = st; return; }
    const int n = shared[1];
    barrier(CLK_LOCAL_MEM_FENCE);

    /* ---- esl_cluster_SingleLinkage, with Easel's stack order.  Easel's inner loop walks avail[]
     * from nb-1 down, moving the last element into each removed slot; the moved elements were
     * tested already, so every slot is tested with the element it held when the loop began.  The
     * work-items test a block of slots at once (a bit each in lmask); the first one then replays
     * the removals of the block in Easel's order. */
    for (int a = lid; a < n; a += nl) avail[a] = n - a - 1;
    if (lid == 0) lmask = 0u;
    int nb = n, nc = 0, na = 0;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (;;) {
        if (lid == 0) {
            if (na == 0 && nb > 0) stack[na++] = avail[--nb];      /* a new cluster's seed */
            int v = -1;
            if (na > 0) { v = stack[--na]; assign[v] = nc; }
            shared[0] = v;
            shared[1] = nb;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        const int v = shared[0];
        const int nb0 = shared[1];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (v < 0) break;
        const int4 sv = seg[v];
        for (int top = nb0 - 1; top >= 0; top -= nl) {
            const int a = top - lid;
            if (a >= 0 && linked(sv, seg[avail[a]])) atomic_or(&lmask, 1u << lid);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {   /* the linked slots in order b = 0, 1, ...: slots top, top - 1, ... */
                uint m = lmask;
                lmask = 0u;
                while (m) {
                    const int b = 31 - (int) clz(m & (0u - m));
                    m &= m - 1u;
                    stack[na++] = avail[top - b];
                    avail[top - b] = avail[--nb];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        }
        if (lid == 0 && na == 0) nc++;                              /* the cluster is complete */
    }
    if (lid != 0) return;

    /* ---- p7_spensemble_Cluster: traces per cluster (avail = count, stack = last trace seen) */
    for (int c = 0; c < nc; c++) { avail[c] = 0; stack[c] = -1; }
    for (int p = 0; p < n; p++) {
        const int c = assign[p];
        if (stack[c] != sidx[p]) { avail[c]++; stack[c] = sidx[p]; }
    }
    int nsig = 0;
    for (int c = 0; c < nc && st == 0; c++) {
        const float prob = (float) avail[c] / (float) nsamples;
        if (prob < MIN_POSTERIOR) continue;
        const int thresh = (int) ceil((float) avail[c] * MIN_ENDPOINTP);
        const int bi = endpoint(seg, assign, n, c, 0, 1, thresh, hist, hcap);
        const int bk = endpoint(seg, assign, n, c, 2, 1, thresh, hist, hcap);
        const int bj = endpoint(seg, assign, n, c, 1, 0, thresh, hist, hcap);
        const int bm = endpoint(seg, assign, n, c, 3, 0, thresh, hist, hcap);
        if (bi < 0 || bk < 0 || bj < 0 || bm < 0) { st = STATUS_OVERFLOW; break; }
        if (bi > bj || bk > bm) continue;
        if (nsig >= env_cap) { st = STATUS_OVERFLOW; break; }
        __global int *s = sig + 8 * nsig;
        s[0] = bi; s[1] = bj; s[2] = bk; s[3] = bm; s[4] = as_int(prob); s[5] = 0;
        nsig++;
    }
    if (st) { status[r] = st; return; }
    /* stable sort on i (insertion sort) */
    for (int a = 1; a < nsig; a++) {
        int b = a;
        while (b > 0 && sig[8 * (b - 1)] > sig[8 * b]) {
            for (int f = 0; f < 6; f++) {
                const int tmp = sig[8 * b + f]; sig[8 * b + f] = sig[8 * (b - 1) + f]; sig[8 * (b - 1) + f] = tmp;
            }
            b--;
        }
    }
    /* region_trace_ensemble: drop clusters overlapping a more probable one by >= 80% of the shorter */
    for (int d = 0; d < nsig; d++) {
        __global int *a = sig + 8 * d;
        for (int d2 = d + 1; d2 < nsig; d2++) {
            __global int *b = sig + 8 * d2;
            const int nov = min(a[1], b[1]) - max(a[0], b[0]) + 1;
            if (nov == 0) break;
            const int len = min(a[1] - a[0] + 1, b[1] - b[0] + 1);
            if ((double) ((float) nov / (float) len) >= 0.8) {
                if (as_float(a[4]) > as_float(b[4])) b[5] = 1;
                else a[5] = 1;
            }
        }
    }
    int nenv = 0;
    for (int d = 0; d < nsig; d++) {
        if (sig[8 * d + 5]) continue;
        env[(long) r * env_cap + nenv] = (int2) (sig[8 * d], sig[8 * d + 1]);
        nenv++;
    }
    status[r] = nenv;
}

/* select.cl: the filter cascade's pass tests and survivor lists, on the device.
 *
 * What it computes: between the filter kernels, the pairs that pass each P-value test, as
 * lists the next filter reads, so that only counts (and the Forward filter's short input)
 * travel to the host.  Each test is HMMER's float/double arithmetic (see stats.py): a float
 * bit score compared with the model's least passing bit score (stats.pass_thresholds):
 *
 *   MSV     usc = ((float)(xj - tjb[s]) - (float) base[m]) / scale_b - 3      (nats, float)
 *           bits(usc, nullsc[s]) >= pass_msv_F1[m]                          (p7_Pipeline)
 *   bias    filtersc = (hmm_nats + llogp1[s]) + log1mp1[s]                  (p7_bg_FilterScore)
 *           bits(usc, filtersc) >= pass_msv_F1[m]; Viterbi runs unless >= pass_msv_F2[m]
 *   Viterbi vsc = (((float) xc + xw_move[s]) - base_w) / scale_w - 3
 *           bits(vsc, filtersc) >= pass_vit_F2[m]
 *
 * with bits(a, b) = (float)((double)(a - b) / ln 2).  A float division is done in double and
 * rounded once, which is the correctly rounded float quotient (53 >= 2 * 24 + 2 bits).  A
 * comparison with a NaN score passes, as in stats.passes.
 *
 * Lists: a stage's pairs are a set of regions [r * cap, r * cap + count_r) of one seq / model
 * / value buffer triple.  Compaction keeps the input order within each region (so pairs stay
 * model by model, targets by length): a count kernel counts each block's pairs per region, a
 * one-group scan turns the counts into block offsets (after the region's running total, which
 * it advances: several compactions may append to one region), a scatter kernel writes.  A
 * region's running total may exceed cap; the host checks and falls back to its own tests.
 *
 * Needs doubles (cl_khr_fp64); without them the host does the tests (Cascade).
 */
#include "hmmcascade.h"
#pragma OPENCL FP_CONTRACT OFF

#define SEL_WG 256             /* work-items per block                  */
#define SEL_PER 16             /* consecutive entries per work-item     */
#define SEL_BLOCK (SEL_WG * SEL_PER)
#define SEL_REGIONS 9          /* regions a compaction can write (at most) */
#define SEL_DROP 255           /* class of a pair that no region takes  */
#define LN2 0.69314718055994529

#ifdef cl_khr_fp64
inline float bits_of(const float sc, const float null)
{
    return (float) ((double) (sc - null) / LN2);
}

inline float div_f32(const float a, const float b)
{
    return (float) ((double) a / (double) b);
}

/* (float)((double) x - 3.0): HMMER's "- 3.0" (a double constant) on a float score */
inline float minus3(const float x)
{
    return (float) ((double) x - 3.0);
}

inline int passes_thr(const float x, const float thr)
{
    return !(x < thr);
}

/* The MSV filter's score in nats from a J(L) byte (-1: overflow, +inf).  A lower bound code
 * (MSV_LB_CODE - lb) gives lb's score: a lower bound of HMMER's (the arithmetic is monotone). */
inline float msv_nats_of(short xj, const uchar tjb, const uchar base, const float scale_b)
{
    if (xj <= MSV_LB_CODE) xj = (short) (MSV_LB_CODE - xj);
    if (xj < 0) return INFINITY;
    const float num = (float) ((int) xj - (int) tjb) - (float) base;
    return minus3(div_f32(num, scale_b));
}

/* Whether entry (m, s) of an MSV matrix passes F1 (for a lower bound: certainly passes); its
 * score (or lower bound) in *usc. */
inline int msv_entry_passes(const short xj, const int s, const int m, __global const uchar *seq_tjb,
                            __global const uchar4 *params, __global const float *nullsc,
                            __global const float *pass_f1, const float scale_b, float *usc)
{
    if (xj == -3 || xj == -2) return 0;   /* below the kernel's conservative threshold (-2: never left) */
    *usc = msv_nats_of(xj, seq_tjb[s], params[m].z, scale_b);
    return passes_thr(bits_of(*usc, nullsc[s]), pass_f1[m]);
}

/* msv_rerun_list: the flat positions of the entries of an MSV matrix of n entries (models model0...)
 * that msv_exact_list must recompute: the tiled kernel's -2, and its lower bounds that do not pass
 * F1 (the others certainly pass; bias_classify decides whether they need their exact score), in no
 * particular order (n_listed[slot] counts them all, at most cap are kept). */
__kernel void msv_rerun_list(__global const short *xj, const long n, __global int *n_listed, const int slot,
                             __global int *listed, const int cap, const int n_seq, const int model0,
                             __global const uchar *seq_tjb, __global const uchar4 *params,
                             __global const float *nullsc, __global const float *pass_f1, const float scale_b)
{
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        const short w = xj[i];
        float usc;
        if (w == -2 || (w <= MSV_LB_CODE && !msv_entry_passes(w, (int) (i % n_seq), model0 + (int) (i / n_seq),
                                                              seq_tjb, params, nullsc, pass_f1, scale_b, &usc))) {
            const int k = atomic_inc(n_listed + slot);
            if (k < cap) listed[k] = (int) i;
        }
    }
}
#endif

/* An exclusive scan of v over the SEL_WG work-items (local: SEL_WG ints); returns the sum in
 * *total (to every work-item). */
inline int block_exclusive_scan(const int v, __local int *tmp, int *total)
{
    const int t = (int) get_local_id(0);
    tmp[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < SEL_WG; d <<= 1) {      /* Hillis-Steele inclusive scan */
        const int add = t >= d ? tmp[t - d] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[t] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int incl = tmp[t];
    *total = tmp[SEL_WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return incl - v;
}

/* The sum of v over the SEL_WG work-items, returned to every work-item (local: SEL_WG longs). */
inline long block_sum_long(const long v, __local long *tmp)
{
    const int t = (int) get_local_id(0);
    tmp[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = SEL_WG / 2; d > 0; d >>= 1) {
        if (t < d) tmp[t] += tmp[t + d];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long r = tmp[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Zero n ints (counters before a batch's compactions). */
__kernel void zero_ints(__global int *a, const int n)
{
    const int i = (int) get_global_id(0);
    if (i < n) a[i] = 0;
}

#ifdef cl_khr_fp64
/* msv_select_count: per block of SEL_BLOCK entries of a range's MSV matrix ([n_mod, n_seq],
 * models model0...), how many pass F1 (block_count[b * SEL_REGIONS], region 0) and their
 * residues (block_cells[b * SEL_REGIONS]: the bias filter's cells). */
__kernel __attribute__((reqd_work_group_size(SEL_WG, 1, 1)))
void msv_select_count(
    __global const short *xj, const int n_seq, const int n_mod, const int model0,
    __global const uchar *seq_tjb, __global const int *seq_len, __global const uchar4 *params,
    __global const float *nullsc, __global const float *pass_f1, const float scale_b,
    __global int *block_count, __global long *block_cells)
{
    __local int tmp[SEL_WG];
    __local long lc[SEL_WG];
    const long n = (long) n_mod * n_seq;
    const long first = (long) get_group_id(0) * SEL_BLOCK + (long) get_local_id(0) * SEL_PER;
    int c = 0;
    long cells = 0;
    for (int j = 0; j < SEL_PER; j++) {
        const long i = first + j;
        if (i >= n) break;
        const int s = (int) (i % n_seq), m = model0 + (int) (i / n_seq);
        float usc;
        if (msv_entry_passes(xj[i], s, m, seq_tjb, params, nullsc, pass_f1, scale_b, &usc)) {
            c++;
            cells += seq_len[s];
        }
    }
    int total;
    block_exclusive_scan(c, tmp, &total);
    const long all_cells = block_sum_long(cells, lc);
    if (get_local_id(0) < SEL_REGIONS) {
        const int r = (int) get_local_id(0);
        block_count[get_group_id(0) * SEL_REGIONS + r] = r ? 0 : total;
        block_cells[get_group_id(0) * SEL_REGIONS + r] = r ? 0 : all_cells;
    }
}

/* msv_select_scatter: the passing entries of msv_select_count's blocks, in order, to region 0
 * of (out_seq, out_model, out_usc, out_lb) at the block offsets of select_scan (out_lb: 1 where
 * out_usc is a lower bound). */
__kernel __attribute__((reqd_work_group_size(SEL_WG, 1, 1)))
void msv_select_scatter(
    __global const short *xj, const int n_seq, const int n_mod, const int model0,
    __global const uchar *seq_tjb, __global const uchar4 *params,
    __global const float *nullsc, __global const float *pass_f1, const float scale_b,
    __global const int *block_offset, const int cap,
    __global int *out_seq, __global int *out_model, __global float *out_usc, __global uchar *out_lb)
{
    __local int tmp[SEL_WG];
    const long n = (long) n_mod * n_seq;
    const long first = (long) get_group_id(0) * SEL_BLOCK + (long) get_local_id(0) * SEL_PER;
    uint mask = 0;
    float usc[SEL_PER];
    for (int j = 0; j < SEL_PER; j++) {
        const long i = first + j;
        usc[j] = 0.0f;
        if (i < n && msv_entry_passes(xj[i], (int) (i % n_seq), model0 + (int) (i / n_seq), seq_tjb, params,
                                      nullsc, pass_f1, scale_b, &usc[j]))
            mask |= 1u << j;
    }
    int total;
    int at = block_offset[get_group_id(0) * SEL_REGIONS] + block_exclusive_scan(popcount(mask), tmp, &total);
    for (int j = 0; j < SEL_PER; j++) {
        if (!(mask & (1u << j))) continue;
        if (at < cap) {
            const long i = first + j;
            out_seq[at] = (int) (i % n_seq);
            out_model[at] = model0 + (int) (i / n_seq);
            out_usc[at] = usc[j];
            out_lb[at] = xj[i] <= MSV_LB_CODE;   /* usc is a lower bound */
        }
        at++;
    }
}

/* The region of an MSV survivor from its bias-corrected bit score b: SEL_DROP (fails F1),
 * region_fwd (passes F2 on its MSV score: no Viterbi filter), or vit_region[m]. */
inline uchar msv_region(const float b, const int m, __global const float *pass_f1, __global const float *pass_f2,
                        __global const uchar *vit_region, const int region_fwd)
{
    return !passes_thr(b, pass_f1[m]) ? SEL_DROP : passes_thr(b, pass_f2[m]) ? (uchar) region_fwd : vit_region[m];
}

/* bias_classify: after bias_filter, each MSV survivor's filter score and its region
 * (msv_region).  Without the bias filter (use_bias 0) the filter score is the null score.  A
 * survivor known by a lower bound of its MSV score (lb[i]) whose bound does not pass F2 (so its
 * region is not certain) goes to region_rerun: msv_rerun_classify classifies it once its exact
 * score is known. */
__kernel void bias_classify(
    const int n, __global const int *pair_seq, __global const int *pair_model,
    __global const float *usc, __global const uchar *lb, __global const float *hmm_nats, const int use_bias,
    __global const float *llogp1, __global const float *log1mp1, __global const float *nullsc,
    __global const float *pass_f1, __global const float *pass_f2,
    __global const uchar *vit_region, const int region_fwd, const int region_rerun,
    __global uchar *cls, __global float *filtersc)
{
    const int i = (int) get_global_id(0);
    if (i >= n) return;
    const int s = pair_seq[i], m = pair_model[i];
    float fs;
    if (use_bias) {
        fs = hmm_nats[i] + llogp1[s];
        fs = fs + log1mp1[s];
    } else {
        fs = nullsc[s];
    }
    const float b = bits_of(usc[i], fs);
    filtersc[i] = fs;
    const uchar r = msv_region(b, m, pass_f1, pass_f2, vit_region, region_fwd);
    cls[i] = lb[i] && r != (uchar) region_fwd ? (uchar) region_rerun : r;
}

/* msv_rerun_classify: the pairs src_off + i (i < n) that bias_classify put in the rerun region,
 * with their exact MSV words xj[i] (msv_exact_wg) and filter scores filtersc: their regions
 * (msv_region).  They passed F1 on the null score with a lower bound, so they do exactly. */
__kernel void msv_rerun_classify(
    const int n, const int src_off, __global const int *pair_seq, __global const int *pair_model,
    __global const float *filtersc, __global const short *xj, __global const uchar *seq_tjb,
    __global const uchar4 *params, const float scale_b, __global const float *pass_f1,
    __global const float *pass_f2, __global const uchar *vit_region, const int region_fwd, __global uchar *cls)
{
    const int i = (int) get_global_id(0);
    if (i >= n) return;
    const int s = pair_seq[src_off + i], m = pair_model[src_off + i];
    const float usc = msv_nats_of(xj[i], seq_tjb[s], params[m].z, scale_b);
    cls[i] = msv_region(bits_of(usc, filtersc[src_off + i]), m, pass_f1, pass_f2, vit_region, region_fwd);
}

/* vit_classify: after the Viterbi filter, region_fwd for the pairs that pass F2, else SEL_DROP. */
__kernel void vit_classify(
    const int n, const int src_off, __global const int *pair_seq, __global const int *pair_model,
    __global const float *filtersc, __global const short *xc, __global const short *xw_move,
    const float base_w, const float scale_w, __global const float *pass_f2, const int region_fwd,
    __global uchar *cls)
{
    const int i = (int) get_global_id(0);
    if (i >= n) return;
    const int s = pair_seq[src_off + i], m = pair_model[src_off + i];
    const short w = xc[i];
    float vsc;
    if (w >= 32767) vsc = INFINITY;
    else if (w <= -32768) vsc = -INFINITY;
    else vsc = minus3(div_f32(((float) w + (float) xw_move[s]) - base_w, scale_w));
    cls[i] = passes_thr(bits_of(vsc, filtersc[src_off + i]), pass_f2[m]) ? (uchar) region_fwd : SEL_DROP;
}
#endif

/* class_count: per block of SEL_BLOCK pairs (src_off + i, i < n), the pairs of each region
 * (cls) and their cells M[m] * L[s]. */
__kernel __attribute__((reqd_work_group_size(SEL_WG, 1, 1)))
void class_count(
    const int n, const int src_off, __global const uchar *cls, __global const int *pair_seq,
    __global const int *pair_model, __global const int *seq_len, __global const int *model_M,
    const int n_regions, __global int *block_count, __global long *block_cells)
{
    __local int tmp[SEL_WG];
    __local long lc[SEL_WG];
    const int first = (int) get_group_id(0) * SEL_BLOCK + (int) get_local_id(0) * SEL_PER;
    for (int r = 0; r < n_regions; r++) {
        int c = 0;
        long cells = 0;
        for (int j = 0; j < SEL_PER; j++) {
            const int i = first + j;
            if (i < n && cls[i] == r) {
                c++;
                cells += (long) model_M[pair_model[src_off + i]] * seq_len[pair_seq[src_off + i]];
            }
        }
        int total;
        block_exclusive_scan(c, tmp, &total);
        const long all_cells = block_sum_long(cells, lc);
        if (get_local_id(0) == 0) {
            block_count[get_group_id(0) * SEL_REGIONS + r] = total;
            block_cells[get_group_id(0) * SEL_REGIONS + r] = all_cells;
        }
    }
    if (get_local_id(0) == 0)
        for (int r = n_regions; r < SEL_REGIONS; r++) {
            block_count[get_group_id(0) * SEL_REGIONS + r] = 0;
            block_cells[get_group_id(0) * SEL_REGIONS + r] = 0;
        }
}

/* select_scan: block counts to block offsets, region by region, after each region's running
 * total (totals[r], advanced by the blocks' sum; cells[r] likewise).  One work-group. */
__kernel __attribute__((reqd_work_group_size(SEL_WG, 1, 1)))
void select_scan(__global const int *block_count, __global const long *block_cells, const int n_blocks,
                 const int n_regions, __global int *block_offset, __global int *totals, __global long *cells)
{
    __local int tmp[SEL_WG];
    __local long lc[SEL_WG];
    const int t = (int) get_local_id(0);
    for (int r = 0; r < n_regions; r++) {
        int run = totals[r];
        long csum = 0;
        for (int b0 = 0; b0 < n_blocks; b0 += SEL_WG) {
            const int b = b0 + t;
            const int v = b < n_blocks ? block_count[b * SEL_REGIONS + r] : 0;
            if (b < n_blocks) csum += block_cells[b * SEL_REGIONS + r];
            int sum;
            const int ex = block_exclusive_scan(v, tmp, &sum);
            if (b < n_blocks) block_offset[b * SEL_REGIONS + r] = run + ex;
            run += sum;
        }
        csum = block_sum_long(csum, lc);
        if (t == 0) {
            totals[r] = run;
            cells[r] += csum;
        }
    }
}

/* class_scatter: pairs src_off + i (i < n) of class r < SEL_REGIONS, in order, to region r of
 * the destination lists: dst[r * cap + offset]. */
__kernel __attribute__((reqd_work_group_size(SEL_WG, 1, 1)))
void class_scatter(
    const int n, const int src_off, __global const uchar *cls, __global const int *block_offset, const int cap,
    const int n_regions, __global const int *src_seq, __global const int *src_model, __global const float *src_val,
    __global int *dst_seq, __global int *dst_model, __global float *dst_val)
{
    __local int tmp[SEL_WG];
    const int t = (int) get_local_id(0);
    const int first = (int) get_group_id(0) * SEL_BLOCK + t * SEL_PER;
    for (int r = 0; r < n_regions; r++) {
        uint mask = 0;
        for (int j = 0; j < SEL_PER; j++) {
            const int i = first + j;
            if (i < n && cls[i] == r) mask |= 1u << j;
        }
        int total;
        int at = block_offset[get_group_id(0) * SEL_REGIONS + r] + block_exclusive_scan(popcount(mask), tmp, &total);
        if (total == 0) continue;   /* uniform */
        for (int j = 0; j < SEL_PER; j++) {
            if (!(mask & (1u << j))) continue;
            if (at < cap) {
                const long d = (long) r * cap + at;
                dst_seq[d] = src_seq[src_off + first + j];
                dst_model[d] = src_model[src_off + first + j];
                dst_val[d] = src_val[src_off + first + j];
            }
            at++;
        }
    }
}

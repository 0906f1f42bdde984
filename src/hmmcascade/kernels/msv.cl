/* msv.cl: HMMER's MSV filter (p7_MSVFilter), 8-bit saturated, bit-exact.
 *
 * What it computes: for each (sequence s, model m) the multihit local
 * ungapped ("multiple segment Viterbi") score, in HMMER's offset unsigned
 * byte arithmetic: 1/3-bit units, 0 = -infinity, base_b (190) = 0.
 *
 * Recurrence, per residue x_i, over nodes k = 1..M (all saturating uchar):
 *
 *   M(i,k) = max(M(i-1,k-1), B(i-1)) + bias_b - cost[x_i][k]
 *   E(i)   = max_k M(i,k)
 *   J(i)   = max(J(i-1), E(i) - tec_b)          (J doubles as C)
 *   B(i)   = max(base_b, J(i)) - (tjb_b + tbm_b)
 *
 * Overflow: if E(i) + bias_b saturates at 255 the score is too high for
 * bytes; HMMER then returns +infinity ("passes the filter"), as we do by
 * writing -1.  Otherwise the result is J(L), which the host turns into nats
 * exactly as HMMER does: ((J - tjb_b) - base_b) / scale_b - 3.
 *
 * Three kernels:
 *
 * msv_tiled (all sequences of a batch x a range of models; one model per
 *   work-item, kept for comparison with msv_tiled2).
 *   As long as no E(i) exceeds base_b + tec_b, J(i) <= base_b, so B(i) is
 *   the constant B0 = base_b - tjbm and no byte saturates (bias_b <= 19 for
 *   protein models, B0 + bias_b < 255, cells <= base_b + tec_b + bias_b).
 *   With U(i,k) = max(M(i,k), B0) the recurrence becomes
 *       U(i,k) = max(U(i-1,k-1) + (bias_b - cost[x_i][k]), B0)
 *   in plain int arithmetic (one add-then-max, VIADDMNMX on sm_90; the clamp
 *   of M at 0 never matters because U >= B0 >= 0), rows no longer depend on
 *   each other through E, and the model can be cut into tiles of 32 nodes
 *   that each sweep the whole sequence with the 32 cells in registers.
 *   Between tiles only the last column of the tile travels, one byte per
 *   row, packed four rows per word in global memory (interleaved across the
 *   work-group like the residues: coalesced).  The tile's costs, as ints
 *   bias_b - cost, sit in local memory in rows of 34 words read as int2
 *   pairs (LDS.64).  The result is J(L) = max(0, max E(i) - tec_b), where
 *   max E = max U unless max U = B0 (no cell above B0).
 *   If the largest cell exceeds base_b + tec_b the assumption failed (under
 *   1% of pairs on Pfam x UniProt: the high scorers).  Then g - tec_b is
 *   still a lower bound of HMMER's J(L): B(i) >= B0 in every row, every
 *   operation is monotone, and no byte saturates before HMMER's overflow
 *   test fires (E + bias_b < 255 in the rows before, so B + bias_b < 255);
 *   the kernel writes that bound as MSV_LB_CODE - lb (hmmcascade.h).  The
 *   host (MsvFilter.finish) reruns those pairs with msv_exact; the device's
 *   tests (select.cl) rerun only those the bound cannot decide.  When the
 *   largest U is B0, or bias_b > 61, the kernel writes -2: always rerun.
 *
 * msv_tiled2 (the same, two models a and b per work-item; the fast path).
 *   msv_tiled is bound by integer instructions: per cell one add-then-max and
 *   half a three-way max into the running maximum.  msv_tiled2 packs the
 *   cells of two models, same sequence, same node k, into one 32-bit word of
 *   two signed 16-bit halves (low = model a, high = model b), so that one
 *   packed add-then-max (add.s16x2 + max.s16x2, one VIADDMNMX.S16x2 on sm_90)
 *   and half a packed three-way max serve two cells:
 *
 *       r[k] = max16x2(add16x2(r[k-1] of the previous row, c[k]), B0a | B0b << 16)
 *       g    = max16x2(g, r[k])
 *
 *       cost word c[k] (local memory, per residue x and tile node k):
 *       31            16 15             0
 *       +---------------+---------------+
 *       | bias_b - cb[x]| bias_a - ca[x]|    PAD_COST in a half past that
 *       +---------------+---------------+    model's M and for x = 29..31
 *
 *   Tiles of TILE = 48 nodes (MSV_TILE: a multiple of 4 up to 64); the cost
 *   words sit in local memory in rows of TILE + 1 words, read one word per
 *   node: the 32 work-items of a warp read row x_i (their own residue), word
 *   k, in bank (x_i (TILE + 1) + k) mod 32, a different bank for each of the
 *   32 residue codes (TILE + 1 is odd), so a read never conflicts (work-items
 *   on one residue read one address).  msv_tiled's int2 pairs (LDS.64) over
 *   rows of 34 words put residues x and x + 16 in one bank pair, and local
 *   memory was the limit: measured on an H200 (dev-x10, 2026-11-22), the MSV
 *   kernels took 1.83 s with those, 1.57 s with word reads and 32-node
 *   tiles, 1.45 s with 48 (1.54 s with 64, 1.82 s with 24).
 *
 *   Both halves hold the same node index, so the diagonal dependency
 *   U(i,k) <- U(i-1,k-1) is the same register move in both: the halves never
 *   exchange anything.  Each half is msv_tiled's int recurrence for its model
 *   as long as no value leaves int16, which holds for any byte inputs:
 *     - every U is max(..., B0) >= B0 >= 0, and B0 <= 255 (a byte);
 *     - a half of a cost word is bias - cost in [-255, 255] or PAD_COST
 *       (-4096), so U + c >= -4096 before the max;
 *     - within a tile a diagonal starts from U(0,k) = B0 <= 255 or from the
 *       previous tile's byte min(U, 255) and grows by at most bias <= 255 per
 *       node, for at most 64 nodes: U <= 255 + 64 * 255 = 16575, U + c <= 16830
 *       (with bias <= 61, the only case whose result is used, U <= 4159).
 *   So no half wraps, and g's halves are msv_tiled's g per model, in
 *   [0, 16575].  The tiles run to the longer model's tile count; a half past
 *   its model's last tile sees only PAD_COST nodes, so its cells are B0 and
 *   g (already >= B0 after the first row) does not change.  The boundary
 *   column is stored per model row exactly as msv_tiled stores it (same
 *   scratch); the host pairs models of similar length (MsvFilter) so that
 *   little of a pair is padding.  With an odd number of models one pair has
 *   no model b (row -1): its half computes PAD cells and writes nothing.
 *   Output, rerun rule and threshold test are msv_tiled's, per half.
 *   Arithmetic: inline PTX add.s16x2 / max.s16x2 (PTX ISA 8.0, sm_90) under
 *   HMMC_PTX_S16X2 (Device.ptx_options), OpenCL short2 vectors elsewhere.
 *
 * msv_exact (a list of pairs): the recurrence above as HMMER runs it, one
 *   work-item per pair, the row in global scratch (four nodes per uchar4
 *   word, interleaved by pair).
 *
 * tjb_b depends on the target length (p7_oprofile_ReconfigMSVLength): it is
 * read per sequence.  HMMER first tries its SSV shortcut (ssvfilter.c),
 * which returns the same score whenever it returns one; computing the MSV
 * recurrence therefore gives HMMER's result.
 */
#include "hmmcascade.h"

#define TILE1 32            /* msv_tiled's tiles */
#define CSTRIDE2 17         /* msv_tiled's local cost rows: 17 int2 (34 words) apart, 8-byte aligned pairs */
#ifndef MSV_TILE
#define MSV_TILE 48
#endif
#define TILE MSV_TILE       /* msv_tiled2's nodes per tile (a multiple of 4, at most 64: see the header) */
#define CSTRIDE1 (TILE + 1) /* msv_tiled2's local cost rows: TILE + 1 (odd) words apart */
#if TILE % 4 || TILE > 64
#error "MSV_TILE: a multiple of 4, at most 64"
#endif
#define CROWS 32            /* residue codes 0..28, 29..31 = padding past a sequence's end */
#define PAD_COST (-4096)    /* "cost" of padding rows and nodes: never the maximum */

/* Tile costs of one model for residue x and nodes 4q+1..4q+4, as ints bias_b - cost: PAD_COST
 * for the padding codes (x >= KP) and for nodes past the model's M (a model of M = 0, Q = 0
 * is all padding: msv_tiled2's missing model b). */
inline int4 msv_tile_costs(__global const uchar4 *cost_m, const int Q, const int M, const int bias,
                           const int x, const int q)
{
    int4 c = (int4) (PAD_COST);
    if (x < KP && q < Q) {
        c = (int4) (bias) - convert_int4(cost_m[x * Q + q]);
        if (4 * q + 1 > M) c.x = PAD_COST;
        if (4 * q + 2 > M) c.y = PAD_COST;
        if (4 * q + 3 > M) c.z = PAD_COST;
        if (4 * q + 4 > M) c.w = PAD_COST;
    }
    return c;
}

/* The tiled kernels' output word for one pair from g, the largest U = max(M, B0) cell.  Rerun
 * exactly (-2) when bytes could saturate (bias > 61), or when g = B0: then no M cell exceeded B0
 * and the largest M is not known here (practically never happens).  When B was not constant
 * after all (some M > base + tec), the lower bound min(g - tec, 255) of J(L), as MSV_LB_CODE - lb
 * (see the header).  Otherwise J(L) = max(g - tec, 0), or -3 when it is below thr =
 * thr_model[m] + thr_seq[s], the host's conservative MSV prefilter (see cascade._msv_thresholds),
 * done here so that only candidates need the exact P-value test. */
inline short msv_tiled_word(const int g, const int xB, const uchar4 p, const float thr)
{
    if (p.w > 61 || g <= xB) return -2;
    const int xj = max(g - (int) p.y, 0);
#ifndef MSV_NO_LB  /* (build option -DMSV_NO_LB: -2 instead, to measure what the bounds save) */
    if (g > (int) p.z + (int) p.y) return (short) (MSV_LB_CODE - min(xj, 255));
#else
    if (g > (int) p.z + (int) p.y) return -2;
#endif
    return (short) ((float) xj < thr ? -3 : xj);
}

__kernel void msv_tiled(
    __global const uint  *dsq4,       /* grouped: 4 residues per word (see DeviceBatch), 31 past L */
    __global const long  *grp_base,   /* [work-group] first word of its group              */
    const long grp_words,             /* words per model of the batch (scratch stride)     */
    __global const int   *seq_len,    /* [n_seq] residues                                 */
    __global const uchar *seq_tjb,    /* [n_seq] tjb_b for the sequence's length          */
    const int n_seq,
    __global const uchar4 *cost,      /* per model [KP][Q] words of 4 nodes (255-padded)  */
    __global const long  *cost_off,   /* [n_models] start of each model, in words         */
    __global const int   *model_M,    /* [n_models] nodes                                 */
    __global const uchar4 *params,    /* [n_models] tbm_b, tec_b, base_b, bias_b          */
    const int model0,                 /* model of launch row 0                            */
    __global const float *thr_model,  /* [n_models] } a pair whose J(L) is below          */
    __global const float *thr_seq,    /* [n_seq]    } thr_model[m] + thr_seq[s] cannot pass */
    __global uint *bnd,               /* scratch [mi * grp_words + grouped word]          */
    __global short *out_xj)           /* [(m - model0) * n_seq + s]: J(L); -2 = rerun; -3 = below; lb */
{
    __local int2 cl[CROWS * CSTRIDE2];
    /* work-groups of long sequences first (the batch is sorted shortest first), so
     * that short ones fill the machine at the end of a launch */
    const int grp = (int) get_num_groups(0) - 1 - (int) get_group_id(0);
    const int lid = (int) get_local_id(0), lsz = (int) get_local_size(0);
    const int s  = grp * lsz + lid;
    const int mi = get_global_id(1);
    const int m = model0 + mi;
    const int M = model_M[m];
    const int Q = (M + 3) / 4;
    const int ntile = (M + TILE1 - 1) / TILE1;
    const int live = s < n_seq;
    const int L = live ? seq_len[s] : 0;
    const uchar4 p = params[m];
    const int bias = p.w;
    const uchar tjbm = live ? (uchar) (seq_tjb[s] + p.x) : (uchar) 0;
    const int xB = (int) sub_sat(p.z, tjbm);
    __global const uchar4 *cost_m = cost + cost_off[m];
    __global uint *bw = bnd + mi * grp_words + grp_base[grp] + lid;
    __global const uint *dw = dsq4 + grp_base[grp] + lid;
    int g = 0;

    for (int t = 0; t < ntile; t++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < CROWS * (TILE1 / 4); e += lsz) {
            const int x = e / (TILE1 / 4), w = e % (TILE1 / 4);
            const int4 c = msv_tile_costs(cost_m, Q, M, bias, x, t * (TILE1 / 4) + w);
            __local int2 *dst = cl + x * CSTRIDE2 + 2 * w;
            dst[0] = c.xy; dst[1] = c.zw;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        int r[TILE1];
#pragma unroll
        for (int k = 0; k < TILE1; k++) r[k] = xB;  /* U(0,k) = max(-infinity, B0) */
        int carry = xB;                             /* previous tile's U(i-1, k0-1) */
        const int last = (t + 1 == ntile);
        for (int w4 = 0; 4 * w4 < L; w4++) {
            const uint res = dw[w4 * lsz];
            const uint bin = t ? bw[w4 * lsz] : 0u;
            uint bout = 0u;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                __local const int2 *c = cl + (int) ((res >> (8 * j)) & 0xffu) * CSTRIDE2;
#pragma unroll
                for (int k2 = TILE1 / 2 - 1; k2 >= 0; k2--) {
                    const int2 cc = c[k2];
                    r[2 * k2 + 1] = max(r[2 * k2] + cc.y, xB);
                    r[2 * k2] = max((k2 ? r[2 * k2 - 1] : carry) + cc.x, xB);
                    g = max(g, max(r[2 * k2 + 1], r[2 * k2]));
                }
                carry = max((int) ((bin >> (8 * j)) & 0xffu), xB);
                bout |= (uint) min(r[TILE1 - 1], 255) << (8 * j);
            }
            if (!last) bw[w4 * lsz] = bout;
        }
    }
    if (!live) return;
    out_xj[(long) mi * n_seq + s] = msv_tiled_word(g, xB, p, thr_model[m] + thr_seq[s]);
}

/* msv_tiled2's packed arithmetic on two signed 16-bit halves of a 32-bit word, each half on
 * its own (no carry or comparison crosses from one half to the other).  The header above shows
 * that no half leaves int16, so the wrapping add never wraps. */
#ifdef HMMC_PTX_S16X2
/* sm_90's packed 16-bit integer instructions (PTX ISA 8.0); ptxas fuses the add and the max of a
 * cell into one VIADDMNMX, and two maxes into one VIMNMX3 (as CUDA's __viaddmax_s16x2 and
 * __vimax3_s16x2 do).  Not volatile: pure functions the compiler may schedule freely. */
inline uint add16x2(const uint a, const uint b)
{
    uint d;
    asm("add.s16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

inline uint max16x2(const uint a, const uint b)
{
    uint d;
    asm("max.s16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

inline uint min16x2(const uint a, const uint b)
{
    uint d;
    asm("min.s16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
#else
/* portable OpenCL C: the word as a short2 vector (the add as ushort2: wrapping is defined) */
inline uint add16x2(const uint a, const uint b) { return as_uint(as_ushort2(a) + as_ushort2(b)); }
inline uint max16x2(const uint a, const uint b) { return as_uint(max(as_short2(a), as_short2(b))); }
inline uint min16x2(const uint a, const uint b) { return as_uint(min(as_short2(a), as_short2(b))); }
#endif

/* Two ints in [-32768, 32767] as one packed word: a in the low half, b in the high half. */
inline uint pack16x2(const int a, const int b)
{
    return ((uint) a & 0xffffu) | ((uint) b << 16);
}

__kernel void msv_tiled2(
    __global const uint  *dsq4,       /* grouped: 4 residues per word (see DeviceBatch), 31 past L */
    __global const long  *grp_base,   /* [work-group] first word of its group              */
    const long grp_words,             /* words per model of the batch (scratch stride)     */
    __global const int   *seq_len,    /* [n_seq] residues                                 */
    __global const uchar *seq_tjb,    /* [n_seq] tjb_b for the sequence's length          */
    const int n_seq,
    __global const uchar4 *cost,      /* per model [KP][Q] words of 4 nodes (255-padded)  */
    __global const long  *cost_off,   /* [n_models] start of each model, in words         */
    __global const int   *model_M,    /* [n_models] nodes                                 */
    __global const uchar4 *params,    /* [n_models] tbm_b, tec_b, base_b, bias_b          */
    const int model0,                 /* model of launch row 0                            */
    __global const int2  *pair_rows,  /* [n_pairs] launch rows (a, b) of the pair; b = -1: none */
    __global const float *thr_model,  /* [n_models] } a pair whose J(L) is below          */
    __global const float *thr_seq,    /* [n_seq]    } thr_model[m] + thr_seq[s] cannot pass */
    __global uint *bnd,               /* scratch [row * grp_words + grouped word]         */
    __global short *out_xj)           /* [row * n_seq + s]: J(L); -2 = rerun; -3 = below; lb */
{
    __local uint cl[CROWS * CSTRIDE1];   /* packed cost words c[k] (header) */
    /* work-groups of long sequences first, as in msv_tiled */
    const int grp = (int) get_num_groups(0) - 1 - (int) get_group_id(0);
    const int lid = (int) get_local_id(0), lsz = (int) get_local_size(0);
    const int s  = grp * lsz + lid;
    const int2 rows = pair_rows[get_global_id(1)];
    const int has_b = rows.y >= 0;
    const int ma = model0 + rows.x;
    const int mb = has_b ? model0 + rows.y : ma;    /* no model b: a's tables, M = 0 (all padding) */
    const int Ma = model_M[ma], Mb = has_b ? model_M[mb] : 0;
    const int Qa = (Ma + 3) / 4, Qb = (Mb + 3) / 4;
    const int nta = (Ma + TILE - 1) / TILE, ntb = (Mb + TILE - 1) / TILE;
    const int ntile = max(nta, ntb);
    const int live = s < n_seq;
    const int L = live ? seq_len[s] : 0;
    const uchar4 pa = params[ma], pb = params[mb];
    const uchar tjb = live ? seq_tjb[s] : (uchar) 0;
    const int xBa = (int) sub_sat(pa.z, (uchar) (tjb + pa.x));  /* B0 per model, as in msv_tiled */
    const int xBb = (int) sub_sat(pb.z, (uchar) (tjb + pb.x));
    const uint xB2 = pack16x2(xBa, xBb);
    /* a byte word of four rows' B0 (the first tile's boundary, see carry below) */
    const uint xBa4 = (uint) xBa * 0x01010101u, xBb4 = (uint) xBb * 0x01010101u;
    __global const uchar4 *cost_a = cost + cost_off[ma], *cost_b = cost + cost_off[mb];
    __global uint *bwa = bnd + rows.x * grp_words + grp_base[grp] + lid;
    __global uint *bwb = bnd + (has_b ? rows.y : rows.x) * grp_words + grp_base[grp] + lid;
    __global const uint *dw = dsq4 + grp_base[grp] + lid;
    uint g = 0u;

    for (int t = 0; t < ntile; t++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < CROWS * (TILE / 4); e += lsz) {
            const int x = e / (TILE / 4), w = e % (TILE / 4), q = t * (TILE / 4) + w;
            const int4 ca = msv_tile_costs(cost_a, Qa, Ma, pa.w, x, q);
            const int4 cb = msv_tile_costs(cost_b, Qb, Mb, pb.w, x, q);
            const uint4 c = (as_uint4(ca) & (uint4) (0xffffu)) | (as_uint4(cb) << 16);
            __local uint *dst = cl + x * CSTRIDE1 + 4 * w;
            dst[0] = c.x; dst[1] = c.y; dst[2] = c.z; dst[3] = c.w;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        /* boundary columns: read where the previous tile of that model wrote one, written
         * where that model has a next tile (uniform over the work-group: one pair per group) */
        const int rd_a = t > 0 && t < nta, rd_b = t > 0 && t < ntb;
        const int wr_a = t + 1 < nta, wr_b = t + 1 < ntb;
        uint r[TILE];
#pragma unroll
        for (int k = 0; k < TILE; k++) r[k] = xB2;  /* U(0,k) = max(-infinity, B0), per half */
        uint carry = xB2;                            /* previous tile's U(i-1, k0-1), per half */
        for (int w4 = 0; 4 * w4 < L; w4++) {
            const uint res = dw[w4 * lsz];
            /* Four rows' boundary bytes per model.  msv_tiled takes max(byte, B0); here no max is
             * needed: a stored byte is min(U, 255) >= B0 (U >= B0 and B0 <= 255), and where no
             * byte was stored (first tile, or past the model's tiles) the word holds B0. */
            const uint bin_a = rd_a ? bwa[w4 * lsz] : xBa4;
            const uint bin_b = rd_b ? bwb[w4 * lsz] : xBb4;
            uint bout_a = 0u, bout_b = 0u;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                __local const uint *c = cl + (int) ((res >> (8 * j)) & 0xffu) * CSTRIDE1;
#pragma unroll
                for (int k2 = TILE / 2 - 1; k2 >= 0; k2--) {
                    const uint2 cc = (uint2) (c[2 * k2], c[2 * k2 + 1]);
                    r[2 * k2 + 1] = max16x2(add16x2(r[2 * k2], cc.y), xB2);
                    r[2 * k2] = max16x2(add16x2(k2 ? r[2 * k2 - 1] : carry, cc.x), xB2);
                    g = max16x2(g, max16x2(r[2 * k2 + 1], r[2 * k2]));
                }
                carry = ((bin_a >> (8 * j)) & 0xffu) | (((bin_b >> (8 * j)) & 0xffu) << 16);
                const uint edge = min16x2(r[TILE - 1], 0x00ff00ffu);  /* min(U, 255) per half */
                bout_a |= (edge & 0xffu) << (8 * j);
                bout_b |= (edge >> 16) << (8 * j);
            }
            if (wr_a) bwa[w4 * lsz] = bout_a;
            if (wr_b) bwb[w4 * lsz] = bout_b;
        }
    }
    if (!live) return;
    /* g's halves are in [0, 16575] (header): unsigned 16-bit fields */
    out_xj[(long) rows.x * n_seq + s] = msv_tiled_word((int) (g & 0xffffu), xBa, pa, thr_model[ma] + thr_seq[s]);
    if (has_b)
        out_xj[(long) rows.y * n_seq + s] = msv_tiled_word((int) (g >> 16), xBb, pb, thr_model[mb] + thr_seq[s]);
}

/* One word (nodes 4q+1..4q+4) of HMMER's byte recurrence: M(i-1, 4q..4q+3) is the previous
 * row's word shifted by one node, with M(i-1, 4q) = carry (the word before's last node). */
inline uchar4 msv_word(const uchar4 old, const uchar carry, const uchar4 xBv, const uchar4 bias,
                       const uchar4 cost)
{
    const uchar4 mpv = (uchar4) (carry, old.x, old.y, old.z);
    return sub_sat(add_sat(max(mpv, xBv), bias), cost);
}

__kernel void msv_exact(
    __global const uchar *dsq,        /* packed residues [seq_off[s] + i]                 */
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const uchar *seq_tjb,
    __global const int   *pair_seq,   /* [n_pairs] sequence of the batch                  */
    __global const int   *pair_model, /* [n_pairs] model                                  */
    const int n_pairs,
    __global const uchar4 *cost,
    __global const long  *cost_off,
    __global const int   *model_M,
    __global const uchar4 *params,
    __global uchar4 *row,             /* scratch: M(i-1, 4q+1..4q+4) at [q * n_pairs + pair] */
    __global short *out_xj)           /* [n_pairs]: J(L) or -1 (overflow)                 */
{
    const int pi = get_global_id(0);
    if (pi >= n_pairs) return;
    const int s = pair_seq[pi], m = pair_model[pi];
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    const uchar4 p = params[m];
    const uchar tec = p.y, base = p.z;
    const uchar4 bias = (uchar4) (p.w);
    const uchar tjbm = (uchar) (seq_tjb[s] + p.x);
    __global const uchar4 *cost_m = cost + cost_off[m];
    __global uchar4 *r = row + pi;

    for (int q = 0; q < Q; q++) r[(long) q * n_pairs] = (uchar4) (0);

    uchar xJ = 0;
    uchar xB = sub_sat(base, tjbm);
    for (int i = 0; i < L; i++) {
        __global const uchar4 *c = cost_m + (int) dsq[seq_off[s] + i] * Q;
        const uchar4 xBv = (uchar4) (xB);
        uchar4 xEv = (uchar4) (0);
        uchar carry = 0;                     /* M(i-1, 4q): -infinity before node 1 */
        for (int q = 0; q < Q; q++) {
            const uchar4 old = r[(long) q * n_pairs];
            const uchar4 sv = msv_word(old, carry, xBv, bias, c[q]);
            carry = old.w;
            xEv = max(xEv, sv);
            r[(long) q * n_pairs] = sv;
        }
        const uchar xE = max(max(xEv.x, xEv.y), max(xEv.z, xEv.w));
        if (add_sat(xE, p.w) == 255) { out_xj[pi] = -1; return; }
        xJ = max(xJ, sub_sat(xE, tec));
        xB = sub_sat(max(base, xJ), tjbm);
    }
    out_xj[pi] = xJ;
}

/* msv_exact_wg: the exact recurrence for a list of pairs, one work-group of 32 work-items
 * (one NVIDIA warp) per pair.  The row lives in local memory (two rows, four nodes per uchar4
 * word, word q handled by work-item q mod 32), so a row costs ceil(M/128) word updates per
 * work-item plus one reduction of E across the group.  Used for the pairs msv_tiled hands back
 * (the high scorers); models over 4 * MSV_WG_QMAX nodes go to msv_exact.
 *
 * The reduction of E is group_max_u32 (hmmcascade.h): PTX on NVIDIA, local memory elsewhere. */
#define MSV_WG GROUP_WG
#define MSV_WG_QMAX 1024

/* The exact recurrence of pair (s, m) by the work-group (rows: 2 * MSV_WG_QMAX words of local
 * memory, red: MSV_WG words); every work-item returns J(L), or -1 on overflow. */
inline short msv_exact_group(
    const int s, const int m, __global const uchar *dsq, __global const long *seq_off,
    __global const int *seq_len, __global const uchar *seq_tjb, __global const uchar4 *cost,
    __global const long *cost_off, __global const int *model_M, __global const uchar4 *params,
    __local uchar4 *rows, __local uint *red)
{
    const int lane = (int) get_local_id(0);
    const int Q = (model_M[m] + 3) / 4;
    const int L = seq_len[s];
    const uchar4 p = params[m];
    const uchar tec = p.y, base = p.z;
    const uchar4 bias = (uchar4) (p.w);
    const uchar tjbm = (uchar) (seq_tjb[s] + p.x);
    __global const uchar4 *cost_m = cost + cost_off[m];
    __global const uchar *d = dsq + seq_off[s];

    for (int q = lane; q < Q; q += MSV_WG) rows[q] = (uchar4) (0);
    barrier(CLK_LOCAL_MEM_FENCE);
    uchar xJ = 0;
    uchar xB = sub_sat(base, tjbm);
    int cur = 0;
    for (int i = 0; i < L; i++) {
        __global const uchar4 *c = cost_m + (int) d[i] * Q;
        __local const uchar4 *prv = rows + cur * MSV_WG_QMAX;
        __local uchar4 *nxt = rows + (cur ^ 1) * MSV_WG_QMAX;
        const uchar4 xBv = (uchar4) (xB);
        uchar4 xEv = (uchar4) (0);
        for (int q = lane; q < Q; q += MSV_WG) {
            const uchar carry = q ? prv[q - 1].w : (uchar) 0;   /* M(i-1, 4q): -inf before node 1 */
            const uchar4 sv = msv_word(prv[q], carry, xBv, bias, c[q]);
            xEv = max(xEv, sv);
            nxt[q] = sv;
        }
        const uchar xE = (uchar) group_max_u32((uint) max(max(xEv.x, xEv.y), max(xEv.z, xEv.w)), red);
        barrier(CLK_LOCAL_MEM_FENCE);              /* row i complete before row i+1 reads it */
        if (add_sat(xE, p.w) == 255) return -1;   /* uniform: xE is the group's */
        xJ = max(xJ, sub_sat(xE, tec));
        xB = sub_sat(max(base, xJ), tjbm);
        cur ^= 1;
    }
    return xJ;
}

__kernel __attribute__((reqd_work_group_size(MSV_WG, 1, 1)))
void msv_exact_wg(
    __global const uchar *dsq,        /* packed residues [seq_off[s] + i]                 */
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const uchar *seq_tjb,
    __global const int   *pair_seq,   /* [n_pairs] sequence of the batch                  */
    __global const int   *pair_model, /* [n_pairs] model (M <= 4 * MSV_WG_QMAX)           */
    const int n_pairs,
    __global const uchar4 *cost,
    __global const long  *cost_off,
    __global const int   *model_M,
    __global const uchar4 *params,
    __global short *out_xj)           /* [n_pairs]: J(L) or -1 (overflow)                 */
{
    __local uchar4 rows[2 * MSV_WG_QMAX];
    __local uint red[MSV_WG];
    const int pi = (int) get_group_id(0);
    if (pi >= n_pairs) return;                     /* uniform over the group */
    const short xj = msv_exact_group(pair_seq[pi], pair_model[pi], dsq, seq_off, seq_len, seq_tjb, cost,
                                     cost_off, model_M, params, rows, red);
    if (get_local_id(0) == 0) out_xj[pi] = xj;
}

/* msv_exact_list: msv_exact_group on the pairs msv_tiled2 handed back in one model range's output
 * matrix (-2, and lower bounds that do not pass F1), listed by select.cl's msv_rerun_list (flat
 * positions (m - model0) * n_seq + s, their number at n_listed[slot], at most cap of them kept);
 * each score is written back in place.
 * A work-group takes list entries group, group + groups, ... (the count is known on the device
 * only, so the launch has a fixed number of groups). */
__kernel __attribute__((reqd_work_group_size(MSV_WG, 1, 1)))
void msv_exact_list(
    __global const uchar *dsq,
    __global const long  *seq_off,
    __global const int   *seq_len,
    __global const uchar *seq_tjb,
    __global const int   *listed,     /* [cap] flat positions in out_xj                   */
    __global const int   *n_listed,   /* [slot]: how many were listed (may exceed cap)    */
    const int slot,
    const int cap,
    const int n_seq,
    const int model0,
    __global const uchar4 *cost,
    __global const long  *cost_off,
    __global const int   *model_M,
    __global const uchar4 *params,
    __global short *out_xj)           /* the range's [models, n_seq] matrix, updated      */
{
    __local uchar4 rows[2 * MSV_WG_QMAX];
    __local uint red[MSV_WG];
    const int n = min(n_listed[slot], cap);
    for (int k = (int) get_group_id(0); k < n; k += (int) get_num_groups(0)) {
        const int pos = listed[k];
        const short xj = msv_exact_group(pos % n_seq, model0 + pos / n_seq, dsq, seq_off, seq_len, seq_tjb,
                                         cost, cost_off, model_M, params, rows, red);
        if (get_local_id(0) == 0) out_xj[pos] = xj;
        barrier(CLK_LOCAL_MEM_FENCE);              /* the rows are reused by the next pair */
    }
}

/* layout.cl: the kernels' device layouts of the model tables and of a batch's residues, made on
 * the device from the flat arrays the host uploads (the host would spend a few hundred ms of
 * numpy copies per search on them, on the path to the first MSV launch and contending with it
 * for the interpreter).
 *
 * emission_layout   one model's [KP][M] table (hmmcascade.h), element x * M + (k-1), as
 *   mode 0: [KP][Q] words of 4 nodes: element x * 4Q + (k-1)   (MSV, Viterbi, Forward filters)
 *   mode 1: [Q][KP] words of 4 nodes: element (q * KP + x) * 4 + j, k - 1 = 4q + j
 *           (the domain kernels' node-major table)
 * transition_layout one model's [M][8] table, element (k-1) * 8 + t, as
 *   mode 0: [Q][8] words of 4 nodes: element (q * 8 + t) * 4 + j
 *   mode 1: [8][Q] words of 4 nodes: element (t * Q + q) * 4 + j
 * Nodes past M (up to 4Q) hold the pad value.  Elements are es = 1, 2 or 4 bytes, copied as bytes
 * (uchar, short and float tables alike); pad holds the pad element's bytes, lowest first.  A
 * work-group per model (group number = model), its work-items striding over the model's output.
 *
 * group_residues    a length-sorted batch's residues for msv_tiled(2): groups of `lanes`
 *   sequences (one work-group of the MSV kernels); word w of lane l of group g at
 *   grp_base[g] + w * lanes + l holds residues 4w..4w+3 of sequence g * lanes + l, the code 31
 *   past its end (and for lanes past the batch's last sequence).  A work-group per group.
 */

inline uchar pad_byte(const uint pad, const int b)
{
    return (uchar) ((pad >> (8 * b)) & 0xffu);
}

__kernel void emission_layout(
    __global const uchar *src,       /* concatenated [KP][M] tables, es-byte elements      */
    __global const long  *src_off,   /* [model] first element (ProfileDB.emis_off)         */
    __global const int   *model_M,
    __global const long  *dst_off,   /* [model] first element of the output                */
    const int es, const uint pad, const int mode, const int kp,
    __global uchar *dst)
{
    const int m = (int) get_group_id(0);
    const int M = model_M[m], Q = (M + 3) / 4, W = 4 * Q;
    __global const uchar *s = src + src_off[m] * es;
    __global uchar *d = dst + dst_off[m] * es;
    for (int e = (int) get_local_id(0); e < kp * W; e += (int) get_local_size(0)) {
        int x, k;
        if (mode == 0) {
            x = e / W; k = e % W;
        } else {
            const int q = e / (4 * kp), r = e % (4 * kp);
            x = r / 4; k = 4 * q + r % 4;
        }
        for (int b = 0; b < es; b++)
            d[e * es + b] = k < M ? s[(x * M + k) * es + b] : pad_byte(pad, b);
    }
}

__kernel void transition_layout(
    __global const uchar *src,       /* concatenated [M][8] tables, es-byte elements       */
    __global const long  *src_off,   /* [model] first element (ProfileDB.trans_off)        */
    __global const int   *model_M,
    __global const long  *dst_off,   /* [model] first element of the output                */
    const int es, const uint pad, const int mode,
    __global uchar *dst)
{
    const int m = (int) get_group_id(0);
    const int M = model_M[m], Q = (M + 3) / 4;
    __global const uchar *s = src + src_off[m] * es;
    __global uchar *d = dst + dst_off[m] * es;
    for (int e = (int) get_local_id(0); e < 32 * Q; e += (int) get_local_size(0)) {
        const int j = e % 4;
        int q, t;
        if (mode == 0) {
            q = e / 32; t = (e / 4) % 8;
        } else {
            t = e / (4 * Q); q = (e / 4) % Q;
        }
        const int k = 4 * q + j;
        for (int b = 0; b < es; b++)
            d[e * es + b] = k < M ? s[(k * 8 + t) * es + b] : pad_byte(pad, b);
    }
}

__kernel void group_residues(
    __global const uchar *dsq,       /* packed residues [seq_off[s] + i]                   */
    __global const long  *seq_off,
    __global const int   *seq_len,
    const int n_seq,
    __global const long  *grp_base,  /* [group + 1]: first word of each group, then the end */
    __global uint *dst)
{
    const int g = (int) get_group_id(0), lanes = (int) get_local_size(0), l = (int) get_local_id(0);
    const int s = g * lanes + l;
    const long base = grp_base[g];
    const int words = (int) ((grp_base[g + 1] - base) / lanes);
    const int L = s < n_seq ? seq_len[s] : 0;
    __global const uchar *r = dsq + (s < n_seq ? seq_off[s] : 0);
    for (int w = 0; w < words; w++) {
        uint word = 0u;
        for (int j = 0; j < 4; j++) {
            const int i = 4 * w + j;
            word |= (uint) (i < L ? r[i] : (uchar) 31) << (8 * j);
        }
        dst[base + (long) w * lanes + l] = word;
    }
}

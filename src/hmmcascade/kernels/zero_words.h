/* zero_words: p[0 .. n) = 0 (a work-item a word), where clEnqueueFillBuffer was (Device.zero); in the
 * programs whose buffers the host zeroes (domains.cl part 0, null2.cl). */
__kernel void zero_words(__global uint *p, const uint n)
{
    const size_t i = get_global_id(0);
    if (i < n) p[i] = 0u;
}

/*
 * The per-thread sample recorder: where every probe's hot loop writes.
 *
 * Allocated and touched at start-up (recorder_alloc), cleared before each
 * run (recorder_reset, before the start gate); recorder_record does no
 * allocation, locking, formatting or I/O. It keeps what the native recorder
 * (src/measure/recorder.rs) keeps, in the same shapes, so the host stores it
 * unchanged:
 *
 * - a histogram with the native geometry (hdrhistogram, lowest 1, highest
 *   2^47 ns, 3 significant digits): values below 2048 ns in their own bucket,
 *   a value v >= 2048 in a bucket 2^(floor(log2 v) - 10) wide (< 0.1 %);
 *   values above 2^47 in the bucket of 2^47 (max kept exactly);
 * - exact count, min, max, sum and sum of squares (128-bit, saturating);
 * - the tail: the tail_k largest samples with time, CPU and sequence number,
 *   a min-heap (earlier samples rank higher among equal latencies);
 * - per-second count/min/max/sum in slots sized from the duration;
 * - overruns (a missed period is counted, never skipped).
 * Invariant: the bucket counts sum to count; every sample is in exactly one
 * bucket and one slot.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agent.h"

static int msb64(uint64_t v) /* v > 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll((unsigned long long)v);
#else
    int m = 0;
    while (v >>= 1)
        m++;
    return m;
#endif
}

size_t hist_index(uint64_t v)
{
    int m, b;
    if (v < HIST_EXACT)
        return (size_t)v;
    if (v > ((uint64_t)1 << HIST_TOP_BIT))
        v = (uint64_t)1 << HIST_TOP_BIT;
    m = msb64(v);
    b = m - 10;                        /* bucket width 2^b, b >= 1 */
    return (size_t)(HIST_EXACT + (size_t)(b - 1) * 1024u + (size_t)((v >> b) - 1024u));
}

uint64_t hist_lo(size_t idx)
{
    size_t b;
    if (idx < HIST_EXACT)
        return (uint64_t)idx;
    b = (idx - HIST_EXACT) / 1024u + 1u;
    return ((uint64_t)1024u + (uint64_t)((idx - HIST_EXACT) % 1024u)) << b;
}

uint64_t hist_hi(size_t idx)
{
    size_t b;
    if (idx < HIST_EXACT)
        return (uint64_t)idx;
    b = (idx - HIST_EXACT) / 1024u + 1u;
    return hist_lo(idx) + ((uint64_t)1 << b) - 1u;
}

void u128_add64(u128 *a, uint64_t v)
{
    uint64_t lo = a->lo + v;
    if (lo < a->lo) {
        if (a->hi == UINT64_MAX) {
            a->lo = UINT64_MAX; /* saturate */
            return;
        }
        a->hi++;
    }
    a->lo = lo;
}

void u128_add_sq(u128 *a, uint64_t v)
{
    /* v*v as 128 bits from 32-bit halves. */
    uint64_t x0 = v & 0xFFFFFFFFu, x1 = v >> 32;
    uint64_t p00 = x0 * x0, p01 = x0 * x1, p11 = x1 * x1;
    uint64_t mid = p01 << 1;           /* 2*x0*x1 may need 65 bits */
    uint64_t mid_carry = p01 >> 63;
    uint64_t lo = p00 + (mid << 32);
    uint64_t hi = p11 + (mid >> 32) + (mid_carry << 32) + (lo < p00 ? 1u : 0u);
    uint64_t nlo = a->lo + lo;
    uint64_t t = hi + (nlo < a->lo ? 1u : 0u); /* hi <= 2^64 - 2: no wrap */
    uint64_t nhi = a->hi + t;
    if (nhi < a->hi) {
        a->hi = a->lo = UINT64_MAX; /* saturate, as natively */
        return;
    }
    a->hi = nhi;
    a->lo = nlo;
}

size_t u128_dec(u128 v, char *buf)
{
    /* Repeated division by 10 over four 32-bit limbs. */
    uint32_t limb[4];
    char t[48];
    size_t n = 0, i;
    limb[0] = (uint32_t)(v.hi >> 32);
    limb[1] = (uint32_t)v.hi;
    limb[2] = (uint32_t)(v.lo >> 32);
    limb[3] = (uint32_t)v.lo;
    do {
        uint64_t rem = 0;
        int k, zero = 1;
        for (k = 0; k < 4; k++) {
            uint64_t cur = (rem << 32) | limb[k];
            limb[k] = (uint32_t)(cur / 10u);
            rem = cur % 10u;
            if (limb[k])
                zero = 0;
        }
        t[n++] = (char)('0' + rem);
        if (zero)
            break;
    } while (1);
    for (i = 0; i < n; i++)
        buf[i] = t[n - 1 - i];
    buf[n] = 0;
    return n;
}

int recorder_alloc(recorder *r, size_t tail_cap, size_t slots_cap)
{
    size_t i;
    memset(r, 0, sizeof *r);
    r->hist = calloc(HIST_LEN, sizeof *r->hist);
    r->tail = calloc(tail_cap + 1, sizeof *r->tail);
    r->slots = calloc(slots_cap, sizeof *r->slots);
    if (!r->hist || !r->tail || !r->slots)
        return -1;
    r->tail_cap = tail_cap;
    r->slots_cap = slots_cap;
    /* Touch every page now (calloc may hand out untouched zero pages). */
    for (i = 0; i < HIST_LEN; i += 512)
        ((volatile uint32_t *)r->hist)[i] = 0;
    for (i = 0; i <= tail_cap; i++)
        ((volatile uint64_t *)&r->tail[i].lat)[0] = 0;
    for (i = 0; i < slots_cap; i++)
        ((volatile uint64_t *)&r->slots[i].min)[0] = UINT64_MAX;
    return 0;
}

void recorder_reset(recorder *r, uint64_t duration_ns, size_t tail_k)
{
    uint64_t secs = duration_ns / 1000000000u + (duration_ns % 1000000000u ? 1u : 0u);
    uint64_t width;
    size_t i;
    if (secs == 0)
        secs = 1;
    /* The native width: ceil(secs / 100000), at least 1 s. */
    width = secs / 100000u + (secs % 100000u ? 1u : 0u);
    if (width == 0)
        width = 1;
    /* Widen until secs/width + 2 slots fit what was preallocated. */
    while (secs / width + 2u > r->slots_cap)
        width++;
    memset(r->hist, 0, HIST_LEN * sizeof *r->hist);
    r->n_wraps = 0;
    r->count = r->overruns = r->max = 0;
    r->late_starts = 0;
    r->has_late_starts = 0;
    r->min = UINT64_MAX;
    r->sum.hi = r->sum.lo = r->sumsq.hi = r->sumsq.lo = 0;
    if (tail_k == 0)
        tail_k = 1;
    r->tail_k = tail_k > r->tail_cap ? r->tail_cap : tail_k;
    r->tail_len = 0;
    r->slot_width_ns = width * 1000000000u;
    r->n_slots = (size_t)(secs / width + 2u);
    for (i = 0; i < r->n_slots; i++) {
        r->slots[i].count = r->slots[i].max = r->slots[i].sum = 0;
        r->slots[i].min = UINT64_MAX;
    }
    AT_STORE_RELAXED(&r->live_samples, (uint64_t)0);
    AT_STORE_RELAXED(&r->live_overruns, (uint64_t)0);
    AT_STORE_RELAXED(&r->live_max, (uint64_t)0);
    r->error = NULL;
    r->has_signed = 0;
    r->sgn.n = 0;
    r->sgn.min = INT64_MAX;
    r->sgn.max = INT64_MIN;
    r->sgn.sum = 0;
    r->n_setup = 0;
    r->note = NULL;
    r->has_faults = 0;
    r->cpu = -1;
    r->thread = 0;
    r->interval_ns = 0;
    r->variant[0] = 0;
}

/* Heap order: a ranks below b (a is "smaller"). */
static int below(const rec_sample *a, const rec_sample *b)
{
    return a->lat < b->lat || (a->lat == b->lat && a->seq > b->seq);
}

static void sift_down(rec_sample *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        rec_sample t;
        if (l < n && below(&h[l], &h[m]))
            m = l;
        if (r < n && below(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void push_tail(recorder *r, uint64_t lat, uint64_t at, uint64_t seq)
{
    rec_sample s;
    s.lat = lat;
    s.at = at;
    s.seq = seq;
    s.cpu = (int32_t)port_current_cpu();
    if (r->tail_len < r->tail_k) {
        size_t i = r->tail_len++;
        r->tail[i] = s;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            rec_sample t;
            if (!below(&r->tail[i], &r->tail[p]))
                break;
            t = r->tail[i];
            r->tail[i] = r->tail[p];
            r->tail[p] = t;
            i = p;
        }
    } else {
        r->tail[0] = s; /* replaces the smallest kept (it is larger) */
        sift_down(r->tail, r->tail_len, 0);
    }
}

/* A 32-bit count wrapped (4 294 967 296 samples in one bucket): keep the
 * carry. Out of carry slots (16 buckets each past 2^32 samples): stop
 * counting into the bucket array and say so (never silently). */
static void hist_wrap(recorder *r, size_t idx)
{
    int i;
    for (i = 0; i < r->n_wraps; i++)
        if (r->wraps[i].idx == idx) {
            r->wraps[i].n++;
            return;
        }
    if (r->n_wraps < HIST_WRAPS) {
        r->wraps[r->n_wraps].idx = (uint32_t)idx;
        r->wraps[r->n_wraps].n = 1;
        r->n_wraps++;
        return;
    }
    r->hist[idx] = UINT32_MAX;
    if (!r->error)
        r->error = "histogram carry table full: a bucket count is capped";
}

uint64_t hist_count(const recorder *r, size_t idx)
{
    uint64_t c = r->hist[idx];
    int i;
    for (i = 0; i < r->n_wraps; i++)
        if (r->wraps[i].idx == idx)
            c += (uint64_t)r->wraps[i].n << 32;
    return c;
}

void recorder_record(recorder *r, uint64_t lat, uint64_t at, uint64_t seq)
{
    size_t idx;
    rec_slot *s;
    idx = hist_index(lat);
    if (++r->hist[idx] == 0)
        hist_wrap(r, idx);
    r->count++;
    if (lat < r->min)
        r->min = lat;
    if (lat > r->max) {
        r->max = lat;
        AT_STORE_RELAXED(&r->live_max, lat);
    }
    u128_add64(&r->sum, lat);
    u128_add_sq(&r->sumsq, lat);
    idx = (size_t)(at / r->slot_width_ns);
    if (idx >= r->n_slots)
        idx = r->n_slots - 1;
    s = &r->slots[idx];
    s->count++;
    s->sum += lat;
    if (lat < s->min)
        s->min = lat;
    if (lat > s->max)
        s->max = lat;
    if (r->tail_len < r->tail_k || lat > r->tail[0].lat)
        push_tail(r, lat, at, seq);
    AT_STORE_RELAXED(&r->live_samples, r->count);
}

void recorder_add_overruns(recorder *r, uint64_t n)
{
    r->overruns += n;
    AT_STORE_RELAXED(&r->live_overruns, r->overruns);
}

void recorder_add_setup(recorder *r, const char *step, const char *outcome, const char *detail)
{
    setup_step *s;
    if (!r || r->n_setup >= MAX_SETUP)
        return;
    s = &r->setup[r->n_setup++];
    copy_text(s->step, sizeof s->step, step);
    copy_text(s->outcome, sizeof s->outcome, outcome);
    copy_text(s->detail, sizeof s->detail, detail);
}

void recorder_set_error(recorder *r, const char *what, int err)
{
    size_t k;
    const char *e = errno_name(err);
    if (r->error)
        return; /* the first error stays */
    copy_text(r->error_buf, sizeof r->error_buf, what);
    k = strlen(r->error_buf);
    if (k + 3 < sizeof r->error_buf) {
        memcpy(r->error_buf + k, ": ", 2);
        copy_text(r->error_buf + k + 2, sizeof r->error_buf - k - 2, e);
    }
    r->error = r->error_buf;
}

void recorder_finish(recorder *r)
{
    /* Heap sort with the min-heap: the smallest goes to the end each step,
     * leaving the array largest first (earlier seq first among equals). */
    size_t n = r->tail_len;
    while (n > 1) {
        rec_sample t = r->tail[0];
        r->tail[0] = r->tail[n - 1];
        r->tail[n - 1] = t;
        n--;
        sift_down(r->tail, n, 0);
    }
}

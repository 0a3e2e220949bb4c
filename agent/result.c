/*
 * rtscope-agent: result blocks and error lines (docs/agent.md "result
 * block", "error").
 *
 * A block is result, its setup lines, its note, then the hist/tail/sec lists
 * (split over as many lines as the 1024-byte limit needs) and end; the
 * locked writer keeps each line whole, the runner sends one block at a time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include "agent.h"

void send_error(long id, const char *code, long line, const char *msg)
{
    line_out l;
    out_begin(&l, "error");
    out_id(&l, id);
    out_str(&l, "code", code);
    if (line > 0)
        out_u64(&l, "line", (uint64_t)line);
    else
        out_str(&l, "line", "-");
    out_str(&l, "msg", msg);
    out_send(&l);
}

static void result_line(long id, int n, const char *probe, const recorder *r, size_t worst, int stopped,
                        size_t n_hist, size_t n_sec)
{
    line_out l;
    char a[48], item[160];
    out_begin(&l, "result");
    out_id(&l, id);
    out_u64(&l, "n", (uint64_t)n);
    out_str(&l, "probe", probe);
    out_str(&l, "variant", r->variant[0] ? r->variant : "-");
    out_u64(&l, "thread", (uint64_t)r->thread);
    if (r->cpu >= 0)
        out_u64(&l, "cpu", (uint64_t)r->cpu);
    else
        out_str(&l, "cpu", "-");
    out_u64(&l, "interval_ns", r->interval_ns);
    out_u64(&l, "samples", r->count);
    out_u64(&l, "overruns", r->overruns);
    out_u64(&l, "min_ns", r->count ? r->min : 0);
    out_u64(&l, "max_ns", r->max);
    u128_dec(r->sum, a);
    out_str(&l, "sum", a);
    u128_dec(r->sumsq, a);
    out_str(&l, "sumsq", a);
    out_u64(&l, "hist", n_hist);
    out_u64(&l, "tail", r->tail_len);
    out_u64(&l, "tail_k", r->tail_k);
    out_u64(&l, "worst", worst);
    out_u64(&l, "sec", n_sec);
    out_u64(&l, "width_s", r->slot_width_ns / 1000000000u);
    out_u64(&l, "setup", (uint64_t)r->n_setup);
    out_u64(&l, "stopped", (uint64_t)(stopped ? 1 : 0));
    if (r->error)
        out_str(&l, "error", r->error);
    out_u64(&l, "notes", r->note ? 1u : 0u);
    if (r->has_late_starts)
        out_u64(&l, "late_starts", r->late_starts);
    if (r->has_faults) {
        snprintf(a, sizeof a, "%llu:%llu", (unsigned long long)r->fault_minor, (unsigned long long)r->fault_major);
        out_str(&l, "faults", a);
    }
    if (r->has_signed) {
        snprintf(item, sizeof item, "%llu:%lld:%lld:%lld", (unsigned long long)r->sgn.n,
                 (long long)(r->sgn.n ? r->sgn.min : 0), (long long)(r->sgn.n ? r->sgn.max : 0),
                 (long long)r->sgn.sum);
        out_str(&l, "signed", item);
    }
    out_send(&l);
}

static void setup_and_note_lines(long id, int n, const recorder *r)
{
    line_out l;
    int i;
    for (i = 0; i < r->n_setup; i++) {
        out_begin(&l, "setup");
        out_id(&l, id);
        out_u64(&l, "n", (uint64_t)n);
        out_str(&l, "step", r->setup[i].step);
        out_str(&l, "outcome", r->setup[i].outcome);
        out_str(&l, "detail", r->setup[i].detail);
        out_send(&l);
    }
    if (r->note) {
        /* On its own line: an escaped note can be long. */
        out_begin(&l, "note");
        out_id(&l, id);
        out_u64(&l, "n", (uint64_t)n);
        out_str(&l, "text", r->note);
        out_send(&l);
    }
}

static void hist_lines(long id, int n, const recorder *r)
{
    line_out l;
    char item[160];
    size_t i, top = hist_index((uint64_t)1 << HIST_TOP_BIT);
    list_begin(&l, "hist", id, n, "b");
    for (i = 0; i < HIST_LEN; i++) {
        uint64_t hi;
        if (!r->hist[i])
            continue;
        hi = hist_hi(i);
        if (i == top && r->max > hi)
            hi = r->max; /* saturated values: the top bucket reaches the max */
        snprintf(item, sizeof item, "%llu:%llu:%llu", (unsigned long long)hist_lo(i),
                 (unsigned long long)hi, (unsigned long long)hist_count(r, i));
        list_item(&l, item);
    }
    list_end(&l);
}

static void tail_and_sec_lines(long id, int n, const recorder *r)
{
    line_out l;
    char item[160], c[16];
    size_t i;
    list_begin(&l, "tail", id, n, "s");
    for (i = 0; i < r->tail_len; i++) {
        const rec_sample *t = &r->tail[i];
        if (t->cpu >= 0)
            snprintf(c, sizeof c, "%d", (int)t->cpu);
        else
            snprintf(c, sizeof c, "-");
        snprintf(item, sizeof item, "%llu:%llu:%llu:%s", (unsigned long long)t->lat,
                 (unsigned long long)t->at, (unsigned long long)t->seq, c);
        list_item(&l, item);
    }
    list_end(&l);
    list_begin(&l, "sec", id, n, "s");
    for (i = 0; i < r->n_slots; i++) {
        const rec_slot *s = &r->slots[i];
        if (!s->count)
            continue;
        snprintf(item, sizeof item, "%llu:%llu:%llu:%llu:%llu",
                 (unsigned long long)(i * (r->slot_width_ns / 1000000000u)), (unsigned long long)s->count,
                 (unsigned long long)s->min, (unsigned long long)s->max, (unsigned long long)s->sum);
        list_item(&l, item);
    }
    list_end(&l);
}

void send_result(long id, int n, const char *probe, recorder *r, size_t worst, int stopped)
{
    line_out l;
    size_t i, n_hist = 0, n_sec = 0;
    recorder_finish(r);
    for (i = 0; i < HIST_LEN; i++)
        if (r->hist[i])
            n_hist++;
    for (i = 0; i < r->n_slots; i++)
        if (r->slots[i].count)
            n_sec++;
    result_line(id, n, probe, r, worst, stopped, n_hist, n_sec);
    setup_and_note_lines(id, n, r);
    hist_lines(id, n, r);
    tail_and_sec_lines(id, n, r);
    out_begin(&l, "end");
    out_id(&l, id);
    out_u64(&l, "n", (uint64_t)n);
    out_send(&l);
}

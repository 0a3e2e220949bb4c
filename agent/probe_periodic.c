/*
 * The periodic probe: periodic tasks at each of periods_ns (default 10, 30,
 * 50 ms), one variant per period, run one after another, each for its share
 * of the duration; as src/measure/periodic.rs.
 *
 * Each task is the timer method (timer_loop: absolute clock_nanosleep,
 * overruns counted) and records two things:
 * - variant PERIOD (e.g. 10ms): the wake-up latency, now - due;
 * - variant PERIOD/period-error: the period error, the actual start-to-start
 *   interval minus the nominal one, = latency_k - latency_(k-1) (exact, also
 *   across an overrun: due then jumps by whole periods). Signed: the
 *   histogram holds |error|, the result's `signed` the signed count, min,
 *   max and sum.
 * Invariants: samples + overruns = periods (latency entry); the error entry
 * has samples - 1 samples per thread, and the CPU of its thread's latency
 * entry (`-` for both when the thread could not be pinned).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include "agent.h"

typedef struct {
    recorder *rec, *err;
    int index, cpu;
    const plan *p;
    uint64_t period, duration;
    gate *g;
    int have_prev;
    uint64_t prev;
} periodic_arg;

static gate g;
static periodic_arg args[MAX_THREADS];

static void on_sample(void *c, uint64_t lat, uint64_t at, uint64_t seq)
{
    periodic_arg *a = c;
    if (a->have_prev) {
        int64_t e = (int64_t)lat - (int64_t)a->prev;
        recorder *r = a->err;
        recorder_record(r, e < 0 ? (uint64_t)0 - (uint64_t)e : (uint64_t)e, at, seq - 1);
        r->sgn.n++;
        if (e < r->sgn.min)
            r->sgn.min = e;
        if (e > r->sgn.max)
            r->sgn.max = e;
        r->sgn.sum += e;
    }
    a->prev = lat;
    a->have_prev = 1;
}

static void job(void *x)
{
    periodic_arg *a = x;
    int rc;
    rt_setup(a->rec, a->index, a->cpu, a->p->policy, a->p->priority);
    a->err->cpu = a->rec->cpu; /* not pinned (rt_setup said -1): both say cpu=- */
    live_register(a->rec);
    gate_pass(a->g, a->rec);
    rc = timer_loop(a->rec, a->period, a->duration, a->p->iterations, on_sample, a);
    faults_end(a->rec);
    if (rc)
        recorder_set_error(a->rec, "clock_nanosleep failed", rc);
}

static int workers(const plan *p)
{
    return p->threads;
}

static int recorders(const plan *p)
{
    return 2 * p->threads;
}

static int run(vrun *v, char *err, size_t errn)
{
    const plan *p = v->p;
    int i, t = p->threads, k;
    uint64_t period = 0;
    static int inited;
    (void)err;
    (void)errn;
    for (k = 0; k < p->n_variants; k++)
        if (v->variant && p->variants[k] == v->variant)
            period = p->periods[k];
    if (period == 0)
        period = p->periods[0];
    if (!inited) {
        gate_init(&g);
        inited = 1;
    }
    gate_arm(&g, t);
    for (i = 0; i < t; i++) {
        periodic_arg *a = &args[i];
        a->rec = v->recs[i];
        a->err = v->recs[t + i];
        a->index = i;
        a->cpu = p->cpus[i % p->n_cpus];
        a->p = p;
        a->period = period;
        a->duration = v->duration_ns;
        a->g = &g;
        a->have_prev = 0;
        a->rec->thread = a->err->thread = i;
        a->rec->cpu = a->err->cpu = a->cpu;
        a->rec->interval_ns = a->err->interval_ns = period;
        snprintf(a->rec->variant, sizeof a->rec->variant, "%s", v->variant ? v->variant : "");
        snprintf(a->err->variant, sizeof a->err->variant, "%s/period-error", v->variant ? v->variant : "");
        a->err->has_signed = 1;
        pool_run(i, job, a);
    }
    for (i = 0; i < t; i++)
        pool_join(i);
    v->n_out = 2 * t;
    return 0;
}

const probe_desc probe_periodic = {
    .name = "periodic",
    .uses_periods = 1,
    .workers = workers,
    .recorders = recorders,
    .run = run,
};

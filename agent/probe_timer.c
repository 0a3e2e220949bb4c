/*
 * The timer probe: wake-up latency of a periodic absolute timer.
 *
 * cyclictest's method with missed periods counted, as src/measure/timer.rs.
 * Each measuring thread sleeps with clock_nanosleep(CLOCK_MONOTONIC,
 * TIMER_ABSTIME, due), reads the clock on wake-up and records
 * latency = now - due. Then due += interval; if the wake-up was so late that
 * the next due time has already passed, every period skipped is counted as
 * an overrun (only those inside the run) and due moves past now.
 * A period already due when the loop is about to sleep (the last wake-up
 * and its recording took the whole period) is a late start: no wake-up to
 * time (the sleep would return at once: a "latency" of the clock read), so
 * no sample; it is missed, counted in overruns and, apart, in late_starts
 * (the result's late_starts=, docs/probes.md), as src/measure/timer.rs.
 * Invariant: samples + overruns = the number of periods in the run, exactly,
 * however late the wake-ups were (a run ended by stop: the periods up to
 * the stop); late_starts <= overruns.
 */
#define _POSIX_C_SOURCE 200809L
#include "agent.h"

int timer_loop(recorder *rec, uint64_t interval, uint64_t duration, uint64_t max_samples,
               sample_cb cb, void *ctx)
{
    uint64_t start = now_ns();
    uint64_t end = start + duration;
    uint64_t due = start + interval;
    uint64_t seq = 0;
    rec->has_late_starts = 1;
    while (due <= end && seq < max_samples && !AT_LOAD_RELAXED(&g_stop)) {
        uint64_t now, lat;
        int rc;
#ifdef RTSCOPE_TEST_LATE_START
        /* Test build: every Nth period starts past its due time. */
        if (seq > 0 && seq % RTSCOPE_TEST_LATE_START == 0 && rec->late_starts < seq / RTSCOPE_TEST_LATE_START)
            while (now_ns() <= due)
                ;
#endif
        now = now_ns();
        if (now >= due) {
            /* A late start: already due as the loop is about to sleep. */
            uint64_t missed = (now - due) / interval + 1, in_run = (end - due) / interval + 1;
            if (missed > in_run)
                missed = in_run;
            recorder_add_overruns(rec, missed);
            rec->late_starts += missed;
            due += ((now - due) / interval + 1) * interval;
            continue;
        }
        rc = sleep_until_or_stop(due);
        if (rc < 0)
            break; /* stop during a long interval */
        if (rc != 0)
            return rc;
        now = now_ns();
        lat = now > due ? now - due : 0;
        recorder_record(rec, lat, now - start, seq);
        if (cb)
            cb(ctx, lat, now - start, seq);
        seq++;
        due += interval;
        if (now >= due) {
            uint64_t missed = (now - due) / interval + 1;
            uint64_t in_run = 0;
            if (due <= end) {
                in_run = (end - due) / interval + 1;
                if (in_run > missed)
                    in_run = missed;
            }
            recorder_add_overruns(rec, in_run);
            due += missed * interval;
        }
    }
    return 0;
}

typedef struct {
    recorder *rec;
    int index, cpu;
    const plan *p;
    uint64_t duration;
    gate *g;
} timer_arg;

static gate g;
static timer_arg args[MAX_THREADS];

static void timer_job(void *a)
{
    timer_arg *t = a;
    int rc;
    rt_setup(t->rec, t->index, t->cpu, t->p->policy, t->p->priority);
    live_register(t->rec);
    gate_pass(t->g, t->rec);
    rc = timer_loop(t->rec, t->p->interval_ns, t->duration, t->p->iterations, NULL, NULL);
    faults_end(t->rec);
    if (rc)
        recorder_set_error(t->rec, "clock_nanosleep failed", rc);
}

static int workers(const plan *p)
{
    return p->threads;
}

static int run(vrun *v, char *err, size_t errn)
{
    const plan *p = v->p;
    int i;
    static int inited;
    (void)err;
    (void)errn;
    if (!inited) {
        gate_init(&g);
        inited = 1;
    }
    gate_arm(&g, p->threads);
    for (i = 0; i < p->threads; i++) {
        timer_arg *t = &args[i];
        t->rec = v->recs[i];
        t->index = i;
        t->cpu = p->cpus[i % p->n_cpus];
        t->p = p;
        t->duration = v->duration_ns;
        t->g = &g;
        t->rec->thread = i;
        t->rec->cpu = t->cpu;
        t->rec->interval_ns = p->interval_ns;
        pool_run(i, timer_job, t);
    }
    for (i = 0; i < p->threads; i++)
        pool_join(i);
    v->n_out = p->threads;
    return 0;
}

const probe_desc probe_timer = {
    .name = "timer",
    .workers = workers,
    .recorders = workers,
    .run = run,
};

/*
 * rtscope-agent: the runner and the reporter.
 *
 * The runner runs one plan at a time: the built-in load, a warm-up pass
 * (samples discarded) and the measured pass, each variant's measuring loops
 * handed to pool workers; a variant's result blocks are sent when it ends,
 * then `done`. The reporter sends `progress` lines from the registered
 * recorders' live counters (atomics, copied under the live view's lock and
 * written without it, so a slow host never holds up a measuring thread).
 * Measuring threads only measure.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include "agent.h"

#ifdef ALLOC_CHECK
extern volatile long alloc_count_after_start;
#endif

volatile int g_stop;

/* ---- live view for the reporter, and the stall watch ---- */
static pthread_mutex_t live_m = PTHREAD_MUTEX_INITIALIZER;
static recorder *live_recs[2 * MAX_THREADS];
static int live_n;
static long live_id = -1;
static char live_variant[40];
static uint64_t live_start;
static int live_progress_ms = 250;

/*
 * The stall watch. A variant whose threads stop counting (samples +
 * overruns unchanged) for STALL_MIN_NS or 50 of its intervals, whichever is
 * longer, is stalled: a wake-up the system lost (NuttX's sigwaitinfo missing
 * a pending signal), a thread starved by a higher-priority one. Progress
 * lines alone would keep the host waiting forever, so the watch raises stop
 * (the loops that can end do), gives the stuck threads STALL_GRACE_NS, then
 * abandons them (pool_abandon): the variant's results go out with what was
 * measured, stopped=1 and a failed set-up step "stall watch" that says so,
 * and the plan ends with done status=stopped. A plan while a stuck thread
 * still runs is refused (error code=internal).
 */
#define STALL_MIN_NS 5000000000ull
#define STALL_GRACE_NS 1000000000ull
static int watch_on;
static uint64_t watch_count, watch_change, watch_limit;
static volatile int stalled;     /* set by the reporter, read by the runner */
static uint64_t stall_gap, stall_count, stalled_at;

void live_register(recorder *r)
{
    pthread_mutex_lock(&live_m);
    if (live_n < (int)(sizeof live_recs / sizeof live_recs[0]))
        live_recs[live_n++] = r;
    pthread_mutex_unlock(&live_m);
}

static void live_begin(long id, const char *variant, int progress_ms, uint64_t interval)
{
    pthread_mutex_lock(&live_m);
    live_n = 0;
    live_id = id;
    snprintf(live_variant, sizeof live_variant, "%s", variant ? variant : "-");
    live_start = now_ns();
    live_progress_ms = progress_ms;
    watch_on = 1;
    watch_count = UINT64_MAX;
    watch_change = live_start;
    watch_limit = interval > STALL_MIN_NS / 50u ? 50u * interval : STALL_MIN_NS;
    pthread_mutex_unlock(&live_m);
}

static void live_end(void)
{
    pthread_mutex_lock(&live_m);
    live_n = 0;
    live_id = -1;
    watch_on = 0;
    pthread_mutex_unlock(&live_m);
}

/* Under live_m, every reporter tick: the counts moved, or for how long not.
 * 1: the grace after a stall is over, abandon the stuck threads. */
static int watch(uint64_t count, uint64_t now)
{
    if (!watch_on)
        return 0;
    if (count != watch_count) {
        watch_count = count;
        watch_change = now;
    } else if (!AT_LOAD(&stalled) && now - watch_change > watch_limit) {
        stall_gap = now - watch_change;
        stall_count = count;
        stalled_at = now;
        AT_STORE(&stalled, 1);
        AT_STORE(&g_stop, 1);
    }
    return AT_LOAD(&stalled) && now - stalled_at > STALL_GRACE_NS;
}

void *reporter_main(void *unused)
{
    line_out l;
    uint64_t next, last = 0;
    (void)unused;
    own_sched_enter();
    next = now_ns();
    for (;;) {
        uint64_t s = 0, o = 0, m = 0, now, start;
        int i, give_up;
        next += 50000000u; /* wake every 50 ms; send at progress_ms */
        sleep_until_ns(next);
        pthread_mutex_lock(&live_m);
        now = now_ns();
        start = live_start; /* under the lock: live_begin sets it */
        for (i = 0; i < live_n; i++) {
            uint64_t x = AT_LOAD_RELAXED(&live_recs[i]->live_max);
            s += AT_LOAD_RELAXED(&live_recs[i]->live_samples);
            o += AT_LOAD_RELAXED(&live_recs[i]->live_overruns);
            if (x > m)
                m = x;
        }
        give_up = watch(s + o, now);
        if (live_id >= 0 && live_n > 0 && live_progress_ms > 0 && now - last >= (uint64_t)live_progress_ms * 1000000u) {
            last = now;
            out_begin(&l, "progress");
            out_id(&l, live_id);
            out_str(&l, "variant", live_variant);
            out_u64(&l, "samples", s);
            out_u64(&l, "overruns", o);
            out_u64(&l, "max_ns", m);
            out_u64(&l, "elapsed_ns", now - start);
            /* Sent under live_m: live_end waits for it, so a variant's
             * progress never follows its results or its plan's done. */
            out_send(&l);
        }
        pthread_mutex_unlock(&live_m);
        if (give_up)
            pool_abandon();
    }
    return NULL;
}

/* ---- the runner ---- */

static pthread_mutex_t run_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_c = PTHREAD_COND_INITIALIZER;
static plan cur;
/* finishing: the runner has measured and is sending its plan's "done"; a
 * plan that arrives then (the host sends the next one as soon as it reads
 * "done") waits for it instead of being refused as busy. */
static int run_pending, running, finishing;

/* As natively (spawn_measuring): tail_capacity(the probe's duration,
 * interval), a tenth of the planned samples + 64, at most 1088, never below
 * --worst; slots sized from the probe's duration too. */
static void reset_recorders(const plan *p, const probe_desc *pd, int v, uint64_t total)
{
    uint64_t iv = pd->uses_periods ? p->periods[v] : p->interval_ns;
    uint64_t tk = p->tail;
    int i;
    if (tk == 0) {
        tk = total / iv / 10u + 64u;
        if (tk > TAIL_K_DEFAULT)
            tk = TAIL_K_DEFAULT;
        if (tk < p->worst)
            tk = p->worst;
    }
    for (i = 0; i < g_agent.n_recs; i++)
        recorder_reset(g_agent.recs[i], total ? total : 1, (size_t)tk);
}

static void send_begin(const plan *p, const probe_desc *pd, const char *name, uint64_t duration)
{
    line_out l;
    out_begin(&l, "begin");
    out_id(&l, p->id);
    out_str(&l, "variant", name ? name : "-");
    out_u64(&l, "threads", (uint64_t)(pd->uses_periods ? pd->recorders(p) / 2 : pd->recorders(p)));
    out_u64(&l, "duration_ns", duration);
    out_send(&l);
}

/* The stall, as a failed set-up step of each of the variant's results. */
static void note_stall(recorder *r)
{
    char detail[SETUP_TEXT];
    snprintf(detail, sizeof detail, "no event for %llu ms after %llu; stopped",
             (unsigned long long)(stall_gap / 1000000u), (unsigned long long)stall_count);
    recorder_add_setup(r, "stall watch", "failed", detail);
}

/*
 * A variant refused at run time (its probe's set-up failed: a call the
 * system does not accept, e.g. pthread_mutexattr_setprotocol ENOTSUP) is
 * refused alone: a plan-wide set-up step `refused[PROBE:VARIANT]`, failed,
 * naming the call and errno, and its siblings are measured. A plan none of
 * whose variants ran fails as a whole (error code=internal, done
 * status=failed), as one without variants does. docs/agent.md "Variants
 * refused at run time".
 */
static unsigned char refused[MAX_VARIANTS];
static int n_refused;

static void refuse_variant(const plan *p, int v, const char *why)
{
    line_out l;
    char step[80];
    refused[v] = 1;
    n_refused++;
    snprintf(step, sizeof step, "refused[%s:%s]", p->probe, p->variants[v]);
    out_begin(&l, "setup");
    out_id(&l, p->id);
    out_str(&l, "n", "-");
    out_str(&l, "step", step);
    out_str(&l, "outcome", "failed");
    out_str(&l, "detail", why);
    out_send(&l);
}

static int run_pass(const plan *p, const probe_desc *pd, int warm, int *results, int *stopped, char *err, size_t errn)
{
    int v, i, nv = p->n_variants ? p->n_variants : 1;
    uint64_t total = warm ? p->warmup_ns : p->duration_ns;
    uint64_t share = total / (uint64_t)nv;
    for (v = 0; v < nv; v++) {
        vrun vr;
        const char *name = p->n_variants ? p->variants[v] : NULL;
        if (AT_LOAD(&g_stop)) {
            *stopped = 1;
            break;
        }
        if (p->n_variants && refused[v])
            continue; /* refused in the warm-up: said then */
        memset(&vr, 0, sizeof vr);
        vr.p = p;
        vr.variant = name;
        vr.duration_ns = share ? share : 1;
        vr.warm = warm;
        vr.recs = g_agent.recs;
        vr.max_recs = g_agent.n_recs;
        reset_recorders(p, pd, v, total);
        if (!warm)
            send_begin(p, pd, name, vr.duration_ns);
        live_begin(warm ? -1 : p->id, name, warm ? 0 : p->progress_ms, pd->uses_periods ? p->periods[v] : p->interval_ns);
        if (pd->run(&vr, err, errn) < 0) {
            live_end();
            if (!p->n_variants || n_refused + 1 >= nv)
                return -1; /* nothing of the plan can run */
            refuse_variant(p, v, err);
            continue;
        }
        live_end();
        if (AT_LOAD(&stalled) && warm) {
            snprintf(err, errn, "stalled in the warm-up: no sample for %llu ms (a wake-up lost by the system?)",
                     (unsigned long long)(stall_gap / 1000000u));
            return -1;
        }
        if (warm)
            continue;
        if (AT_LOAD(&stalled))
            for (i = 0; i < vr.n_out; i++)
                note_stall(vr.recs[i]);
        if (AT_LOAD(&g_stop))
            *stopped = 1;
        for (i = 0; i < vr.n_out; i++)
            send_result(p->id, (*results)++, p->probe, vr.recs[i], p->worst, *stopped);
    }
    return 0;
}

static void send_done(const plan *p, int rc, int stopped, int results, const char *err)
{
    line_out l;
    out_begin(&l, "done");
    out_id(&l, p->id);
    out_str(&l, "status", rc < 0 ? "failed" : (stopped || AT_LOAD(&g_stop)) ? "stopped" : "complete");
    out_u64(&l, "results", (uint64_t)results);
    if (rc < 0)
        out_str(&l, "msg", err);
#ifdef ALLOC_CHECK
    out_u64(&l, "allocs", (uint64_t)alloc_count_after_start);
#endif
    pthread_mutex_lock(&run_m);
    finishing = 1;
    pthread_mutex_unlock(&run_m);
    out_send(&l);
    pthread_mutex_lock(&run_m);
    running = 0;
    finishing = 0;
    pthread_cond_broadcast(&run_c);
    pthread_mutex_unlock(&run_m);
}

void *runner_main(void *unused)
{
    /* Load threads: the pool workers after the measuring ones and the 3 of
     * the pair senders / pi. */
    const int first_load = g_agent.max_threads + 3;
    (void)unused;
    own_sched_enter();
    for (;;) {
        plan *p = &cur;
        const probe_desc *pd;
        char err[160];
        int results = 0, stopped = 0, hogs, rc = 0;
        pthread_mutex_lock(&run_m);
        while (!run_pending)
            pthread_cond_wait(&run_c, &run_m);
        run_pending = 0;
        pthread_mutex_unlock(&run_m);
        pd = probe_named(p->probe);
        err[0] = 0;
        AT_STORE(&stalled, 0);
        memset(refused, 0, sizeof refused);
        n_refused = 0;
        hogs = load_start(p, first_load);
        if (p->warmup_ns > 0)
            rc = run_pass(p, pd, 1, &results, &stopped, err, sizeof err);
        if (rc == 0)
            rc = run_pass(p, pd, 0, &results, &stopped, err, sizeof err);
        load_stop(hogs, first_load);
        if (rc < 0)
            send_error(p->id, "internal", 0, err);
        send_done(p, rc, stopped, results, err);
    }
    return NULL;
}

int run_active(void)
{
    int r;
    pthread_mutex_lock(&run_m);
    r = running || run_pending;
    pthread_mutex_unlock(&run_m);
    return r;
}

/* Busy for a new plan: a plan is measuring or about to. One whose "done"
 * is being sent is waited for (a few µs), not refused: the host may have
 * read that "done" already. */
int run_busy_for_plan(void)
{
    int r;
    pthread_mutex_lock(&run_m);
    while (finishing && running)
        pthread_cond_wait(&run_c, &run_m);
    r = running || run_pending;
    pthread_mutex_unlock(&run_m);
    return r;
}

void run_wait_idle(void)
{
    pthread_mutex_lock(&run_m);
    while (running || run_pending)
        pthread_cond_wait(&run_c, &run_m);
    pthread_mutex_unlock(&run_m);
}

void run_submit(const plan *p, void (*announce)(const plan *p))
{
    pthread_mutex_lock(&run_m);
    cur = *p;
    AT_STORE(&g_stop, 0);
    announce(&cur);
    run_pending = 1;
    running = 1;
    pthread_cond_broadcast(&run_c);
    pthread_mutex_unlock(&run_m);
}

/*
 * The pi probe: priority inversion, and Rhealstone's deadlock-break time;
 * src/measure/pi.rs. Three threads on the plan's first CPU: high (H, at
 * the plan's priority, at least 3; records), medium (M, one below) and low
 * (L, two below), and one mutex with the variant's protocol. Per event:
 *
 *   L: sleeps to the next tick, locks the mutex, t0 = now, wakes H
 *   H: (preempts L) wakes M, locks the mutex -> blocks, L holds it
 *        none:    M (above L) runs its whole burst first, then L finishes
 *        inherit: L runs at H's priority, above M, and finishes
 *   L: computes for 20 us (the rest of its critical section), unlocks
 *   H: has the mutex: t1 = now; records t1 - t0; unlocks; waits again
 *   M: runs its burst (pi_burst_ns) now if it has not yet, then waits
 *
 * The sample is H's blocking time: from being made ready while wanting the
 * mutex to holding it. Variants: none (PTHREAD_PRIO_NONE: every sample is at
 * least M's burst), inherit (PTHREAD_PRIO_INHERIT), protect
 * (PTHREAD_PRIO_PROTECT, ceiling = H's priority), deadlock-break (inherit
 * with no critical section left after the wake: only the system's work to
 * resolve the conflict). Events are paced by the interval but never closer
 * than 2 x (burst + hold), so the threads use at most half of their CPU.
 * The wake-ups are POSIX semaphores. The protocols the system accepts are
 * tried once at start-up: a refused one is not announced (deadlock-break
 * is inherit's); one refused at run time refuses that variant only, naming
 * the call and errno (runner.c). Invariant: one sample per event L
 * started; shutdown: L ends the loop, sets done and wakes H and M, which see
 * it before blocking again.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "agent.h"

static const char *const variants[] = {"none", "inherit", "protect", "deadlock-break", NULL};

#define HOLD_NS 20000u

static pthread_mutex_t mtx;
static sem_t h_go, m_go;
static uint64_t t0, pace, hold, burst, share;
static int done;
static gate g;
static recorder scratch[2]; /* M's and L's set-up steps (no allocation) */

typedef struct {
    recorder *rec;
    int index, cpu, prio;
    const plan *p;
    int err;
    const char *what;
} pi_arg;

static pi_arg A[3];

static void wait_sem(sem_t *s)
{
    while (sem_wait(s) != 0 && errno == EINTR)
        ;
}

static void end_all(void)
{
    AT_STORE(&done, 1);
    sem_post(&h_go);
    sem_post(&m_go);
}

static void high(pi_arg *a)
{
    uint64_t start = now_ns(), seq = 0;
    int rc;
    for (;;) {
        uint64_t t1, s;
        wait_sem(&h_go);
        if (AT_LOAD(&done))
            return;
        sem_post(&m_go);
        if ((rc = pthread_mutex_lock(&mtx)) != 0) {
            a->err = rc, a->what = "pthread_mutex_lock";
            end_all();
            return;
        }
        t1 = now_ns();
        pthread_mutex_unlock(&mtx);
        s = AT_LOAD(&t0);
        recorder_record(a->rec, t1 > s ? t1 - s : 0, t1 - start, seq++);
    }
}

static void medium(void)
{
    for (;;) {
        wait_sem(&m_go);
        if (AT_LOAD(&done))
            return;
        spin_for(burst);
    }
}

static void low(pi_arg *a)
{
    uint64_t start = now_ns(), end = start + share, next = start + pace, sent = 0;
    int rc;
    for (;;) {
        uint64_t now;
        if (sent >= a->p->iterations || AT_LOAD_RELAXED(&g_stop) || next > end) {
            end_all();
            return;
        }
        if ((rc = sleep_until_or_stop(next)) < 0) {
            end_all();
            return;
        }
        if (rc != 0) {
            a->err = rc, a->what = "clock_nanosleep failed";
            end_all();
            return;
        }
        now = now_ns();
        next += pace;
        if (next <= now)
            next = now + pace;
        if (AT_LOAD(&done))
            return;
        if ((rc = pthread_mutex_lock(&mtx)) != 0) {
            a->err = rc, a->what = "pthread_mutex_lock";
            end_all();
            return;
        }
        AT_STORE(&t0, now_ns());
        sem_post(&h_go);
        spin_for(hold);
        pthread_mutex_unlock(&mtx);
        sent++;
    }
}

static void job(void *x)
{
    pi_arg *a = x;
    rt_setup(a->rec, a->index, a->cpu, a->p->policy, a->prio);
    if (a->index == 0)
        live_register(a->rec);
    gate_pass(&g, a->index == 0 ? a->rec : NULL);
    if (a->index == 0) {
        high(a);
        faults_end(a->rec);
    } else if (a->index == 1)
        medium();
    else
        low(a);
}

static int workers(const plan *p)
{
    (void)p;
    return 3;
}

static int recorders(const plan *p)
{
    (void)p;
    return 1;
}

static void fmt_ns(uint64_t ns, char *b, size_t n)
{
    if (ns % 1000000u == 0)
        snprintf(b, n, "%llums", (unsigned long long)(ns / 1000000u));
    else if (ns % 1000u == 0)
        snprintf(b, n, "%lluus", (unsigned long long)(ns / 1000u));
    else
        snprintf(b, n, "%lluns", (unsigned long long)ns);
}

/* The note: the protocol, the threads, the burst and the pace. */
static void pi_note(recorder *r, const plan *p, const char *variant, int prio)
{
    const char *what;
    char b1[24], b2[24], b3[24];
    what = strcmp(variant, "none") == 0
               ? "no priority protocol (PTHREAD_PRIO_NONE): the medium thread's burst runs while high waits, so every sample includes it"
           : strcmp(variant, "inherit") == 0
               ? "priority inheritance (PTHREAD_PRIO_INHERIT): low runs at high's priority while high waits"
           : strcmp(variant, "protect") == 0
               ? "priority ceiling (PTHREAD_PRIO_PROTECT, ceiling = high's priority): low runs at the ceiling while it holds the mutex"
               : "Rhealstone deadlock-break: priority inheritance with no critical section left after the wake, so a sample is the system's work to resolve the conflict";
    fmt_ns(burst, b1, sizeof b1);
    fmt_ns(hold, b2, sizeof b2);
    fmt_ns(pace, b3, sizeof b3);
    snprintf(r->note_buf, sizeof r->note_buf,
             "%s. Sample = high's blocking time, from being made ready while low holds the mutex to holding it. "
             "Threads high/medium/low at SCHED_%s %d/%d/%d on one CPU; medium burst %s, low's remaining critical section %s, one event every %s.%s",
             what, p->policy == POL_FIFO ? "FIFO" : p->policy == POL_RR ? "RR" : "OTHER", prio, prio - 1, prio - 2, b1, b2, b3,
             p->policy == POL_OTHER ? " The threads ran as SCHED_OTHER: without real-time priorities there is no inversion to measure." : "");
    r->note = r->note_buf;
}

static int protocol_of(const char *variant)
{
    return strcmp(variant, "none") == 0      ? PTHREAD_PRIO_NONE
           : strcmp(variant, "protect") == 0 ? PTHREAD_PRIO_PROTECT
                                             : PTHREAD_PRIO_INHERIT;
}

/* A mutex with protocol proto (ceiling: prio) into m: 0, or the errno of
 * the call that refused it, named in *call. */
static int make_mutex(pthread_mutex_t *m, int proto, int prio, const char **call)
{
    pthread_mutexattr_t ma;
    int rc;
    *call = "pthread_mutexattr_init";
    if ((rc = pthread_mutexattr_init(&ma)) != 0)
        return rc;
    *call = "pthread_mutexattr_setprotocol";
    rc = pthread_mutexattr_setprotocol(&ma, proto);
#ifdef RTSCOPE_TEST_NO_PROTECT
    if (proto == PTHREAD_PRIO_PROTECT) /* test build: a system without ceilings */
        rc = ENOTSUP;
#endif
    if (rc == 0 && proto == PTHREAD_PRIO_PROTECT) {
        *call = "pthread_mutexattr_setprioceiling";
        rc = pthread_mutexattr_setprioceiling(&ma, prio);
    }
    if (rc == 0) {
        *call = "pthread_mutex_init";
        rc = pthread_mutex_init(m, &ma);
    }
    pthread_mutexattr_destroy(&ma);
    return rc;
}

/* What the system accepts, tried once at start-up (before hello): a mutex
 * of each protocol, the ceiling at the lowest SCHED_FIFO priority. A
 * protocol it refuses is left out of the probe line (docs/agent.md §1);
 * deadlock-break is inherit's. The test build -DRTSCOPE_TEST_NO_PROTECT
 * makes make_mutex refuse PTHREAD_PRIO_PROTECT (ENOTSUP), here and at run
 * time, as a system without ceilings (agent/test.sh step 14). */
static int has_inherit, has_protect;

static void startup(void)
{
    pthread_mutex_t m;
    const char *call;
    int low = sched_get_priority_min(SCHED_FIFO);
    if ((has_inherit = make_mutex(&m, PTHREAD_PRIO_INHERIT, low, &call) == 0))
        pthread_mutex_destroy(&m);
    if ((has_protect = make_mutex(&m, PTHREAD_PRIO_PROTECT, low, &call) == 0))
        pthread_mutex_destroy(&m);
}

static int available(const char *variant)
{
    int proto = protocol_of(variant);
    return proto == PTHREAD_PRIO_NONE || (proto == PTHREAD_PRIO_PROTECT ? has_protect : has_inherit);
}

/* The mutex with the variant's protocol (ceiling: high's priority); a
 * refusal names the call and its errno (the runner refuses the variant, not
 * the plan). The test build -DRTSCOPE_TEST_REFUSE_PROTECT refuses protect
 * here, after start-up announced it, as a system that fails it at run time. */
static int pi_mutex(const char *variant, int prio, char *err, size_t errn)
{
    const char *call;
    int rc, proto = protocol_of(variant);
#ifdef RTSCOPE_TEST_REFUSE_PROTECT
    if (proto == PTHREAD_PRIO_PROTECT) {
        snprintf(err, errn, "pi %s: pthread_mutexattr_setprotocol: %s (forced by the test build)", variant, errno_name(ENOTSUP));
        return -1;
    }
#endif
    if ((rc = make_mutex(&mtx, proto, prio, &call)) != 0) {
        snprintf(err, errn, "pi %s: %s: %s", variant, call, errno_name(rc));
        return -1;
    }
    return 0;
}

/* The three threads' set-up steps and errors, into the one result. */
static void pi_collect(recorder *r)
{
    int i, k;
    for (i = 0; i < 2; i++)
        for (k = 0; k < scratch[i].n_setup; k++)
            recorder_add_setup(r, scratch[i].setup[k].step, scratch[i].setup[k].outcome, scratch[i].setup[k].detail);
    for (i = 0; i < 3; i++)
        if (A[i].err)
            recorder_set_error(r, A[i].what, A[i].err);
}

static int run(vrun *v, char *err, size_t errn)
{
    const plan *p = v->p;
    int prio = p->priority < 3 ? 3 : p->priority, i;
    static int inited;
    recorder *r = v->recs[0];
    if (!inited) {
        gate_init(&g);
        inited = 1;
    }
    burst = p->pi_burst_ns;
    hold = strcmp(v->variant, "deadlock-break") == 0 ? 0 : HOLD_NS;
    pace = p->interval_ns > 2 * (burst + hold) ? p->interval_ns : 2 * (burst + hold);
    share = v->duration_ns;
    if (pi_mutex(v->variant, prio, err, errn) < 0)
        return -1;
    sem_init(&h_go, 0, 0);
    sem_init(&m_go, 0, 0);
    done = 0;
    t0 = 0;
    gate_arm(&g, 3);
    scratch[0].n_setup = scratch[1].n_setup = 0;
    for (i = 0; i < 3; i++) {
        A[i].rec = i == 0 ? r : &scratch[i - 1];
        A[i].index = i;
        A[i].cpu = p->cpus[0];
        A[i].prio = prio - i;
        A[i].p = p;
        A[i].err = 0;
        A[i].what = NULL;
    }
    r->thread = 0;
    r->cpu = p->cpus[0];
    r->interval_ns = pace;
    strcpy(r->variant, v->variant);
    for (i = 0; i < 3; i++)
        pool_run(i, job, &A[i]);
    for (i = 0; i < 3; i++)
        pool_join(i);
    pi_collect(r);
    sem_destroy(&h_go);
    sem_destroy(&m_go);
    pthread_mutex_destroy(&mtx);
    pi_note(r, p, v->variant, prio);
    v->n_out = 1;
    return 0;
}

const probe_desc probe_pi = {
    .name = "pi",
    .variants = variants,
    .prio_below = 2,
    .workers = workers,
    .recorders = recorders,
    .run = run,
    .available = available,
    .startup = startup,
};

/*
 * Worker threads, made at start-up (a plan never creates a thread: thread
 * creation allocates), the start gate, and the per-job real-time set-up.
 *
 * Each worker waits on its own condition variable for a job (a function and
 * its argument), runs it, and marks itself idle again. The runner assigns
 * jobs to workers by index and joins them; a job sets its own CPU and
 * scheduling (rt_setup) and the worker drops back to SCHED_OTHER, unpinned,
 * when the job ends, so an idle worker holds no real-time priority.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"

typedef struct {
    pthread_t t;
    pthread_mutex_t m;
    pthread_cond_t c;
    job_fn fn;
    void *arg;
    int busy;   /* job assigned, not finished */
    int lost;   /* given up on by pool_join after a stall: busy past its plan */
} worker;

/* Raised by pool_abandon (the stall watch): joins stop waiting. */
static volatile int abandon;

static worker *workers;
static int n_workers;
static pthread_mutex_t ready_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_c = PTHREAD_COND_INITIALIZER;
static int n_ready;

static void *worker_main(void *p)
{
    worker *w = p;
    for (;;) {
        job_fn fn;
        void *arg;
        pthread_mutex_lock(&w->m);
        while (!w->busy || !w->fn)
            pthread_cond_wait(&w->c, &w->m);
        fn = w->fn;
        arg = w->arg;
        pthread_mutex_unlock(&w->m);
        fn(arg);
        rt_reset();
        pthread_mutex_lock(&w->m);
        w->fn = NULL;
        w->busy = 0;
        pthread_cond_broadcast(&w->c);
        pthread_mutex_unlock(&w->m);
    }
    return NULL;
}

/* Lock a priority-ceiling mutex once: glibc allocates a thread's
 * priority-protection record on its first such lock, so it happens here,
 * at start-up, not in the pi probe (make test-alloc caught it). */
static void warm_prio_protect(void)
{
#if defined(_POSIX_THREAD_PRIO_PROTECT) && _POSIX_THREAD_PRIO_PROTECT > 0
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    if (pthread_mutexattr_init(&a) != 0)
        return;
    if (pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT) == 0 &&
        pthread_mutexattr_setprioceiling(&a, sched_get_priority_min(SCHED_FIFO)) == 0 &&
        pthread_mutex_init(&m, &a) == 0) {
        if (pthread_mutex_lock(&m) == 0)
            pthread_mutex_unlock(&m);
        pthread_mutex_destroy(&m);
    }
    pthread_mutexattr_destroy(&a);
#endif
}

/* Fault in the stack the job will use, at start-up. */
static void *prefault_then(void *p)
{
    volatile char buf[12 * 1024];
    size_t i;
    own_sched_enter();
    for (i = 0; i < sizeof buf; i += 512)
        buf[i] = 0;
    warm_prio_protect();
    pthread_mutex_lock(&ready_m);
    n_ready++;
    pthread_cond_broadcast(&ready_c);
    pthread_mutex_unlock(&ready_m);
    return worker_main(p);
}

int pool_init(int n, size_t stack)
{
    int i;
    pthread_attr_t a;
    workers = calloc((size_t)n, sizeof *workers);
    if (!workers)
        return -1;
    pthread_attr_init(&a);
    if (stack < (size_t)PTHREAD_STACK_MIN)
        stack = (size_t)PTHREAD_STACK_MIN;
    pthread_attr_setstacksize(&a, stack);
    for (i = 0; i < n; i++) {
        pthread_mutex_init(&workers[i].m, NULL);
        pthread_cond_init(&workers[i].c, NULL);
        if (pthread_create(&workers[i].t, &a, prefault_then, &workers[i]) != 0) {
            pthread_attr_destroy(&a);
            return -1;
        }
    }
    pthread_attr_destroy(&a);
    n_workers = n;
    /* Start-up ends when every worker has done its own start-up. */
    pthread_mutex_lock(&ready_m);
    while (n_ready < n)
        pthread_cond_wait(&ready_c, &ready_m);
    pthread_mutex_unlock(&ready_m);
    return 0;
}

int pool_size(void)
{
    return n_workers;
}

void pool_run(int i, job_fn fn, void *arg)
{
    worker *w = &workers[i];
    pthread_mutex_lock(&w->m);
    w->fn = fn;
    w->arg = arg;
    w->busy = 1;
    pthread_cond_broadcast(&w->c);
    pthread_mutex_unlock(&w->m);
}

void pool_join(int i)
{
    worker *w = &workers[i];
    pthread_mutex_lock(&w->m);
    while (w->busy) {
        if (AT_LOAD(&abandon)) {
            w->lost = 1;
            break;
        }
        pthread_cond_wait(&w->c, &w->m);
    }
    pthread_mutex_unlock(&w->m);
}

void pool_abandon(void)
{
    int i;
    AT_STORE(&abandon, 1);
    for (i = 0; i < n_workers; i++) {
        pthread_mutex_lock(&workers[i].m);
        pthread_cond_broadcast(&workers[i].c);
        pthread_mutex_unlock(&workers[i].m);
    }
}

int pool_lost(void)
{
    int i, n = 0;
    for (i = 0; i < n_workers; i++) {
        pthread_mutex_lock(&workers[i].m);
        if (workers[i].lost && !workers[i].busy)
            workers[i].lost = 0; /* it came back */
        n += workers[i].lost;
        pthread_mutex_unlock(&workers[i].m);
    }
    if (n == 0)
        AT_STORE(&abandon, 0);
    return n;
}

/* ---- gate: the start barrier of a run's threads (reusable) ---- */

void gate_init(gate *g)
{
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->c, NULL);
    g->need = g->arrived = 0;
    g->gen = 0;
}

void gate_arm(gate *g, int need)
{
    pthread_mutex_lock(&g->m);
    g->need = need;
    g->arrived = 0;
    pthread_mutex_unlock(&g->m);
}

void gate_wait(gate *g)
{
    unsigned gen;
    pthread_mutex_lock(&g->m);
    gen = g->gen;
    if (++g->arrived >= g->need) {
        g->gen++;
        g->arrived = 0;
        pthread_cond_broadcast(&g->c);
    } else {
        while (gen == g->gen)
            pthread_cond_wait(&g->c, &g->m);
    }
    pthread_mutex_unlock(&g->m);
}

void gate_pass(gate *g, recorder *rec)
{
    gate_wait(g);
    if (rec && port_thread_faults(&rec->fault_minor, &rec->fault_major) == 0)
        rec->has_faults = 1;
}

void faults_end(recorder *rec)
{
    uint64_t mi, ma;
    if (!rec || !rec->has_faults)
        return;
    if (port_thread_faults(&mi, &ma) == 0) {
        rec->fault_minor = mi - rec->fault_minor;
        rec->fault_major = ma - rec->fault_major;
    } else {
        rec->has_faults = 0;
    }
}

/* ---- real-time set-up of the calling thread ---- */

static const char *policy_name(int p)
{
    return p == POL_FIFO ? "fifo" : p == POL_RR ? "rr" : "other";
}

void rt_setup(recorder *rec, int index, int cpu, int policy, int prio)
{
    char step[SETUP_TEXT], detail[SETUP_TEXT];
    struct sched_param sp;
    int rc, pol;
    if (cpu >= 0) {
        rc = port_pin_self(cpu);
        snprintf(step, sizeof step, "affinity[thread %d]", index);
        if (rc == 0) {
            snprintf(detail, sizeof detail, "cpu %d", cpu);
            recorder_add_setup(rec, step, "ok", detail);
        } else {
            /* ENOSYS: the system has no affinity call (the generic port),
             * not a CPU that is missing: no CPU could have been had. */
            if (rc == ENOSYS)
                snprintf(detail, sizeof detail, "not pinned: this system has no CPU affinity call");
            else
                snprintf(detail, sizeof detail, "cpu %d: %s", cpu, errno_name(rc));
            recorder_add_setup(rec, step, rc == ENOSYS ? "skipped" : "failed", detail);
            if (rec)
                rec->cpu = -1; /* not pinned: the result says cpu=- */
        }
    }
    memset(&sp, 0, sizeof sp);
    pol = policy == POL_FIFO ? SCHED_FIFO : policy == POL_RR ? SCHED_RR : SCHED_OTHER;
    sp.sched_priority = policy == POL_OTHER ? 0 : prio;
    rc = pthread_setschedparam(pthread_self(), pol, &sp);
    snprintf(step, sizeof step, "sched_%s[thread %d]", policy_name(policy), index);
    if (rc == 0) {
        snprintf(detail, sizeof detail, "priority %d", sp.sched_priority);
        recorder_add_setup(rec, step, "ok", detail);
    } else {
        snprintf(detail, sizeof detail, "%s: ran at SCHED_OTHER", errno_name(rc));
        recorder_add_setup(rec, step, "failed", detail);
        memset(&sp, 0, sizeof sp);
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    }
}

/* The agent's own scheduling, for rt_reset (a worker back from a job) and
 * own_sched_enter (a thread the agent makes). */
static int own_policy = SCHED_OTHER;
static struct sched_param own_param;

/* After port_lower_self, what pthread_getschedparam says is what the thread
 * runs at, on every system but one whose port overrides port_own_prio
 * (-DRTSCOPE_PORT_OWN_PRIO, sources.mk): FreeRTOS+POSIX's getschedparam says
 * SCHED_OTHER and the priority the pthread was created with, not the one
 * port_lower_self's vTaskPrioritySet gave it. There the port's priority is
 * both the one announced and the one rt_reset restores (its setschedparam
 * takes the priority whatever the policy): a restore from the created-with
 * priority would put every worker back from a job above the announced
 * own_prio once the two differ. */
int own_sched_init(void)
{
    port_lower_self();
    if (pthread_getschedparam(pthread_self(), &own_policy, &own_param) != 0) {
        own_policy = SCHED_OTHER;
        memset(&own_param, 0, sizeof own_param);
    }
#ifdef RTSCOPE_PORT_OWN_PRIO
    own_param.sched_priority = port_own_prio();
    return own_param.sched_priority;
#else
    return own_policy == SCHED_FIFO || own_policy == SCHED_RR ? own_param.sched_priority : 0;
#endif
}

/* A new thread does not inherit the scheduling everywhere (FreeRTOS+POSIX
 * and NuttX give a thread made from a default attribute object their
 * default priority): each of the agent's threads takes its own first. */
void own_sched_enter(void)
{
    pthread_setschedparam(pthread_self(), own_policy, &own_param);
}

void rt_reset(void)
{
    own_sched_enter();
    port_unpin_self();
}

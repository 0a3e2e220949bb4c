/*
 * The switch probe: task switch time (Rhealstone's "task switching time"),
 * src/measure/switch.rs. Two threads of equal priority on the plan's first
 * CPU hand the CPU back and forth; each records the time from the other's
 * last clock read before giving the CPU away to its own first clock read
 * after getting it back.
 *
 * Variants:
 * - futex (where the port has futexes): ping-pong on a turn word: store the
 *   stamp, flip the turn, wake the other, wait for our turn. A sample is
 *   wake + wait + one switch; the woken thread has the same priority, so it
 *   waits in the run queue until the waker blocks.
 * - yield (POSIX sched_yield): both threads loop on sched_yield; a sample is
 *   taken only when the CPU really went to the other thread (the shared
 *   stamp carries who wrote it), so a yield that returns to its caller is
 *   not a switch.
 * Both threads record (two results per variant). Invariant: every sample is
 * one observed switch between the two threads; none is counted twice (the
 * stamp is consumed by the turn). At SCHED_FIFO the pair keeps its CPU
 * busy: RT throttling can stop both for the rest of a second, which shows
 * as one long sample, and is real. The two threads must share one CPU:
 * on a system of several CPUs without an affinity call switch is not
 * announced; a pinning that fails at run time leaves a note "not a switch".
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "agent.h"

static const char *const variants[] = {"futex", "yield", NULL};

typedef struct {
    recorder *rec;
    int me, cpu;
    const plan *p;
} sw_arg;

static gate g;
static sw_arg A[2];
static uint64_t stamp;
static uint32_t turn;
static int done, yield_mode;
static uint64_t share;

static void job(void *x)
{
    sw_arg *a = x;
    uint64_t start, end, seq = 0, limit;
    uint32_t me = (uint32_t)a->me, other = 1u - me;
    int rc;
    rt_setup(a->rec, a->me, a->cpu, a->p->policy, a->p->priority);
    live_register(a->rec);
    gate_pass(&g, a->rec);
    start = now_ns();
    end = start + share;
    /* Each thread takes half of the iterations. */
    limit = a->p->iterations == UINT64_MAX ? UINT64_MAX : (a->p->iterations + 1) / 2;
    if (yield_mode) {
        while (seq < limit && !AT_LOAD_RELAXED(&g_stop) && now_ns() < end) {
            uint64_t t, s;
            AT_STORE(&stamp, now_ns() << 1 | me);
            sched_yield();
            t = now_ns();
            s = AT_LOAD(&stamp);
            if ((s & 1u) != me) {
                recorder_record(a->rec, t > (s >> 1) ? t - (s >> 1) : 0, t - start, seq++);
            }
        }
        faults_end(a->rec);
        return;
    }
    for (;;) {
        uint64_t t, s;
        while (AT_LOAD(&turn) != me)
            port_futex_wait(&turn, other);
        t = now_ns();
        if (AT_LOAD(&done)) {
            faults_end(a->rec);
            return;
        }
        s = AT_LOAD(&stamp);
        if (s != 0)
            recorder_record(a->rec, t > s ? t - s : 0, t - start, seq++);
        if (seq >= limit || AT_LOAD_RELAXED(&g_stop) || t >= end)
            AT_STORE(&done, 1);
        AT_STORE(&stamp, now_ns());
        AT_STORE(&turn, other);
        if ((rc = port_futex_wake(&turn)) != 0) {
            AT_STORE(&done, 1);
            recorder_set_error(a->rec, "futex wake", rc);
            return;
        }
        if (AT_LOAD(&done)) {
            faults_end(a->rec);
            return;
        }
    }
}

static int workers(const plan *p)
{
    (void)p;
    return 2;
}

/* Two threads that cannot be put on one CPU measure no switch (on two CPUs
 * they run side by side: a sample is the other's loop, min 0.0 us). A
 * system with more than one CPU and no affinity call is known at start-up:
 * switch is not announced there. */
static int one_cpu_possible(void)
{
    return g_agent.info.affinity || g_agent.info.cpus == 1;
}

static int available(const char *v)
{
    return one_cpu_possible() && (strcmp(v, "futex") != 0 || port_has_futex());
}

/* Pinning that failed at run time: the result says so (a note the host
 * turns into a warning), as a cross-CPU pair that could not be placed. */
static void not_one_cpu(recorder **r)
{
    int i;
    if ((r[0]->cpu >= 0 && r[1]->cpu >= 0) || g_agent.info.cpus == 1)
        return;
    for (i = 0; i < 2; i++) {
        snprintf(r[i]->note_buf, sizeof r[i]->note_buf,
                 "not a switch: the two threads could not be pinned to one CPU (see their affinity steps) on a system of %d CPUs, so they may have run side by side and a sample be the other's loop, not a task switch",
                 g_agent.info.cpus);
        r[i]->note = r[i]->note_buf;
    }
}

static int run(vrun *v, char *err, size_t errn)
{
    const plan *p = v->p;
    int i;
    static int inited;
    (void)err, (void)errn;
    if (!inited) {
        gate_init(&g);
        inited = 1;
    }
    gate_arm(&g, 2);
    stamp = 0;
    turn = 0;
    done = 0;
    yield_mode = strcmp(v->variant, "yield") == 0;
    share = v->duration_ns;
    for (i = 0; i < 2; i++) {
        A[i].rec = v->recs[i];
        A[i].me = i;
        A[i].cpu = p->cpus[0];
        A[i].p = p;
        v->recs[i]->thread = i;
        v->recs[i]->cpu = p->cpus[0];
        v->recs[i]->interval_ns = 0;
        strcpy(v->recs[i]->variant, v->variant);
        pool_run(i, job, &A[i]);
    }
    pool_join(0);
    pool_join(1);
    not_one_cpu(v->recs);
    v->n_out = 2;
    return 0;
}

const probe_desc probe_switch = {
    .name = "switch",
    .variants = variants,
    .workers = workers,
    .recorders = workers,
    .run = run,
    .available = available,
};

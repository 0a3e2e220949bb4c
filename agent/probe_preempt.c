/*
 * The preempt probe: preemption time, src/measure/preempt.rs. A
 * low-priority thread that is running on a CPU wakes a higher-priority
 * thread pinned to the same CPU; latency = the higher thread runs - the wake
 * call. Built on pair.c's one-way cycle (both threads on the plan's first
 * CPU, the high thread at the plan's priority, the low one below it): once
 * per interval the low thread is let go, computes for 20 us (at most half of
 * the interval) and then wakes the high thread (a futex event), so at the
 * wake call it is on the CPU and busy, while the CPU stays mostly idle. The
 * high thread must take the CPU away from the waker: the scheduler's
 * preemption path. One variant, futex/same-cpu (where the port has futexes).
 * Invariant: pair.c's (one sample per wake).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include "pair.h"

static const char *const variants[] = {"futex/same-cpu", NULL};

static uint32_t word;

static int release(handoff *h, const unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return port_event_post(&word);
}

static int wait_h(handoff *h, unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return port_event_wait(&word);
}

static int available(const char *v)
{
    (void)v;
    return port_has_futex();
}

static int run(vrun *v, char *err, size_t errn)
{
    handoff h;
    const plan *p = v->p;
    uint64_t spin = 20000u;
    (void)err, (void)errn;
    if (spin > p->interval_ns / 2)
        spin = p->interval_ns / 2;
    word = 0;
    memset(&h, 0, sizeof h);
    h.release = release;
    h.wait = wait_h;
    h.what = "futex event";
    return pair_one_way(v, &h, p->cpus[0], p->cpus[0], spin, 1);
}

const probe_desc probe_preempt = {
    .name = "preempt",
    .variants = variants,
    .prio_below = 1,
    .workers = pair_workers,
    .recorders = pair_recorders,
    .run = run,
    .available = available,
};

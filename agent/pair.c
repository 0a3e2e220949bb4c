/*
 * The two-thread hand-off shared by sem, pipe, mq, signal and
 * preempt: a sender releases, a blocked receiver wakes (the method of
 * src/measure/pair.rs, in C).
 *
 * Timestamps: the sender reads the clock immediately before the release
 * call and publishes it (t0); the receiver reads the clock immediately after
 * its blocking call returns (t1); latency = t1 - t0 on the same
 * CLOCK_MONOTONIC, so cross-CPU pairs are valid.
 *
 * One-way, per event (ptsematest's shape: the receiver paces, so it has been
 * blocked only for the hand-off itself):
 *
 *   sender                                 receiver (records)
 *     arm()   (mutex: lock it)
 *     post(armed) ───────────────────────>  wait(armed)
 *                                           pause (sleep to the next tick)
 *     wait(go)    <───────────────────────  post(go)
 *                                           h.wait() blocks
 *     t0 = now; h.release() ─────────────>  returns; t1 = now; record t1 - t0
 *                                           after_wait() (mutex: unlock)
 *     wait(ack)   <───────────────────────  post(ack)
 *
 * Both stamps are taken here (handoff_stamped_release / _wait) around the
 * probe's bare calls, never in a probe file: every mechanism is timed
 * between the same two points, and a probe cannot drift from the method.
 * The events are POSIX semaphores and never inside the timed span. Two-step
 * cycle (mq and signal: pmqtest's and sigwaittest's sequence): the receiver
 * pauses, sends `go` through the mechanism itself, and blocks in it; the
 * sender waits for `go` in the mechanism, stores t0 and releases. At the end
 * the sender sets `done` and releases once more; the receiver takes that
 * release as the end, not as a sample.
 *
 * Round trip (pipe, mq): task1 (records) paces, reads t0, sends on A and
 * blocks on B; task2 answers every message on B; task1 records t1 - t0. At
 * the end task1 sets `done` and sends once more on A to wake task2.
 *
 * Pacing: an absolute sleep to the next tick of the interval; a late tick is
 * not an overrun here (these probes time hand-offs, not periods), the next
 * tick is then one interval after now. Invariant: one sample per hand-off,
 * none lost or invented: the closing release is never recorded.
 * Shutdown: the sender (task1 for round trips) ends the loop (duration share
 * over, iterations reached, or the stop flag) and wakes the other thread,
 * which sees `done` before blocking again. The receiver's pause ends the
 * pair as well when its next tick is past the variant's end or stop comes
 * while it sleeps (it sleeps in slices that see stop: an interval of an
 * hour ends at stop, not an hour later). Every other wait is on the other
 * thread, which ends by one of these; no thread is left waiting.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "pair.h"

typedef struct {
    uint64_t t0;
    int done;
    sem_t armed, go, ack;
    handoff *h;
    chan *a, *b;
    const plan *p;
    uint64_t duration, spin;
    size_t msg;
    gate g;
} pair_sync;

typedef struct {
    pair_sync *s;
    recorder *rec;          /* receiver: the result; sender: set-up steps only */
    int index, cpu, prio;
    int err;
    const char *err_what;
} pair_thread;

static pair_sync S;
static recorder sender_steps; /* only its setup[] is used (no allocation) */
static pair_thread T[2];
static unsigned char bufs[2][4096];

static int handoff_stamped_release(handoff *h, uint64_t *t0, const unsigned char *buf, size_t n)
{
    int rc;
    if (h->before_release)
        h->before_release(h);
    AT_STORE(t0, now_ns());
    rc = h->release(h, buf, n);
    if (h->after_release)
        h->after_release(h);
    return rc;
}

static int handoff_stamped_wait(handoff *h, uint64_t *t1, unsigned char *buf, size_t n)
{
    int rc = h->wait(h, buf, n);
    *t1 = now_ns();
    return rc;
}

/* A channel as a hand-off: release = send, wait = recv. */
static int ch_release(handoff *h, const unsigned char *buf, size_t n)
{
    chan *c = h->impl;
    return c->send(c, buf, n);
}

static int ch_wait(handoff *h, unsigned char *buf, size_t n)
{
    chan *c = h->impl;
    return c->recv(c, buf, n);
}

static void post(sem_t *s)
{
    sem_post(s);
}

static void wait_sem(sem_t *s)
{
    while (sem_wait(s) != 0 && errno == EINTR)
        ;
}

/* Pause to the tick *next (absolute), then move *next on. -1: no tick
 * left (the tick is past end, the variant's share) or stop came during the
 * pause; 0; or an errno value. The pause sees stop (sleep_until_or_stop), so
 * a long interval never holds a plan past stop or its end. */
static int pause_tick(uint64_t *next, uint64_t interval, uint64_t end)
{
    int rc;
    uint64_t now;
    if (*next > end)
        return -1;
    if ((rc = sleep_until_or_stop(*next)) != 0)
        return rc;
    now = now_ns();
    *next += interval;
    if (*next <= now)
        *next = now + interval;
    return 0;
}

/* The receiver failed or reached the variant's end: end both threads. */
static void fail_receiver(pair_sync *s)
{
    AT_STORE(&s->done, 1);
    if (s->h->go)
        s->h->go->send(s->h->go, bufs[0], s->msg);
    else
        post(&s->go);
    post(&s->ack);
}

/* The receiver of both cycles: semaphore events (h->go NULL: wait for
 * `armed`, pause, post `go`, block; `ack` after recording) or rt-tests'
 * two-step one (pause, `go` through the mechanism, block; the sender's
 * closing release is not a sample). */
static void receiver(pair_thread *t)
{
    pair_sync *s = t->s;
    handoff *h = s->h;
    int two_step = h->go != NULL;
    uint64_t start = now_ns(), end = start + s->duration, next = start + s->p->interval_ns, seq = 0;
    int rc;
    for (;;) {
        uint64_t t1, t0;
        if (!two_step)
            wait_sem(&s->armed);
        if (AT_LOAD(&s->done))
            return;
        if ((rc = pause_tick(&next, s->p->interval_ns, end)) < 0) {
            fail_receiver(s); /* no tick left, or stop: the sender ends too */
            return;
        }
        if (rc != 0) {
            t->err = rc, t->err_what = "clock_nanosleep failed";
            fail_receiver(s);
            return;
        }
        if (!two_step)
            post(&s->go);
        else if ((rc = h->go->send(h->go, bufs[0], s->msg)) != 0) {
            t->err = rc, t->err_what = h->go->what;
            fail_receiver(s);
            return;
        }
        if ((rc = handoff_stamped_wait(h, &t1, bufs[0], s->msg)) != 0) {
            t->err = rc, t->err_what = h->what;
            fail_receiver(s);
            return;
        }
        if (two_step && AT_LOAD(&s->done))
            return; /* the sender's closing release: not a sample */
        t0 = AT_LOAD(&s->t0);
        recorder_record(t->rec, t1 > t0 ? t1 - t0 : 0, t1 - start, seq++);
        if (h->after_wait)
            h->after_wait(h);
        if (!two_step)
            post(&s->ack);
    }
}

static void sender(pair_thread *t)
{
    pair_sync *s = t->s;
    handoff *h = s->h;
    uint64_t end = now_ns() + s->duration, sent = 0;
    int rc;
    for (;;) {
        if (sent >= s->p->iterations || AT_LOAD_RELAXED(&g_stop) || now_ns() >= end) {
            AT_STORE(&s->done, 1);
            post(&s->armed);
            return;
        }
        if (h->arm)
            h->arm(h);
        post(&s->armed);
        wait_sem(&s->go);
        if (AT_LOAD(&s->done))
            return; /* the receiver failed; its error is reported */
        spin_for(s->spin);
        if ((rc = handoff_stamped_release(h, &s->t0, bufs[1], s->msg)) != 0) {
            t->err = rc, t->err_what = h->what;
            AT_STORE(&s->done, 1);
            post(&s->armed); /* the receiver may wait for armed next */
            return;
        }
        sent++;
        wait_sem(&s->ack);
        if (AT_LOAD(&s->done))
            return;
    }
}

static void sender_two_step(pair_thread *t)
{
    pair_sync *s = t->s;
    handoff *h = s->h;
    uint64_t end = now_ns() + s->duration, sent = 0;
    int rc;
    for (;;) {
        int last;
        rc = h->go->recv(h->go, bufs[1], s->msg);
        if (AT_LOAD(&s->done))
            return; /* the receiver failed; its error is reported */
        if (rc != 0) {
            t->err = rc, t->err_what = h->go->what;
            AT_STORE(&s->done, 1);
            handoff_stamped_release(h, &s->t0, bufs[1], s->msg);
            return;
        }
        last = sent >= s->p->iterations || AT_LOAD_RELAXED(&g_stop) || now_ns() >= end;
        if (last)
            AT_STORE(&s->done, 1);
        spin_for(s->spin);
        if ((rc = handoff_stamped_release(h, &s->t0, bufs[1], s->msg)) != 0) {
            t->err = rc, t->err_what = h->what;
            AT_STORE(&s->done, 1);
            return;
        }
        if (last)
            return;
        sent++;
    }
}

static void one_way_job(void *x)
{
    pair_thread *t = x;
    pair_sync *s = t->s;
    handoff *h = s->h;
    int rc = 0;
    rt_setup(t->rec, t->index, t->cpu, s->p->policy, t->prio);
    if (t->index == 0) {
        if (h->receiver_setup)
            rc = h->receiver_setup(h);
        live_register(t->rec);
        gate_pass(&s->g, t->rec);
        if (rc) {
            t->err = rc, t->err_what = "receiver set-up";
            fail_receiver(s);
            return;
        }
        receiver(t);
        faults_end(t->rec);
    } else {
        if (h->sender_setup)
            rc = h->sender_setup(h);
        if (rc)
            AT_STORE(&s->done, 1); /* before the gate: the receiver sees it first */
        gate_wait(&s->g);
        if (rc) {
            t->err = rc, t->err_what = "sender set-up";
            post(&s->armed);
            if (h->go)
                handoff_stamped_release(h, &s->t0, bufs[1], s->msg);
            return;
        }
        if (h->go)
            sender_two_step(t);
        else
            sender(t);
    }
}

static void prepare(vrun *v, int rcpu, int scpu, int swap_prio, size_t msg)
{
    const plan *p = v->p;
    int lower = p->policy == POL_OTHER ? p->priority : (p->priority > 1 ? p->priority - 1 : 1);
    static int inited;
    if (!inited) {
        gate_init(&S.g);
        inited = 1;
    } else {
        sem_destroy(&S.armed);
        sem_destroy(&S.go);
        sem_destroy(&S.ack);
    }
    sem_init(&S.armed, 0, 0);
    sem_init(&S.go, 0, 0);
    sem_init(&S.ack, 0, 0);
    S.t0 = 0;
    S.done = 0;
    S.p = p;
    S.duration = v->duration_ns;
    S.msg = msg < sizeof bufs[0] ? msg : sizeof bufs[0];
    memset(bufs, 0, sizeof bufs);
    gate_arm(&S.g, 2);
    sender_steps.n_setup = 0;
    sender_steps.cpu = scpu;
    T[0].s = T[1].s = &S;
    T[0].rec = v->recs[0];
    T[1].rec = &sender_steps;
    T[0].index = 0;
    T[1].index = 1;
    T[0].cpu = rcpu;
    T[1].cpu = scpu;
    T[0].prio = swap_prio ? lower : p->priority;
    T[1].prio = swap_prio ? p->priority : lower;
    T[0].err = T[1].err = 0;
    v->recs[0]->thread = 0;
    v->recs[0]->cpu = rcpu;
    v->recs[0]->interval_ns = p->interval_ns;
    if (v->variant)
        copy_text(v->recs[0]->variant, sizeof v->recs[0]->variant, v->variant);
}

/* Run job on both threads (receiver or task1 on worker 0), wait for both,
 * then both threads' steps and the first error into the result (as
 * natively). */
static int run_both(vrun *v, job_fn job)
{
    recorder *r = v->recs[0];
    int i;
    pool_run(0, job, &T[0]);
    pool_run(1, job, &T[1]);
    pool_join(0);
    pool_join(1);
    for (i = 0; i < sender_steps.n_setup; i++)
        recorder_add_setup(r, sender_steps.setup[i].step, sender_steps.setup[i].outcome, sender_steps.setup[i].detail);
    for (i = 0; i < 2; i++)
        if (T[i].err)
            recorder_set_error(r, T[i].err_what ? T[i].err_what : "hand-off", T[i].err);
    if (T[0].cpu != T[1].cpu && (r->cpu < 0 || sender_steps.cpu < 0)) {
        snprintf(r->note_buf, sizeof r->note_buf,
                 "cross-CPU not placed: the two threads were meant for CPUs %d and %d, but %s (see the affinity "
                 "set-up steps); they ran wherever the scheduler put them, possibly on one CPU",
                 T[0].cpu, T[1].cpu,
                 g_agent.info.affinity ? "pinning failed" : "this system has no CPU affinity call");
        r->note = r->note_buf;
    }
    v->n_out = 1;
    return 0;
}

int pair_one_way(vrun *v, handoff *h, int rcpu, int scpu, uint64_t spin, size_t msg)
{
    prepare(v, rcpu, scpu, 0, msg);
    S.h = h;
    S.spin = spin;
    return run_both(v, one_way_job);
}

static void round_trip_job(void *x)
{
    pair_thread *t = x;
    pair_sync *s = t->s;
    int rc;
    rt_setup(t->rec, t->index, t->cpu, s->p->policy, t->prio);
    if (t->index == 0)
        live_register(t->rec);
    gate_pass(&s->g, t->index == 0 ? t->rec : NULL);
    if (t->index == 0) {
        uint64_t start = now_ns(), end = start + s->duration;
        uint64_t next = start + s->p->interval_ns, seq = 0;
        for (;;) {
            uint64_t sent, back;
            if (seq >= s->p->iterations || AT_LOAD_RELAXED(&g_stop) || now_ns() >= end)
                break;
            if ((rc = pause_tick(&next, s->p->interval_ns, end)) < 0)
                break;
            if (rc != 0) {
                t->err = rc, t->err_what = "clock_nanosleep failed";
                break;
            }
            sent = now_ns();
            if ((rc = s->a->send(s->a, bufs[0], s->msg)) != 0) {
                t->err = rc, t->err_what = s->a->what;
                break;
            }
            if ((rc = s->b->recv(s->b, bufs[0], s->msg)) != 0) {
                t->err = rc, t->err_what = s->b->what;
                break;
            }
            back = now_ns();
            recorder_record(t->rec, back - sent, back - start, seq++);
        }
        faults_end(t->rec);
        AT_STORE(&s->done, 1);
        s->a->send(s->a, bufs[0], s->msg); /* wake task2 to see done */
    } else {
        for (;;) {
            if ((rc = s->a->recv(s->a, bufs[1], s->msg)) != 0) {
                t->err = rc, t->err_what = s->a->what;
                return;
            }
            if (AT_LOAD(&s->done))
                return;
            if ((rc = s->b->send(s->b, bufs[1], s->msg)) != 0) {
                t->err = rc, t->err_what = s->b->what;
                return;
            }
        }
    }
}

int pair_round_trip(vrun *v, chan *a, chan *b, int rcpu, int scpu, size_t msg)
{
    /* task2 (the answering thread) has the higher priority: it is the one
     * that must run at once (as natively). */
    prepare(v, rcpu, scpu, 1, msg);
    S.a = a;
    S.b = b;
    return run_both(v, round_trip_job);
}

int run_pair(vrun *v, pair_channels *pc)
{
    const plan *p = v->p;
    int rcpu = p->cpus[0], scpu = p->cpus[p->n_cpus - 1];
    if (strcmp(v->variant, "oneway") == 0) {
        handoff h;
        memset(&h, 0, sizeof h);
        h.release = ch_release;
        h.wait = ch_wait;
        h.go = pc->go_via_b ? &pc->b : NULL;
        h.impl = &pc->a;
        h.what = pc->a.what;
        return pair_one_way(v, &h, rcpu, scpu, 0, p->msg_size);
    }
    return pair_round_trip(v, &pc->a, &pc->b, rcpu, scpu, p->msg_size);
}

int pair_workers(const plan *p)
{
    (void)p;
    return 2;
}

int pair_recorders(const plan *p)
{
    (void)p;
    return 1;
}

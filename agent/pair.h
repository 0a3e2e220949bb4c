/*
 * The two-thread hand-off (pair.c), shared by sem, pipe, mq, signal and
 * preempt. A probe file gives only its mechanism's bare calls; pair.c takes
 * both timestamps around them, paces, places the threads and ends them.
 * See pair.c for the method.
 */
#ifndef RTS_PAIR_H
#define RTS_PAIR_H
#include "agent.h"

/* A one-way message path (a pipe, a queue): 0 or an errno value. */
typedef struct chan chan;
struct chan {
    int (*send)(chan *c, const unsigned char *buf, size_t n);
    int (*recv)(chan *c, unsigned char *buf, size_t n);
    void *impl;
    const char *what; /* for error texts, e.g. "mq A" */
};

/* A hand-off whose stamps pair.c takes (handoff_stamped_release / _wait):
 * t0 right before `release`, t1 right after `wait` returns. Every hook but
 * release and wait may be NULL. */
typedef struct handoff handoff;
struct handoff {
    /* Sender, before posting `armed` (mutex: lock it). */
    void (*arm)(handoff *h);
    /* Sender, before t0 (condvar: lock, set the flag) / after the release
     * (condvar: unlock): outside the timed span's start. */
    void (*before_release)(handoff *h);
    void (*after_release)(handoff *h);
    /* The bare release call and blocking call: 0 or an errno value. */
    int (*release)(handoff *h, const unsigned char *buf, size_t n);
    int (*wait)(handoff *h, unsigned char *buf, size_t n);
    /* Receiver, after recording (mutex: unlock; condvar: clear, unlock). */
    void (*after_wait)(handoff *h);
    /* Before the start gate, on the receiver's / sender's thread. */
    int (*receiver_setup)(handoff *h);
    int (*sender_setup)(handoff *h);
    /* rt-tests' two-step cycle: `go` through the mechanism itself
     * (receiver -> sender); NULL: the semaphore-event cycle. */
    chan *go;
    void *impl;
    const char *what; /* name of the release call, for errors */
};

/* One one-way variant: receiver (records) on rcpu at the plan's priority,
 * sender on scpu one below; spin: ns the sender computes before each
 * release (preempt). Results into v->recs[0], v->n_out = 1. */
int pair_one_way(vrun *v, handoff *h, int rcpu, int scpu, uint64_t spin, size_t msg);
/* One round-trip variant over channels a (task1 -> task2) and b (back). */
int pair_round_trip(vrun *v, chan *a, chan *b, int rcpu, int scpu, size_t msg);

/* The channel probes (pipe, mq): A carries the timed message (one-way) or
 * the outbound leg (round trip); B the way back, or with go_via_b the
 * one-way `go` (pmqtest's two-step cycle). */
typedef struct {
    chan a, b;
    int go_via_b;
} pair_channels;
/* Variant "oneway" or "roundtrip" over pc, placed as natively: receiver
 * (task1) on the plan's first CPU, sender (task2) on its last. */
int run_pair(vrun *v, pair_channels *pc);

/* probe_desc hooks of every pair probe: two workers, one recorder. */
int pair_workers(const plan *p);
int pair_recorders(const plan *p);
#endif

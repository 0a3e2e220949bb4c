/*
 * The two-thread hand-off pattern (pair.c), shared by sem, pipe, mq, signal
 * and preempt. See pair.c for the method.
 */
#ifndef RTS_PAIR_H
#define RTS_PAIR_H
#include "agent.h"

typedef struct chan chan;
struct chan {
    int (*send)(chan *c, const unsigned char *buf, size_t n); /* 0 or errno */
    int (*recv)(chan *c, unsigned char *buf, size_t n);
    void *impl;
    const char *what; /* for error texts, e.g. "mq_send" */
};

typedef struct handoff handoff;
struct handoff {
    /* Sender, before posting `armed` (mutex: lock it). May be NULL. */
    void (*arm)(handoff *h);
    /* Sender: store now into *t0 (AT_STORE) immediately before the release
     * call, then make it. 0 or errno. */
    int (*release)(handoff *h, uint64_t *t0, const unsigned char *buf, size_t n);
    /* Receiver: block until released; *t1 = the clock right after. */
    int (*wait)(handoff *h, uint64_t *t1, unsigned char *buf, size_t n);
    /* Receiver, after recording (mutex: unlock). May be NULL. */
    void (*after_wait)(handoff *h);
    /* Before the start gate, on the receiver's / sender's thread. May be NULL. */
    int (*receiver_setup)(handoff *h);
    int (*sender_setup)(handoff *h);
    /* rt-tests' two-step cycle: `go` through the mechanism itself
     * (receiver -> sender); NULL: the semaphore-event cycle. */
    chan *go;
    void *impl;
    const char *what; /* name of the release call, for errors */
};

/* A channel as a hand-off: release = send, wait = recv. */
void handoff_of_chan(handoff *h, chan *c, chan *go);

/* One one-way variant: receiver (records) on rcpu at the plan's priority,
 * sender on scpu one below; spin: ns the sender computes before each
 * release (preempt). Results into v->recs[0], v->n_out = 1. */
int pair_one_way(vrun *v, handoff *h, int rcpu, int scpu, uint64_t spin, size_t msg);
/* One round-trip variant over channels a (task1 -> task2) and b (back). */
int pair_round_trip(vrun *v, chan *a, chan *b, int rcpu, int scpu, size_t msg);

/* Same-priority pair for switch: both threads at the plan's priority. */
#endif

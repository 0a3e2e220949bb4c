/*
 * The mq probe: POSIX message queues (mailboxes), src/measure/mq.rs. Method
 * and invariant: pair.c.
 * - oneway: mq_send -> the blocked mq_receive returns, with pmqtest's
 *   two-step cycle: `go` goes through a second queue (receiver -> sender),
 *   so the send path ran just before the timed message.
 * - roundtrip: task1 -> queue A -> task2 -> queue B -> task1.
 * Placement as natively: receiver on the plan's first CPU, sender on its
 * last. Queues hold one message of msg_size bytes, are opened O_EXCL under a
 * name with the agent's pid, unlinked at once (no IPC object outlives the
 * agent) and closed after the variant.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "pair.h"

static const char *const variants[] = {"oneway", "roundtrip", NULL};

static mqd_t Q[2];
static chan C[2];

static int q_send(chan *c, const unsigned char *buf, size_t n)
{
    mqd_t *q = c->impl;
    while (mq_send(*q, (const char *)buf, n, 0) != 0) {
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

static int q_recv(chan *c, unsigned char *buf, size_t n)
{
    mqd_t *q = c->impl;
    for (;;) {
        ssize_t r = mq_receive(*q, (char *)buf, n, NULL);
        if (r >= 0)
            return 0;
        if (errno != EINTR)
            return errno;
    }
}

static int make(int k, size_t msg, char *err, size_t errn)
{
    char name[64];
    struct mq_attr a;
    memset(&a, 0, sizeof a);
    a.mq_maxmsg = 1;
    a.mq_msgsize = (long)msg;
    snprintf(name, sizeof name, "/rtscope-agent-%ld-%d", (long)getpid(), k);
    Q[k] = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
    if (Q[k] == (mqd_t)-1) {
        snprintf(err, errn, "mq_open %s: %s (a POSIX message queue of 1 x %lu bytes)", name,
                 errno_name(errno), (unsigned long)msg);
        return -1;
    }
    mq_unlink(name);
    C[k].send = q_send;
    C[k].recv = q_recv;
    C[k].impl = &Q[k];
    C[k].what = k == 0 ? "mq A" : "mq B";
    return 0;
}

static int workers(const plan *p)
{
    (void)p;
    return 2;
}

static int recorders(const plan *p)
{
    (void)p;
    return 1;
}

static int run(vrun *v, char *err, size_t errn)
{
    const plan *p = v->p;
    int rcpu = p->cpus[0], scpu = p->cpus[p->n_cpus - 1], rc;
    if (make(0, p->msg_size, err, errn) < 0)
        return -1;
    if (make(1, p->msg_size, err, errn) < 0) {
        mq_close(Q[0]);
        return -1;
    }
    if (strcmp(v->variant, "oneway") == 0) {
        handoff h;
        /* Queue 0 carries the timed message, queue 1 the `go`. */
        handoff_of_chan(&h, &C[0], &C[1]);
        rc = pair_one_way(v, &h, rcpu, scpu, 0, p->msg_size);
    } else {
        rc = pair_round_trip(v, &C[0], &C[1], rcpu, scpu, p->msg_size);
    }
    mq_close(Q[0]);
    mq_close(Q[1]);
    return rc;
}

const probe_desc probe_mq = {"mq", variants, 0, workers, recorders, run, NULL};

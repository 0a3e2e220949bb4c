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
static pair_channels C;

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
    chan *c;
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
    c = k == 0 ? &C.a : &C.b;
    c->send = q_send;
    c->recv = q_recv;
    c->impl = &Q[k];
    c->what = k == 0 ? "mq A" : "mq B";
    return 0;
}

/* Queue A carries the timed message, queue B the answer (round trip) or
 * the one-way `go`. */
static int run(vrun *v, char *err, size_t errn)
{
    const plan *p = v->p;
    int rc;
    if (make(0, p->msg_size, err, errn) < 0)
        return -1;
    if (make(1, p->msg_size, err, errn) < 0) {
        mq_close(Q[0]);
        return -1;
    }
    C.go_via_b = 1;
    rc = run_pair(v, &C);
    mq_close(Q[0]);
    mq_close(Q[1]);
    return rc;
}

const probe_desc probe_mq = {
    .name = "mq",
    .variants = variants,
    .prio_below = 1,
    .workers = pair_workers,
    .recorders = pair_recorders,
    .run = run,
};

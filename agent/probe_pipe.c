/*
 * The pipe probe (RT-FIFO): src/measure/pipe.rs. Method and invariant:
 * pair.c.
 * - oneway: write(msg) -> the blocked read() of the whole message returns,
 *   with the semaphore-event cycle (one-way in pair.c).
 * - roundtrip: task1 -> pipe A -> task2 -> pipe B -> task1 (round trip).
 * Placement as natively: the receiver (task1) on the plan's first CPU, the
 * sender (task2) on its last (the same CPU with one CPU). Pipes are made for
 * the variant and closed after it.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include "pair.h"

static const char *const variants[] = {"oneway", "roundtrip", NULL};

typedef struct {
    int fd[2];
} pipe_impl;

static pipe_impl P[2];
static pair_channels C;

static int p_send(chan *c, const unsigned char *buf, size_t n)
{
    pipe_impl *p = c->impl;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(p->fd[1], buf + done, n - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        done += (size_t)w;
    }
    return 0;
}

static int p_recv(chan *c, unsigned char *buf, size_t n)
{
    pipe_impl *p = c->impl;
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(p->fd[0], buf + done, n - done);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (r == 0)
            return EPIPE;
        done += (size_t)r;
    }
    return 0;
}

static int make(int k, char *err, size_t errn)
{
    chan *c = k == 0 ? &C.a : &C.b;
    if (pipe(P[k].fd) != 0) {
        snprintf(err, errn, "pipe: %s", errno_name(errno));
        return -1;
    }
    c->send = p_send;
    c->recv = p_recv;
    c->impl = &P[k];
    c->what = k == 0 ? "pipe A" : "pipe B";
    return 0;
}

static void unmake(int k)
{
    close(P[k].fd[0]);
    close(P[k].fd[1]);
}

/* Both pipes for either variant (one-way uses A only; B costs two fds). */
static int run(vrun *v, char *err, size_t errn)
{
    int rc;
    if (make(0, err, errn) < 0)
        return -1;
    if (make(1, err, errn) < 0) {
        unmake(0);
        return -1;
    }
    C.go_via_b = 0;
    rc = run_pair(v, &C);
    unmake(0);
    unmake(1);
    return rc;
}

const probe_desc probe_pipe = {
    .name = "pipe",
    .variants = variants,
    .prio_below = 1,
    .workers = pair_workers,
    .recorders = pair_recorders,
    .run = run,
};

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
#include <string.h>
#include <unistd.h>
#include "pair.h"

static const char *const variants[] = {"oneway", "roundtrip", NULL};

typedef struct {
    int fd[2];
} pipe_impl;

static pipe_impl P[2];
static chan C[2];

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
    if (pipe(P[k].fd) != 0) {
        snprintf(err, errn, "pipe: %s", errno_name(errno));
        return -1;
    }
    C[k].send = p_send;
    C[k].recv = p_recv;
    C[k].impl = &P[k];
    C[k].what = k == 0 ? "pipe A" : "pipe B";
    return 0;
}

static void unmake(int k)
{
    close(P[k].fd[0]);
    close(P[k].fd[1]);
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
    if (strcmp(v->variant, "oneway") == 0) {
        handoff h;
        if (make(0, err, errn) < 0)
            return -1;
        handoff_of_chan(&h, &C[0], NULL);
        rc = pair_one_way(v, &h, rcpu, scpu, 0, p->msg_size);
        unmake(0);
        return rc;
    }
    if (make(0, err, errn) < 0)
        return -1;
    if (make(1, err, errn) < 0) {
        unmake(0);
        return -1;
    }
    rc = pair_round_trip(v, &C[0], &C[1], rcpu, scpu, p->msg_size);
    unmake(0);
    unmake(1);
    return rc;
}

const probe_desc probe_pipe = {"pipe", variants, 0, workers, recorders, run, NULL};

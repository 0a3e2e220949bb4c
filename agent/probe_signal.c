/*
 * The signal probe: a thread-directed real-time signal -> the receiver's
 * sigwaitinfo() returns (sigwaittest's measurement), src/measure/signal.rs.
 * Method and invariant: pair.c, two-step cycle (`go` is the same signal
 * sent to the sender thread, which waits for it with sigwaitinfo).
 *
 * Variants: pthread_kill (POSIX), sigqueue (a queued, value-carrying signal
 * aimed at the receiver thread: pthread_sigqueue, where the port has it;
 * POSIX's own sigqueue() aims at the process, so other systems do not list
 * this variant). The signal (SIGRTMIN + 4) is blocked in every thread of the
 * agent from start-up, so only sigwaitinfo ever takes it. Placement as pipe.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <string.h>
#include "pair.h"

static const char *const variants[] = {"pthread_kill", "sigqueue", NULL};

static pthread_t target, sender_thread;
static int queued;
static chan go;

int probe_signal_signo(void)
{
#ifdef SIGRTMIN
    return SIGRTMIN + 4;
#else
    return SIGUSR2; /* no real-time signals (newlib): a port without them does not offer signal */
#endif
}

static int wait_sig(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, probe_signal_signo());
    for (;;) {
        if (sigwaitinfo(&set, NULL) >= 0)
            return 0;
        if (errno != EINTR)
            return errno;
    }
}

static int go_send(chan *c, const unsigned char *b, size_t n)
{
    (void)c, (void)b, (void)n;
    return pthread_kill(sender_thread, probe_signal_signo());
}

static int go_recv(chan *c, unsigned char *b, size_t n)
{
    (void)c, (void)b, (void)n;
    return wait_sig();
}

static int r_setup(handoff *h)
{
    (void)h;
    target = pthread_self();
    return 0;
}

static int s_setup(handoff *h)
{
    (void)h;
    sender_thread = pthread_self();
    return 0;
}

static int release(handoff *h, const unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return queued ? port_thread_sigqueue(target, probe_signal_signo()) : pthread_kill(target, probe_signal_signo());
}

static int wait_h(handoff *h, unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return wait_sig();
}

static int available(const char *v)
{
    return strcmp(v, "sigqueue") != 0 || port_has_thread_sigqueue();
}

static int run(vrun *v, char *err, size_t errn)
{
    handoff h;
    const plan *p = v->p;
    (void)err, (void)errn;
    queued = strcmp(v->variant, "sigqueue") == 0;
    memset(&h, 0, sizeof h);
    memset(&go, 0, sizeof go);
    go.send = go_send;
    go.recv = go_recv;
    go.what = "pthread_kill (go)";
    h.release = release;
    h.wait = wait_h;
    h.receiver_setup = r_setup;
    h.sender_setup = s_setup;
    h.go = &go;
    h.what = queued ? "pthread_sigqueue/sigwaitinfo" : "pthread_kill/sigwaitinfo";
    return pair_one_way(v, &h, p->cpus[0], p->cpus[p->n_cpus - 1], 0, 1);
}

const probe_desc probe_signal = {
    .name = "signal",
    .variants = variants,
    .prio_below = 1,
    .workers = pair_workers,
    .recorders = pair_recorders,
    .run = run,
    .available = available,
};

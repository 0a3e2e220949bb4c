/*
 * rtscope-agent: start-up, then one session on stdin/stdout or sessions on
 * TCP (--listen).
 *
 * Start-up (before the first protocol line): lock memory (mlockall, where
 * allowed), allocate and touch every recorder, make the worker threads, the
 * runner and the reporter (runner.c). After `hello` nothing allocates.
 *
 * Threads: the main thread runs the session (session.c: reads the host's
 * lines, so a `stop` is seen while a plan runs); the runner runs one plan at
 * a time on pool workers; the reporter sends `progress`. Measuring threads
 * only measure.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"
#include "args.h"

#ifndef RTSCOPE_TCP
#define RTSCOPE_TCP 1
#endif

#ifdef ALLOC_CHECK
extern volatile int alloc_started;
#endif

agent_state g_agent = {.mlock_text = "ok", .dma_text = "unavailable"};

/* The cost of one clock read, as the native calibration
 * (sys::time::calibrate_clock_read): 21 rounds of 1000 reads, per-read
 * time of each round; the median and the smallest round. */
static void calibrate_clock(void)
{
    uint64_t per[21], sink = 0;
    int r, i, j;
    for (r = 0; r < 21; r++) {
        uint64_t t0 = now_ns();
        for (i = 0; i < 1000; i++)
            sink += now_ns();
        per[r] = (now_ns() - t0) / 1000u;
    }
    for (i = 1; i < 21; i++) /* insertion sort, 21 values */
        for (j = i; j > 0 && per[j - 1] > per[j]; j--) {
            uint64_t t = per[j];
            per[j] = per[j - 1];
            per[j - 1] = t;
        }
    g_agent.clock_read_med = per[10];
    g_agent.clock_read_min = per[0];
    (void)sink;
}

/* Signals, the system's facts, the probes' calls, the clock, memory locking. */
static void probe_system(void)
{
    struct sigaction sa;
    struct timespec res;
    sigset_t set;
    agent_state *a = &g_agent;
    port_startup();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    /* The signal probe's signal: blocked in every thread (inherited by all
     * made later), so only its sigwaitinfo ever takes it. */
    sigemptyset(&set);
    sigaddset(&set, probe_signal_signo());
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    port_fingerprint(&a->info);
    /* Below every measuring thread, before any other thread is made (they
     * inherit it): the session, runner, reporter and idle workers. */
    a->own_prio = own_sched_init();
    a->prio_min = sched_get_priority_min(SCHED_FIFO);
    a->prio_max = sched_get_priority_max(SCHED_FIFO);
    probes_startup(); /* what the variants need, tried once: the probe lines */
    if (a->max_threads == 0)
        a->max_threads = a->info.cpus > 2 ? (a->info.cpus > MAX_THREADS ? MAX_THREADS : a->info.cpus) : 2;
#ifdef RTSCOPE_PORT_CLOCK
    a->clock_res_ns = port_clock_res_ns();
    (void)res;
#else
    if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
        a->clock_res_ns = (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec;
#endif
    calibrate_clock();
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        snprintf(a->mlock_text, sizeof a->mlock_text, "failed:%s", errno_name(errno));
    port_dma_latency(a->dma_text, sizeof a->dma_text);
}

/* Recorders (one per measuring thread, twice for periodic: latency and
 * period error) and the memory load's buffers. 0 or -1 (said). */
static int preallocate(void)
{
    agent_state *a = &g_agent;
    recorder *recs;
    int i;
    a->n_recs = 2 * a->max_threads;
    recs = calloc((size_t)a->n_recs, sizeof *recs);
    a->recs = calloc((size_t)a->n_recs, sizeof *a->recs);
    if (!recs || !a->recs) {
        fprintf(stderr, "rtscope-agent: out of memory at start-up\n");
        return -1;
    }
    for (i = 0; i < a->n_recs; i++) {
        if (recorder_alloc(&recs[i], TAIL_K_DEFAULT, a->max_seconds + 2) < 0) {
            fprintf(stderr, "rtscope-agent: out of memory at start-up (lower --max-threads / --max-seconds)\n");
            return -1;
        }
        a->recs[i] = &recs[i];
    }
    if (a->load_bytes == 0)
        return 0;
    a->load_buf = calloc((size_t)a->max_threads, sizeof *a->load_buf);
    for (i = 0; a->load_buf && i < a->max_threads; i++) {
        a->load_buf[i] = malloc(a->load_bytes);
        if (!a->load_buf[i])
            break;
        memset(a->load_buf[i], 1, a->load_bytes);
    }
    if (!a->load_buf || i < a->max_threads) {
        fprintf(stderr, "rtscope-agent: cannot preallocate --load-bytes %llu per thread\n",
                (unsigned long long)a->load_bytes);
        return -1;
    }
    return 0;
}

/* Workers (max_threads measuring + 3 for the pair senders and pi's three +
 * max_threads load threads), the runner and the reporter. 0 or -1 (said). */
static int start_threads(void)
{
    int workers = 2 * g_agent.max_threads + 3;
    pthread_attr_t a;
    size_t stack = (size_t)PTHREAD_STACK_MIN > 32 * 1024 ? (size_t)PTHREAD_STACK_MIN : 32 * 1024;
    if (pool_init(workers, 32 * 1024) < 0) {
        fprintf(stderr, "rtscope-agent: cannot create %d worker threads\n", workers);
        return -1;
    }
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack);
    g_agent.own[0] = pthread_self();
    if (pthread_create(&g_agent.own[1], &a, runner_main, NULL) != 0 ||
        pthread_create(&g_agent.own[2], &a, reporter_main, NULL) != 0) {
        fprintf(stderr, "rtscope-agent: cannot create the runner and reporter threads\n");
        return -1;
    }
    pthread_attr_destroy(&a);
    return 0;
}

/* One session on stdin/stdout. On a serial console the terminal would echo
 * the host's lines back: echo is off while the session lasts (termios). */
static int stdio_session(void)
{
    struct termios saved, t;
    int tty = isatty(0) && tcgetattr(0, &saved) == 0;
    if (tty) {
        t = saved;
        t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
        tcsetattr(0, TCSANOW, &t);
    }
    session(0, 1);
    if (tty)
        tcsetattr(0, TCSANOW, &saved);
    return 0;
}

#if !RTSCOPE_TCP
int tcp_serve(int port, int once)
{
    (void)port, (void)once;
    return 2;
}
#endif

int main(int argc, char **argv)
{
    agent_args args;
    int rc = args_parse(argc, argv, &args);
    if (rc >= 0)
        return rc;
    g_agent.max_threads = args.max_threads;
    g_agent.max_seconds = args.max_seconds;
    g_agent.load_bytes = args.load_bytes;
    probe_system();
    if (preallocate() < 0 || start_threads() < 0)
        return 1;
#ifdef ALLOC_CHECK
    alloc_started = 1;
#endif
    if (!args.listening)
        return stdio_session();
    return tcp_serve(args.listen_port, args.once);
}

/*
 * The sem probe: hand-off latency from a release to the blocked waiter
 * running (src/measure/sem.rs), for the POSIX mechanisms, each with both
 * threads on one CPU and on two. Method and invariant: pair.c (one-way).
 *
 * Variants (MECHANISM/PLACEMENT), the native names:
 * - posix:   sem_post -> sem_wait returns (unnamed, process-private sem_t).
 * - mutex:   pthread_mutex_unlock -> the waiter's pthread_mutex_lock returns
 *            (as ptsematest): the sender holds the mutex, the receiver
 *            blocks on it.
 * - condvar: pthread_cond_signal -> pthread_cond_wait returns (the waiter
 *            then also needs the mutex the sender releases right after
 *            signalling, as in any real use of a condition variable; a flag
 *            under the mutex makes a signal sent before the wait count).
 * same-cpu: both threads on the plan's first CPU, so every release preempts
 * the sender; cross-cpu: the sender on the plan's second CPU (dropped when
 * the plan has one CPU). Not here: sysv (XSI, not in every RTOS's POSIX)
 * and futex (Linux only); the agent's probe line lists what it has.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "pair.h"

static const char *const variants[] = {
    "posix/same-cpu", "posix/cross-cpu", "mutex/same-cpu", "mutex/cross-cpu",
    "condvar/same-cpu", "condvar/cross-cpu", NULL,
};

static sem_t sem;
static pthread_mutex_t mtx;
static pthread_cond_t cond;
static int flag;

static int posix_release(handoff *h, const unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return sem_post(&sem) == 0 ? 0 : errno;
}

static int posix_wait(handoff *h, unsigned char *b, size_t n)
{
    int rc;
    (void)h, (void)b, (void)n;
    while ((rc = sem_wait(&sem)) != 0 && errno == EINTR)
        ;
    return rc == 0 ? 0 : errno;
}

static void mutex_lock(handoff *h)
{
    (void)h;
    pthread_mutex_lock(&mtx);
}

static void mutex_unlock(handoff *h)
{
    (void)h;
    pthread_mutex_unlock(&mtx);
}

static int mutex_release(handoff *h, const unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return pthread_mutex_unlock(&mtx);
}

static int mutex_wait(handoff *h, unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return pthread_mutex_lock(&mtx);
}

/* condvar: the flag is set under the mutex before t0; the signal is the
 * timed release; the mutex is let go right after (after_release). */
static void cond_set(handoff *h)
{
    (void)h;
    pthread_mutex_lock(&mtx);
    flag = 1;
}

static int cond_release(handoff *h, const unsigned char *b, size_t n)
{
    (void)h, (void)b, (void)n;
    return pthread_cond_signal(&cond);
}

/* Returns holding the mutex with the flag set (t1 is taken then); cleared
 * and unlocked in after_wait. */
static int cond_wait(handoff *h, unsigned char *b, size_t n)
{
    int rc = 0;
    (void)h, (void)b, (void)n;
    pthread_mutex_lock(&mtx);
    while (!flag && rc == 0)
        rc = pthread_cond_wait(&cond, &mtx);
    return rc;
}

static void cond_clear(handoff *h)
{
    (void)h;
    flag = 0;
    pthread_mutex_unlock(&mtx);
}

static int run(vrun *v, char *err, size_t errn)
{
    handoff h;
    const plan *p = v->p;
    int cross = strstr(v->variant, "/cross-cpu") != NULL;
    int rcpu = p->cpus[0], scpu = cross ? p->cpus[1] : p->cpus[0];
    int rc;
    memset(&h, 0, sizeof h);
    if (strncmp(v->variant, "posix/", 6) == 0) {
        if (sem_init(&sem, 0, 0) != 0) {
            snprintf(err, errn, "sem_init: %s", errno_name(errno));
            return -1;
        }
        h.release = posix_release;
        h.wait = posix_wait;
        h.what = "sem_post/sem_wait";
        rc = pair_one_way(v, &h, rcpu, scpu, 0, 1);
        sem_destroy(&sem);
        return rc;
    }
    pthread_mutex_init(&mtx, NULL);
    pthread_cond_init(&cond, NULL);
    flag = 0;
    if (strncmp(v->variant, "mutex/", 6) == 0) {
        h.arm = mutex_lock;
        h.release = mutex_release;
        h.wait = mutex_wait;
        h.after_wait = mutex_unlock;
        h.what = "pthread_mutex";
    } else {
        h.before_release = cond_set;
        h.release = cond_release;
        h.after_release = mutex_unlock;
        h.wait = cond_wait;
        h.after_wait = cond_clear;
        h.what = "pthread_cond";
    }
    rc = pair_one_way(v, &h, rcpu, scpu, 0, 1);
    pthread_cond_destroy(&cond);
    pthread_mutex_destroy(&mtx);
    return rc;
}

const probe_desc probe_sem = {
    .name = "sem",
    .variants = variants,
    .prio_below = 1,
    .workers = pair_workers,
    .recorders = pair_recorders,
    .run = run,
};

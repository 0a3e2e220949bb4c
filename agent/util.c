/*
 * Small shared helpers: the clock (CLOCK_MONOTONIC in ns: every timestamp of
 * every probe comes from it, so cross-CPU differences are valid), absolute
 * sleeps, spinning, errno names without allocation (strerror may localise).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <time.h>
#include "agent.h"

#ifdef RTSCOPE_PORT_CLOCK
/* The port's own clock and absolute sleep (port_freertos.c: a hardware
 * counter and one-shot, where the system's POSIX clock is the tick). */
uint64_t now_ns(void)
{
    return port_clock_ns();
}

int sleep_until_ns(uint64_t t)
{
    return port_sleep_until_ns(t);
}
#else
uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int sleep_until_ns(uint64_t t)
{
    struct timespec ts;
    int rc;
    ts.tv_sec = (time_t)(t / 1000000000u);
    ts.tv_nsec = (long)(t % 1000000000u);
    do
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    while (rc == EINTR);
    return rc;
}
#endif

/* Slices of at most STOP_SLICE_NS, so a long sleep sees the stop flag: the
 * last slice is still one absolute sleep to t (a timed wake-up's latency is
 * that call's), and an interval up to STOP_SLICE_NS is one call as before. */
int sleep_until_or_stop(uint64_t t)
{
    for (;;) {
        uint64_t now = now_ns(), to = t;
        int rc;
        if (AT_LOAD_RELAXED(&g_stop))
            return -1;
        if (now >= t)
            return 0;
        if (t - now > STOP_SLICE_NS)
            to = now + STOP_SLICE_NS;
        if ((rc = sleep_until_ns(to)) != 0)
            return rc;
        if (to == t)
            return 0;
    }
}

void spin_for(uint64_t ns)
{
    uint64_t end;
    if (ns == 0)
        return;
    end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

const char *errno_name(int e)
{
    static const struct {
        int e;
        const char *n;
    } names[] = {
        {EPERM, "EPERM"}, {ENOENT, "ENOENT"}, {EINTR, "EINTR"}, {EIO, "EIO"},
        {EBADF, "EBADF"}, {EAGAIN, "EAGAIN"}, {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"},
        {EFAULT, "EFAULT"}, {EBUSY, "EBUSY"}, {EEXIST, "EEXIST"}, {EINVAL, "EINVAL"},
        {ENFILE, "ENFILE"}, {EMFILE, "EMFILE"}, {ENOSPC, "ENOSPC"}, {EPIPE, "EPIPE"},
        {ENOSYS, "ENOSYS"}, {ENOTSUP, "ENOTSUP"}, {EDEADLK, "EDEADLK"},
        {ETIMEDOUT, "ETIMEDOUT"}, {ESRCH, "ESRCH"}, {EOVERFLOW, "EOVERFLOW"},
        {EMSGSIZE, "EMSGSIZE"}, {ENAMETOOLONG, "ENAMETOOLONG"},
    };
    static const char *other = "errno (other)";
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].e == e)
            return names[i].n;
    return other;
}

void copy_text(char *dst, size_t n, const char *src)
{
    size_t k = strlen(src);
    if (k >= n)
        k = n - 1;
    memcpy(dst, src, k);
    dst[k] = 0;
}

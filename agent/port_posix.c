/*
 * Port file for any other POSIX system (NuttX, RTEMS, QNX, the BSDs,
 * macOS): only what POSIX.1-2008 gives. No CPU pinning (reported as
 * "skipped" set-up steps, never silently), the current CPU unknown (-1), no
 * DMA-latency request, preemption model "unknown". A system family with
 * its own affinity call gets its own port file beside this one, chosen by
 * the build (sources.mk, make PORT=...); docs/porting.md says what each
 * function must do.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "agent.h"

void port_startup(void)
{
}

void port_fingerprint(port_info *pi)
{
    struct utsname u;
    long n;
    memset(pi, 0, sizeof *pi);
    if (uname(&u) >= 0) {
        copy_text(pi->os, sizeof pi->os, u.sysname);
        copy_text(pi->release, sizeof pi->release, u.release);
        copy_text(pi->version, sizeof pi->version, u.version);
        copy_text(pi->arch, sizeof pi->arch, u.machine);
        copy_text(pi->host, sizeof pi->host, u.nodename);
    }
#ifdef _SC_NPROCESSORS_ONLN
    n = sysconf(_SC_NPROCESSORS_ONLN);
#else
    n = 0;
#endif
    pi->cpus = n > 0 ? (int)n : 0;
    pi->affinity = 0;
    copy_text(pi->preempt, sizeof pi->preempt, "unknown");
}

int port_pin_self(int cpu)
{
    (void)cpu;
    return ENOSYS;
}

int port_unpin_self(void)
{
    return 0;
}

int port_place_outside(const pthread_t *ts, int n, const unsigned char *measured, char *detail, size_t dn)
{
    (void)ts, (void)n, (void)measured;
    copy_text(detail, dn, "no CPU affinity on this system");
    return ENOSYS;
}

int port_thread_faults(uint64_t *minor, uint64_t *major)
{
    (void)minor, (void)major;
    return -1;
}

/* POSIX says nothing of how SCHED_OTHER ranks against SCHED_FIFO (on
 * NuttX it is a FIFO priority like the others): the lowest priority of
 * the real-time policy the agent was started with is the one rule that
 * holds everywhere. Started at SCHED_OTHER: left there. */
int port_lower_self(void)
{
    struct sched_param sp;
    int pol, rc = pthread_getschedparam(pthread_self(), &pol, &sp);
    if (rc != 0)
        return rc;
    if (pol != SCHED_FIFO && pol != SCHED_RR)
        return 0;
    sp.sched_priority = sched_get_priority_min(pol);
    return pthread_setschedparam(pthread_self(), pol, &sp);
}

int port_current_cpu(void)
{
    return -1;
}

int port_cpu_ok(int cpu)
{
    return cpu >= 0;
}

void port_dma_latency(char *buf, size_t n)
{
    copy_text(buf, n, "unavailable");
}
int port_thread_sigqueue(pthread_t t, int sig)
{
    (void)t, (void)sig;
    return ENOSYS;
}

int port_has_thread_sigqueue(void)
{
    return 0;
}

int port_offers(const char *probe, const char *variant)
{
    (void)probe, (void)variant;
    return 1;
}

int port_has_futex(void)
{
    return 0;
}

int port_futex_wait(uint32_t *word, uint32_t val)
{
    (void)word, (void)val;
    return ENOSYS;
}

int port_futex_wake(uint32_t *word)
{
    (void)word;
    return ENOSYS;
}

int port_event_post(uint32_t *word)
{
    (void)word;
    return ENOSYS;
}

int port_event_wait(uint32_t *word)
{
    (void)word;
    return ENOSYS;
}

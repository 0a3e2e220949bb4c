/*
 * Port file for Linux (glibc, musl, Xenomai's libcobalt on Linux): the
 * extras POSIX does not have. CPU affinity (sched_setaffinity), the current
 * CPU (sched_getcpu), /dev/cpu_dma_latency (held at 0 for the agent's life:
 * the lowest C-state exit latency, as cyclictest does), the preemption model
 * (/sys/kernel/realtime, then the PREEMPT* words of uname -v; for a
 * PREEMPT_DYNAMIC kernel the model chosen at boot, from debugfs's
 * sched/preempt when debugfs is mounted; for a kernel whose uname -v has no
 * PREEMPT word, voluntary or none from /boot/config-RELEASE, as rtscope's
 * own fingerprint reads it). Everything
 * else of the agent is POSIX.1-2008; port_posix.c covers other systems.
 * Chosen by the build (sources.mk: PORT=linux, the default on Linux).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/futex.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "agent.h"

static int word_in(const char *s, const char *w)
{
    size_t n = strlen(w);
    const char *p = s;
    while ((p = strstr(p, w)) != NULL) {
        int start = p == s || p[-1] == ' ';
        int end = p[n] == 0 || p[n] == ' ';
        if (start && end)
            return 1;
        p += n;
    }
    return 0;
}

/* The CPUs the agent was started on (taskset, a cpuset): what plans may
 * name, where idle threads go back to, and what placement chooses from.
 * Read once, first thing in main, before any thread narrows its own. */
static cpu_set_t startup_mask;
static int startup_known;

void port_startup(void)
{
#ifdef __GLIBC__
    mallopt(M_ARENA_MAX, 1);
#endif
    startup_known = sched_getaffinity(0, sizeof startup_mask, &startup_mask) == 0;
}

/*
 * A PREEMPT_DYNAMIC kernel's model is chosen at boot (preempt=); debugfs
 * shows it in parentheses: "none (voluntary) full". Writes PREEMPT for
 * full, voluntary or none into pi->preempt; leaves it as it is when the
 * file is not there (debugfs not mounted) or says something else.
 */
static void dynamic_model(port_info *pi)
{
    char buf[96];
    ssize_t n;
    const char *open_p, *close_p;
    int fd = open("/sys/kernel/debug/sched/preempt", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    open_p = strchr(buf, '(');
    close_p = open_p ? strchr(open_p, ')') : NULL;
    if (!close_p)
        return;
    if (close_p - open_p == 5 && strncmp(open_p, "(full)", 6) == 0)
        copy_text(pi->preempt, sizeof pi->preempt, "PREEMPT");
    else if (close_p - open_p == 10 && strncmp(open_p, "(voluntary)", 11) == 0)
        copy_text(pi->preempt, sizeof pi->preempt, "voluntary");
    else if (close_p - open_p == 5 && strncmp(open_p, "(none)", 6) == 0)
        copy_text(pi->preempt, sizeof pi->preempt, "none");
}

/*
 * /boot/config-RELEASE (Debian and most distributions install it beside the
 * kernel): CONFIG_PREEMPT_VOLUNTARY=y or CONFIG_PREEMPT_NONE=y names the
 * model of a kernel without a PREEMPT word in uname -v. Read through a
 * fixed buffer, line by line; an absent file leaves pi->preempt as it is.
 */
static void config_model(port_info *pi)
{
    char path[128], buf[4096], line[64];
    size_t len = 0;
    int fd, skip = 0;
    ssize_t n;
    if (snprintf(path, sizeof path, "/boot/config-%s", pi->release) >= (int)sizeof path)
        return;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        ssize_t i;
        for (i = 0; i < n; i++) {
            char c = buf[i];
            if (c != '\n') {
                if (len + 1 < sizeof line)
                    line[len++] = c;
                else
                    skip = 1; /* longer than any line looked for */
                continue;
            }
            line[len] = 0;
            if (!skip && strcmp(line, "CONFIG_PREEMPT_VOLUNTARY=y") == 0)
                copy_text(pi->preempt, sizeof pi->preempt, "voluntary");
            else if (!skip && strcmp(line, "CONFIG_PREEMPT_NONE=y") == 0)
                copy_text(pi->preempt, sizeof pi->preempt, "none");
            len = 0;
            skip = 0;
        }
    }
    close(fd);
}

void port_fingerprint(port_info *pi)
{
    struct utsname u;
    char rt[4] = {0};
    int fd;
    memset(pi, 0, sizeof *pi);
    if (uname(&u) == 0) {
        copy_text(pi->os, sizeof pi->os, u.sysname);
        copy_text(pi->release, sizeof pi->release, u.release);
        copy_text(pi->version, sizeof pi->version, u.version);
        copy_text(pi->arch, sizeof pi->arch, u.machine);
        copy_text(pi->host, sizeof pi->host, u.nodename);
    }
    pi->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (pi->cpus < 0)
        pi->cpus = 0;
    pi->affinity = 1;
    copy_text(pi->preempt, sizeof pi->preempt, "unknown");
    fd = open("/sys/kernel/realtime", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, rt, 1) == 1 && rt[0] == '1') {
            copy_text(pi->preempt, sizeof pi->preempt, "PREEMPT_RT");
            close(fd);
            return;
        }
        close(fd);
    }
    if (word_in(pi->version, "PREEMPT_RT"))
        copy_text(pi->preempt, sizeof pi->preempt, "PREEMPT_RT");
    else if (word_in(pi->version, "PREEMPT_DYNAMIC")) {
        copy_text(pi->preempt, sizeof pi->preempt, "PREEMPT_DYNAMIC");
        dynamic_model(pi);
    } else if (word_in(pi->version, "PREEMPT")) {
        copy_text(pi->preempt, sizeof pi->preempt, "PREEMPT");
    } else {
        /* No PREEMPT word: voluntary or none, which uname does not tell
         * apart; the kernel's config does. */
        config_model(pi);
    }
}

int port_pin_self(int cpu)
{
    cpu_set_t s;
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return EINVAL;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

int port_unpin_self(void)
{
    cpu_set_t s;
    long n = sysconf(_SC_NPROCESSORS_CONF), i;
    if (startup_known)
        return pthread_setaffinity_np(pthread_self(), sizeof startup_mask, &startup_mask);
    CPU_ZERO(&s);
    for (i = 0; i < n && i < CPU_SETSIZE; i++)
        CPU_SET((int)i, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* Why: the session thread reads the host's lines, the runner formats and
 * writes results and the reporter wakes every 50 ms; on a measured CPU each
 * of them is a wake-up the probe pays for, so they go where no probe runs
 * (the native runner does the same for its main thread). */
int port_place_outside(const pthread_t *ts, int n, const unsigned char *measured, char *detail, size_t dn)
{
    cpu_set_t s;
    size_t k = 0;
    int c, i, found = 0;
    CPU_ZERO(&s);
    detail[0] = 0;
    for (c = 0; c < CPU_SETSIZE; c++) {
        if (!(startup_known ? CPU_ISSET(c, &startup_mask) : c < sysconf(_SC_NPROCESSORS_ONLN)))
            continue;
        if (c < MAX_CPUS && measured[c])
            continue;
        CPU_SET(c, &s);
        if (k < dn) {
            int w = snprintf(detail + k, dn - k, "%s%d", found ? "," : "cpus ", c);
            k = w < 0 ? dn : k + (size_t)w;
        }
        found++;
    }
    if (!found) {
        /* Back to every start-up CPU (an earlier plan may have placed them
         * on one this plan measures). */
        snprintf(detail, dn, "no CPU outside the measured set; the agent's threads share them (they sleep while probes run)");
        if (startup_known)
            for (i = 0; i < n; i++)
                pthread_setaffinity_np(ts[i], sizeof startup_mask, &startup_mask);
        return ENOENT;
    }
    for (i = 0; i < n; i++) {
        int rc = pthread_setaffinity_np(ts[i], sizeof s, &s);
        if (rc) {
            snprintf(detail, dn, "pthread_setaffinity_np: %s", errno_name(rc));
            return rc;
        }
    }
    return 0;
}

int port_thread_faults(uint64_t *minor, uint64_t *major)
{
    struct rusage u;
    if (getrusage(RUSAGE_THREAD, &u) != 0)
        return -1;
    *minor = (uint64_t)u.ru_minflt;
    *major = (uint64_t)u.ru_majflt;
    return 0;
}

/* SCHED_OTHER is below every real-time thread; dropping needs no privilege. */
int port_lower_self(void)
{
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    return pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

int port_current_cpu(void)
{
    return sched_getcpu();
}

int port_cpu_ok(int cpu)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return 0;
    if (!startup_known)
        return cpu < sysconf(_SC_NPROCESSORS_ONLN);
    return CPU_ISSET(cpu, &startup_mask);
}

void port_dma_latency(char *buf, size_t n)
{
    static int fd = -1;
    int32_t zero = 0;
    if (fd >= 0) {
        copy_text(buf, n, "ok");
        return;
    }
    fd = open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        copy_text(buf, n, errno == ENOENT ? "unavailable" : errno == EACCES ? "failed:EACCES" : "failed");
        return;
    }
    if (write(fd, &zero, sizeof zero) != (ssize_t)sizeof zero) {
        close(fd);
        fd = -1;
        copy_text(buf, n, "failed:write");
        return;
    }
    /* Kept open: the request holds while the agent lives. */
    copy_text(buf, n, "ok");
}
int port_thread_sigqueue(pthread_t t, int sig)
{
    union sigval v;
    v.sival_int = 0;
    return pthread_sigqueue(t, sig, v);
}

int port_has_thread_sigqueue(void)
{
    return 1;
}

int port_offers(const char *probe, const char *variant)
{
    (void)probe, (void)variant;
    return 1;
}

int port_has_futex(void)
{
    return 1;
}

int port_futex_wait(uint32_t *word, uint32_t val)
{
    if (syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0) != 0 && errno != EAGAIN && errno != EINTR)
        return errno;
    return 0;
}

int port_futex_wake(uint32_t *word)
{
    if (syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0)
        return errno;
    return 0;
}

int port_event_post(uint32_t *word)
{
    __atomic_store_n(word, 1u, __ATOMIC_RELEASE);
    return port_futex_wake(word);
}

int port_event_wait(uint32_t *word)
{
    while (__atomic_exchange_n(word, 0u, __ATOMIC_ACQUIRE) == 0) {
        int rc = port_futex_wait(word, 0);
        if (rc)
            return rc;
    }
    return 0;
}

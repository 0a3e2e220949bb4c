/*
 * Port file for FreeRTOS with FreeRTOS+POSIX and newlib (docs/porting.md
 * "FreeRTOS"): the byte stream over the board's UART (newlib's _read and
 * _write), a clock from the board's free-running counter and an absolute
 * sleep as the board's one-shot, whose interrupt notifies the sleeping task
 * (RTSCOPE_PORT_CLOCK: FreeRTOS+POSIX's clock_gettime counts ticks; the
 * invariant: no wake-up before the counter reaches the deadline), the fingerprint from the kernel's own macros, what FreeRTOS does
 * not have left unannounced (port_offers: no pipes, no signals, mutexes
 * always inherit), and the calls the agent uses that neither FreeRTOS+POSIX
 * nor newlib gives. The board is one file beside this one (freertos/board.h).
 * The project's reset code calls rtscope_freertos_boot() (never returns).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include "agent.h"
#include "board.h"
#include "task.h"

#if configTASK_NOTIFICATION_ARRAY_ENTRIES < 2
#error "rtscope-agent: configTASK_NOTIFICATION_ARRAY_ENTRIES >= 2 (index 1 wakes the port's sleeps)"
#endif
/* FreeRTOS+POSIX's absolute clock_nanosleep tests the old name alone
 * (INCLUDE_vTaskDelayUntil == 1): with the kernel's new name
 * INCLUDE_xTaskDelayUntil instead it silently sleeps relatively. The kernel
 * maps the old name to the new one and refuses both at once. */
#if !defined(INCLUDE_vTaskDelayUntil) || INCLUDE_vTaskDelayUntil != 1
#error "rtscope-agent: INCLUDE_vTaskDelayUntil 1, not INCLUDE_xTaskDelayUntil (else FreeRTOS+POSIX's absolute sleep is a relative one)"
#endif

#define WAKE_INDEX 1
#define MAX_SLEEPERS 24

int main(int argc, char **argv);

/* ---- the clock and the absolute sleep ---- */

static uint32_t ns_per_count; /* 0: not a whole number (divide) */
static uint32_t count_hz;

uint64_t port_clock_ns(void)
{
    uint64_t c = board_count();
    if (ns_per_count)
        return c * ns_per_count;
    return c / count_hz * 1000000000u + c % count_hz * 1000000000u / count_hz;
}

uint64_t port_clock_res_ns(void)
{
    return ns_per_count ? ns_per_count : 1000000000u / count_hz + 1;
}

static uint64_t ns_to_count(uint64_t ns)
{
    if (ns_per_count)
        return (ns + ns_per_count - 1) / ns_per_count;
    return ns / 1000000000u * count_hz + (ns % 1000000000u * count_hz + 999999999u) / 1000000000u;
}

static struct {
    TaskHandle_t task;
    uint64_t at; /* board counts */
} sleepers[MAX_SLEEPERS];
static int n_sleepers;

static void arm_earliest(void)
{
    uint64_t at = UINT64_MAX;
    int i;
    for (i = 0; i < n_sleepers; i++)
        if (sleepers[i].at < at)
            at = sleepers[i].at;
    if (n_sleepers)
        board_oneshot_arm(at);
}

void board_oneshot_fired(void)
{
    BaseType_t woken = pdFALSE;
    UBaseType_t m = taskENTER_CRITICAL_FROM_ISR();
    uint64_t now = board_count();
    int i = 0;
    while (i < n_sleepers) {
        if (sleepers[i].at <= now) {
            vTaskNotifyGiveIndexedFromISR(sleepers[i].task, WAKE_INDEX, &woken);
            sleepers[i] = sleepers[--n_sleepers];
        } else {
            i++;
        }
    }
    arm_earliest();
    taskEXIT_CRITICAL_FROM_ISR(m);
    portYIELD_FROM_ISR(woken);
}

/* The board's one-shot at t, whose interrupt notifies the task: the whole
 * sleep, by default. -DRTSCOPE_FREERTOS_TICK_DELAY first sleeps whole ticks
 * to one tick before t (fewer one-shot re-arms on a far deadline), but a tick
 * lost is then a late wake-up: under a starved QEMU the emulated SysTick
 * lost ticks and periodic's 30/50 ms p50 went from 80 us to 5-6 ms (issue
 * 67; docs/porting.md "FreeRTOS"), while the counter, read from the
 * emulator's clock, lost nothing. */
int port_sleep_until_ns(uint64_t t)
{
    uint64_t now = port_clock_ns(), at;
    if (t <= now)
        return 0;
#ifdef RTSCOPE_FREERTOS_TICK_DELAY
    const uint64_t tick_ns = 1000000000u / configTICK_RATE_HZ;
    if (t - now > 2 * tick_ns)
        vTaskDelay((TickType_t)((t - now) / tick_ns - 1));
#endif
    at = ns_to_count(t);
    taskENTER_CRITICAL();
    if (n_sleepers == MAX_SLEEPERS) {
        taskEXIT_CRITICAL();
        return EAGAIN;
    }
    ulTaskNotifyTakeIndexed(WAKE_INDEX, pdTRUE, 0); /* a stale wake-up */
    sleepers[n_sleepers].task = xTaskGetCurrentTaskHandle();
    sleepers[n_sleepers].at = at;
    n_sleepers++;
    arm_earliest();
    taskEXIT_CRITICAL();
    while (board_count() < at)
        ulTaskNotifyTakeIndexed(WAKE_INDEX, pdTRUE, portMAX_DELAY);
    return 0;
}

/* ---- start-up: the agent's main as a pthread ---- */

static void *agent_thread(void *unused)
{
    static char name[] = "rtscope-agent";
    static char *argv[] = {name, NULL};
    (void)unused;
    main(1, argv);
    for (;;)
        vTaskDelay(portMAX_DELAY); /* the session ended: nothing to return to */
    return NULL;
}

void rtscope_freertos_boot(void);
void rtscope_freertos_boot(void)
{
    static pthread_t t;
    pthread_attr_t a;
    struct sched_param sp;
    board_init((uint8_t)configMAX_SYSCALL_INTERRUPT_PRIORITY);
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 16 * 1024);
    sp.sched_priority = 1;
    pthread_attr_setschedparam(&a, &sp);
    /* FreeRTOS+POSIX's pthread_self is NULL in a plain task: main runs in
     * a pthread. */
    if (pthread_create(&t, &a, agent_thread, NULL) != 0)
        for (;;)
            ;
    vTaskStartScheduler();
    for (;;)
        ;
}

void port_startup(void)
{
    count_hz = board_count_hz();
    ns_per_count = 1000000000u % count_hz == 0 ? 1000000000u / count_hz : 0;
}

void port_fingerprint(port_info *pi)
{
    memset(pi, 0, sizeof *pi);
    copy_text(pi->os, sizeof pi->os, "FreeRTOS");
    copy_text(pi->release, sizeof pi->release, tskKERNEL_VERSION_NUMBER);
    snprintf(pi->version, sizeof pi->version, "preemption=%d tickless=%d tick_hz=%lu board=%s policy=not-selectable",
             (int)configUSE_PREEMPTION, (int)configUSE_TICKLESS_IDLE, (unsigned long)configTICK_RATE_HZ, board_name());
#if defined(__ARM_ARCH_7M__)
    copy_text(pi->arch, sizeof pi->arch, "armv7-m");
#elif defined(__ARM_ARCH_7EM__)
    copy_text(pi->arch, sizeof pi->arch, "armv7e-m");
#elif defined(__ARM_ARCH_8M_MAIN__)
    copy_text(pi->arch, sizeof pi->arch, "armv8-m");
#elif defined(__ARM_ARCH_6M__)
    copy_text(pi->arch, sizeof pi->arch, "armv6-m");
#else
    copy_text(pi->arch, sizeof pi->arch, "unknown");
#endif
    copy_text(pi->host, sizeof pi->host, board_name());
    pi->cpus = 1;
    pi->affinity = 0;
    pi->tick_ns = 1000000000u / configTICK_RATE_HZ;
    copy_text(pi->sleep, sizeof pi->sleep, "timer"); /* the board's one-shot */
    copy_text(pi->preempt, sizeof pi->preempt, configUSE_PREEMPTION ? "freertos-preemptive" : "freertos-cooperative");
}

/* ---- what FreeRTOS has ---- */

int port_offers(const char *probe, const char *variant)
{
    if (strcmp(probe, "pipe") == 0 || strcmp(probe, "signal") == 0 || strcmp(probe, "preempt") == 0)
        return 0;
    if (strcmp(probe, "pi") == 0 && variant)
        return strcmp(variant, "none") != 0 && strcmp(variant, "protect") != 0;
    return 1;
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
    copy_text(detail, dn, "one CPU");
    return ENOSYS;
}

int port_thread_faults(uint64_t *minor, uint64_t *major)
{
    (void)minor, (void)major;
    return -1;
}

/* One priority space, no selectable policy: the agent's own threads go to
 * 1, above the idle task. */
int port_lower_self(void)
{
    vTaskPrioritySet(NULL, tskIDLE_PRIORITY + 1);
    return 0;
}

/* What the task runs at (port_lower_self's 1; -DRTSCOPE_PORT_OWN_PRIO):
 * FreeRTOS+POSIX's getschedparam says SCHED_OTHER and the priority the
 * pthread was created with, which would announce own_prio=0 and let -p put
 * measuring threads at or below the agent's, and have rt_reset restore the
 * created-with priority. */
int port_own_prio(void)
{
    return (int)uxTaskPriorityGet(NULL);
}

int port_current_cpu(void)
{
    return 0;
}

int port_cpu_ok(int cpu)
{
    return cpu == 0;
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

/* ---- calls the agent uses that FreeRTOS+POSIX and newlib lack ---- */

int pthread_once(pthread_once_t *once, void (*fn)(void))
{
    int run;
    vTaskSuspendAll();
    run = !once->done;
    once->done = 1;
    if (run)
        fn(); /* crc32's table: no blocking call */
    xTaskResumeAll();
    return 0;
}

/* FreeRTOS mutexes always inherit priority. */
int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol)
{
    (void)a;
    return protocol == PTHREAD_PRIO_INHERIT ? 0 : ENOTSUP;
}

int pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int prio)
{
    (void)a, (void)prio;
    return ENOTSUP;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    (void)how, (void)set;
    if (old)
        sigemptyset(old);
    return 0;
}

int pthread_kill(pthread_t t, int sig)
{
    (void)t, (void)sig;
    return ENOSYS;
}

int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
    (void)sig, (void)sa, (void)old;
    return 0; /* no signals: nothing to ignore */
}

int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
    (void)set, (void)info;
    errno = ENOSYS;
    return -1;
}

int sigqueue(pid_t pid, int sig, const union sigval v)
{
    (void)pid, (void)sig, (void)v;
    errno = ENOSYS;
    return -1;
}

int pipe(int fd[2])
{
    (void)fd;
    errno = ENOSYS;
    return -1;
}

int mlockall(int flags)
{
    (void)flags;
    return 0; /* no virtual memory: everything is resident */
}

int tcgetattr(int fd, struct termios *t)
{
    (void)fd, (void)t;
    errno = ENOTTY;
    return -1;
}

int tcsetattr(int fd, int when, const struct termios *t)
{
    (void)fd, (void)when, (void)t;
    errno = ENOTTY;
    return -1;
}

/* The agent's 64-bit atomics are library calls on ARMv7-M (no libatomic
 * here): under a critical section (no ISR uses them). */
uint64_t __atomic_load_8(const volatile void *p, int order);
uint64_t __atomic_load_8(const volatile void *p, int order)
{
    uint64_t v;
    UBaseType_t m = taskENTER_CRITICAL_FROM_ISR();
    (void)order;
    v = *(const volatile uint64_t *)p;
    taskEXIT_CRITICAL_FROM_ISR(m);
    return v;
}

void __atomic_store_8(volatile void *p, uint64_t v, int order);
void __atomic_store_8(volatile void *p, uint64_t v, int order)
{
    UBaseType_t m = taskENTER_CRITICAL_FROM_ISR();
    (void)order;
    *(volatile uint64_t *)p = v;
    taskEXIT_CRITICAL_FROM_ISR(m);
}

uint64_t __atomic_fetch_add_8(volatile void *p, uint64_t v, int order);
uint64_t __atomic_fetch_add_8(volatile void *p, uint64_t v, int order)
{
    uint64_t old;
    UBaseType_t m = taskENTER_CRITICAL_FROM_ISR();
    (void)order;
    old = *(volatile uint64_t *)p;
    *(volatile uint64_t *)p = old + v;
    taskEXIT_CRITICAL_FROM_ISR(m);
    return old;
}

/* ---- newlib's system calls: the UART is fd 0, 1 and 2 ---- */

int _read(int fd, char *buf, int n);
int _read(int fd, char *buf, int n)
{
    int c, got = 0;
    if (fd != 0) {
        errno = EBADF;
        return -1;
    }
    while ((c = board_uart_getc()) < 0)
        vTaskDelay(1); /* polled: the session reads at the agent's own priority */
    do
        buf[got++] = (char)c;
    while (got < n && c != '\n' && (c = board_uart_getc()) >= 0);
    return got;
}

int _write(int fd, const char *buf, int n);
int _write(int fd, const char *buf, int n)
{
    int i;
    if (fd != 1 && fd != 2) {
        errno = EBADF;
        return -1;
    }
    for (i = 0; i < n; i++)
        board_uart_putc((unsigned char)buf[i]);
    return n;
}

int _isatty(int fd);
int _isatty(int fd)
{
    (void)fd;
    return 0;
}

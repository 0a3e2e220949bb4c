/*
 * rtscope-agent: declarations shared by the agent's files.
 *
 * Layout (one concern per file): main.c (start-up: memory, recorders,
 * threads; stdio or TCP), args.c (the command line), session.c (reading the
 * host's lines: a kind -> handler table), announce.c (the probe table and
 * hello/probe/ready), plan.c (a plan line -> a checked plan), runner.c (the
 * runner and reporter threads, the live view), result.c (result blocks and
 * error lines), load.c (the built-in load), tcp.c (--listen; left out of a
 * build with RTSCOPE_TCP=0), proto.c (line format: CRC, escaping, parsing,
 * the locked writer), crc32.c, recorder.c (the per-thread sample store),
 * pool.c (worker threads made at start-up, the start gate, per-job
 * real-time set-up), pair.c (the two-thread hand-off pattern of
 * sem/pipe/mq/signal/preempt), probe_NAME.c (one per probe), port_OS.c
 * (everything outside POSIX.1-2008: one file per system family, chosen by
 * the build, see sources.mk).
 *
 * The protocol is docs/agent.md; nothing here may contradict it.
 */
#ifndef RTS_AGENT_H
#define RTS_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <semaphore.h>

#define AGENT_VERSION "0.1.0"
#define PROTO_VERSION 1
#define LINE_MAX_LEN 1024 /* from 'R' to the last CRC digit, no line end */

/* ---- atomics: GCC/clang builtins where there, volatile otherwise ---- */
#if defined(__GNUC__) || defined(__clang__)
#define AT_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define AT_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define AT_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define AT_STORE_RELAXED(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#else
#define AT_LOAD(p) (*(volatile __typeof__(*(p)) *)(p))
#define AT_STORE(p, v) (*(volatile __typeof__(*(p)) *)(p) = (v))
#define AT_LOAD_RELAXED(p) AT_LOAD(p)
#define AT_STORE_RELAXED(p, v) AT_STORE(p, v)
#endif

/* ---- time (CLOCK_MONOTONIC, ns) ---- */
uint64_t now_ns(void);
/* Absolute sleep on CLOCK_MONOTONIC; 0 or an errno value. */
int sleep_until_ns(uint64_t t);
/* The same, but it sees the stop flag (g_stop) within STOP_SLICE_NS: 0 at
 * t, -1 when stop came first, or an errno value. Every sleep a plan starts
 * uses it, so no wait outlives stop. */
#define STOP_SLICE_NS 100000000u
int sleep_until_or_stop(uint64_t t);
/* Bounds of a plan's times (plan.c; docs/agent.md "plan"): every deadline
 * now + duration, + interval, 50 intervals (the stall watch) fits in 64 bits. */
#define PLAN_MAX_INTERVAL_NS 3600000000000ull     /* 1 h */
#define PLAN_MAX_DURATION_NS 31536000000000000ull /* 365 days */
/* Busy-loop for ns nanoseconds (reading the clock). */
void spin_for(uint64_t ns);

/* src into dst of n bytes (n > 0), cut to fit, always terminated. */
void copy_text(char *dst, size_t n, const char *src);

/* Symbolic errno name ("EPERM"), no allocation; "errno N" text for others. */
const char *errno_name(int e);

/* ---- crc32.c ---- */
uint32_t crc32_bytes(const char *p, size_t n);

/* ---- recorder.c ---- */
#define HIST_EXACT 2048u                   /* values below: their own bucket */
#define HIST_TOP_BIT 47                    /* 2^47 ns: the top of the range */
#define HIST_LEN (2048u + 37u * 1024u)     /* buckets 0 .. index(2^47) */
#define TAIL_K_DEFAULT 1088u
#define MAX_SETUP 8
#define SETUP_TEXT 64 /* "not pinned: this system has no CPU affinity call" and more */

typedef struct {
    uint64_t hi, lo;
} u128;

typedef struct {
    uint64_t lat, at, seq;
    int32_t cpu;
} rec_sample;

typedef struct {
    uint64_t count, min, max, sum;
} rec_slot;

typedef struct {
    char step[SETUP_TEXT];
    char outcome[8];
    char detail[SETUP_TEXT];
} setup_step;

typedef struct {
    uint64_t n;
    int64_t min, max, sum;
} signed_sum;

#define HIST_WRAPS 16

typedef struct recorder {
    /* 32-bit counts (half the locked memory of 64-bit ones); a count that
     * wraps adds 2^32 in wraps[] (cold path), so no sample is ever lost. */
    uint32_t *hist;
    struct {
        uint32_t idx, n;
    } wraps[HIST_WRAPS];
    int n_wraps;
    uint64_t count, overruns, min, max;
    /* Of overruns, the periods a timer loop found already due when it was
     * about to sleep (probe_timer.c); has_late_starts: a loop that counts. */
    uint64_t late_starts;
    int has_late_starts;
    u128 sum, sumsq;
    rec_sample *tail;     /* min-heap of the tail_k largest */
    size_t tail_len, tail_k, tail_cap;
    rec_slot *slots;
    size_t n_slots, slots_cap;
    uint64_t slot_width_ns;
    /* Live view for the reporter (atomics). */
    uint64_t live_samples, live_overruns, live_max;
    /* Result metadata, filled by the probe. */
    int thread, cpu;
    uint64_t interval_ns;
    const char *error;    /* static text, or NULL */
    char error_buf[64];
    int has_signed;
    signed_sum sgn;
    setup_step setup[MAX_SETUP];
    int n_setup;
    char variant[40];
    int has_faults;       /* faults from the gate to the loop's end */
    uint64_t fault_minor, fault_major;
    const char *note;     /* static text or note_buf, or NULL */
    char note_buf[600];
} recorder;

/* Start-up: allocate and touch. 0 or -1. */
int recorder_alloc(recorder *r, size_t tail_cap, size_t slots_cap);
/* Before a run: clear, size the tail and per-second slots for duration.
 * -1 if even the widest slots do not fit (never: width grows). */
void recorder_reset(recorder *r, uint64_t duration_ns, size_t tail_k);
void recorder_record(recorder *r, uint64_t lat, uint64_t at, uint64_t seq);
void recorder_add_overruns(recorder *r, uint64_t n);
void recorder_add_setup(recorder *r, const char *step, const char *outcome, const char *detail);
void recorder_set_error(recorder *r, const char *what, int err);
/* Sort the tail largest first (in place; ends the heap). */
void recorder_finish(recorder *r);
size_t hist_index(uint64_t v);
/* Exact count of bucket idx (32-bit count + its wraps). */
uint64_t hist_count(const recorder *r, size_t idx);
uint64_t hist_lo(size_t idx);
uint64_t hist_hi(size_t idx);
void u128_add64(u128 *a, uint64_t v);
void u128_add_sq(u128 *a, uint64_t v);
/* Decimal into buf (>= 40 bytes); returns length. */
size_t u128_dec(u128 v, char *buf);

/* ---- proto.c ---- */
typedef struct {
    char buf[LINE_MAX_LEN + 16];
    size_t len;
    size_t mark;          /* for list lines: where items start */
    int items;
} line_out;

#define MAX_FIELDS 40
typedef struct {
    char kind[16];
    int n;
    char *key[MAX_FIELDS];
    char *val[MAX_FIELDS];
} line_in;

void out_set_fd(int fd);
int out_failed(void);
void out_begin(line_out *l, const char *kind);
void out_str(line_out *l, const char *key, const char *val);  /* escaped */
void out_u64(line_out *l, const char *key, uint64_t v);
void out_i64(line_out *l, const char *key, int64_t v);
void out_id(line_out *l, long id);                            /* id= or id=- */
void out_send(line_out *l);
/* List lines: begin a line with prefix fields, then items; full lines are
 * sent and restarted with the same prefix automatically. */
void list_begin(line_out *l, const char *kind, long id, long n, const char *key);
void list_item(line_out *l, const char *item);
void list_end(line_out *l);
/* Parse one received line (modified in place). 0: a protocol line parsed;
 * 1: not protocol (noise); 2: another RTS version; -1: malformed (crc or
 * grammar); *why says which. */
int parse_line(char *s, size_t len, line_in *out, const char **why);
const char *field(const line_in *l, const char *key);

/* ---- port ---- */
typedef struct {
    char os[65], release[65], version[129], arch[65], host[65];
    char preempt[24];
    int cpus;
    int affinity;          /* pinning available */
    /* Where the port knows them (else 0 and ""; hello tick_ns, sleep): the
     * kernel tick's period, and what ends the agent's sleeps: "tick" (a
     * wake-up waits for a tick), "timer" (a one-shot at the deadline). */
    uint64_t tick_ns;
    char sleep[8];
} port_info;
void port_fingerprint(port_info *pi);
/* First thing in main: system-specific start-up tuning (glibc: one malloc
 * arena, so the few start-up allocations of worker threads do not each make
 * a locked per-thread arena). */
void port_startup(void);
/* Pin the calling thread to cpu: 0 or an errno value (ENOSYS: not available). */
int port_pin_self(int cpu);
/* Back to the CPUs the agent started with (its start-up affinity). */
int port_unpin_self(void);
/* Place the agent's own threads ts[0..n) (main, runner, reporter) on the
 * start-up CPUs no probe measures (measured[c] != 0: CPU c is measured,
 * c < MAX_CPUS), as the native "main thread placement". 0: placed, detail
 * "cpus 0,2"; ENOENT: no such CPU (detail says so; they stay where they
 * are); ENOSYS: no affinity on this system; else the errno of the call. */
int port_place_outside(const pthread_t *ts, int n, const unsigned char *measured, char *detail, size_t dn);
/* Put the calling thread below every measuring thread, before the agent
 * makes its others (they inherit it): Linux: SCHED_OTHER; the generic port:
 * the lowest priority of the policy the system started it with (an RTOS's
 * first task is often SCHED_FIFO at a middle priority). 0 or an errno. */
int port_lower_self(void);
#ifdef RTSCOPE_PORT_OWN_PRIO
/* The calling thread's priority after port_lower_self, where the system's
 * pthread_getschedparam does not report it (-DRTSCOPE_PORT_OWN_PRIO,
 * sources.mk; FreeRTOS: the task's own priority, FreeRTOS+POSIX reports
 * the one the pthread was created with, at SCHED_OTHER): announced as
 * own_prio and restored by rt_reset. Elsewhere own_sched_init takes
 * getschedparam's priority at SCHED_FIFO/RR, else 0. */
int port_own_prio(void);
#endif
/* CPU the caller runs on, -1 if unknown. */
int port_current_cpu(void);
/* Hold the lowest C-state latency (Linux: /dev/cpu_dma_latency 0); text for hello. */
void port_dma_latency(char *buf, size_t n);
/* The calling thread's (minor, major) page faults so far: 0, or -1 where
 * the system cannot say (Linux: getrusage RUSAGE_THREAD). */
int port_thread_faults(uint64_t *minor, uint64_t *major);
/* Whether cpu is one the agent may use: in its start-up affinity mask
 * (not the calling thread's current one, which placement narrows). */
int port_cpu_ok(int cpu);
/* A queued signal aimed at one thread (Linux: pthread_sigqueue); ENOSYS
 * where the system has none (POSIX sigqueue aims at the process). */
int port_thread_sigqueue(pthread_t t, int sig);
int port_has_thread_sigqueue(void);
/* A binary event on a futex word (Linux); ENOSYS elsewhere. post: set and
 * wake one waiter; wait: block until set, then clear. */
int port_has_futex(void);
#ifdef RTSCOPE_PORT_CLOCK
/* A port with its own clock (-DRTSCOPE_PORT_CLOCK, sources.mk): now_ns and
 * sleep_until_ns are these; 0 or an errno value from the sleep. */
uint64_t port_clock_ns(void);
uint64_t port_clock_res_ns(void);
int port_sleep_until_ns(uint64_t t);
#endif
/* 1 if the system can run probe (variant: one of its variants, or NULL for
 * the probe as a whole): what it does not have is never announced. */
int port_offers(const char *probe, const char *variant);
int port_event_post(uint32_t *word);
int port_event_wait(uint32_t *word);
/* Ping-pong primitives: wait while *word == val; wake one. */
int port_futex_wait(uint32_t *word, uint32_t val);
int port_futex_wake(uint32_t *word);

/* ---- pool.c ---- */
typedef void (*job_fn)(void *arg);
int pool_init(int workers, size_t stack);
/* Run fn(arg) on worker w (must be idle). */
void pool_run(int w, job_fn fn, void *arg);
void pool_join(int w);
int pool_size(void);
/* The stall watch gives up on the running jobs: every pool_join returns,
 * marking its worker lost while its job still runs. */
void pool_abandon(void);
/* Workers whose job was given up on and still runs (0: the pool is whole
 * again, and joins wait as usual). */
int pool_lost(void);

typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    int need, arrived;
    unsigned gen;
} gate;
void gate_init(gate *g);
void gate_arm(gate *g, int need);
void gate_wait(gate *g);
/* gate_wait, then start counting the calling thread's page faults into rec
 * (NULL: a thread that does not record); faults_end stops counting. */
void gate_pass(gate *g, recorder *rec);
void faults_end(recorder *rec);

enum { POL_OTHER, POL_FIFO, POL_RR };
/* Real-time set-up of the calling thread, steps recorded into rec (may be
 * NULL: steps dropped); cpu -1: not pinned. */
void rt_setup(recorder *rec, int index, int cpu, int policy, int prio);
/* Back to the agent's own scheduling (own_sched_init's) and CPUs. */
void rt_reset(void);
/* The calling thread to the agent's own scheduling: first thing in every
 * thread the agent makes (not every system makes a thread inherit it). */
void own_sched_enter(void);
/* Lower the calling thread (port_lower_self) and remember where it runs,
 * for rt_reset; its real-time priority (hello own_prio), 0 when not at a
 * real-time policy; the port's own with -DRTSCOPE_PORT_OWN_PRIO. */
int own_sched_init(void);

/* ---- the run ---- */
/* Measuring threads per plan, at most (--max-threads); every per-thread
 * table of the agent is sized from it. */
#define MAX_THREADS 64
#define MAX_CPUS 256
#define MAX_VARIANTS 16
#define MAX_PERIODS 8

typedef struct {
    long id;
    char probe[24];
    char variants[MAX_VARIANTS][32];
    int n_variants;
    uint64_t interval_ns, duration_ns;
    int priority, policy;
    int cpus[MAX_CPUS];
    int n_cpus;
    int threads;
    uint64_t periods[MAX_PERIODS];
    int n_periods;
    size_t worst, tail;
    uint64_t iterations;
    size_t msg_size;
    uint64_t warmup_ns;
    uint64_t pi_burst_ns;
    int progress_ms;
    int load_cpu, load_mem;
    int load_cpus[MAX_CPUS];
    int n_load_cpus;
    size_t load_bytes;
} plan;

/* What a probe's variant run gets. */
typedef struct {
    const plan *p;
    const char *variant;       /* full variant name, or NULL */
    uint64_t duration_ns;      /* this variant's share */
    int warm;                  /* 1: warm-up pass (samples discarded) */
    recorder **recs;           /* the recorders it may use */
    int max_recs;
    int n_out;                 /* set by the probe: results in recs[0..n_out) */
} vrun;

typedef struct {
    const char *name;
    const char *const *variants;  /* NULL-terminated, or NULL */
    int uses_periods;
    /* Its lowest thread runs this far below the plan's priority (pair
     * probes: the lower thread, 1; pi: low, 2): the plan's priority minus
     * this must stay above the agent's own threads. */
    int prio_below;
    /* Threads (workers) it needs for a plan. */
    int (*workers)(const plan *p);
    /* Recorders it needs for a plan. */
    int (*recorders)(const plan *p);
    /* 0 ok; -1 on a set-up failure (msg in err). */
    int (*run)(vrun *v, char *err, size_t errn);
    /* Whether a variant exists on this system (NULL: all do). Answered
     * from what startup learnt: the announcement lists only these. */
    int (*available)(const char *variant);
    /* Once at start-up, before hello (NULL: nothing to learn): try the
     * calls the variants need (pi: the mutex protocols) so the probe line
     * names only what this system accepts (docs/agent.md "probe"). */
    void (*startup)(void);
} probe_desc;

/* The signal the signal probe uses; blocked in every thread from start-up. */
int probe_signal_signo(void);

extern volatile int g_stop;       /* raised by stop/EOF (AT_* access) */
extern const probe_desc probe_timer, probe_periodic, probe_sem, probe_mq, probe_pipe,
    probe_signal, probe_switch, probe_preempt, probe_pi;

/* Register a recorder with the reporter (before the gate). */
void live_register(recorder *r);

/* Common measuring-thread helpers. */
typedef struct {
    recorder *rec;
    int index, cpu, policy, prio;
    gate *g;
    void *ctx;
} thread_arg;

/* Timer loop shared by timer and periodic: returns 0 or an errno. on_sample
 * may be NULL. */
typedef void (*sample_cb)(void *ctx, uint64_t lat, uint64_t at, uint64_t seq);
int timer_loop(recorder *rec, uint64_t interval, uint64_t duration, uint64_t max_samples,
               sample_cb cb, void *ctx);

/* ---- the agent's start-up state (main.c), read-only once hello is sent ---- */
typedef struct {
    int max_threads;
    size_t max_seconds, load_bytes;
    port_info info;
    char mlock_text[32], dma_text[32];
    uint64_t clock_res_ns, clock_read_med, clock_read_min;
    int prio_min, prio_max;   /* sched_get_priority_min/max(SCHED_FIFO) */
    int own_prio;             /* the agent's own threads' RT priority; 0: not RT */
    recorder **recs;          /* 2 * max_threads, preallocated */
    int n_recs;
    unsigned char **load_buf; /* max_threads buffers of load_bytes, or NULL */
    pthread_t own[3];         /* the agent's own threads: session, runner, reporter */
} agent_state;
extern agent_state g_agent;

/* announce.c */
const probe_desc *probe_named(const char *name); /* NULL: not offered here */
/* A variant offered here: the port has it (port_offers) and the probe's
 * start-up found its calls (available). The probe lines and the plan's
 * variants both ask this, so a plan runs only what was announced. */
int probe_variant_offered(const probe_desc *pd, const char *variant);
void probes_startup(void);                       /* every probe's startup, once */
void send_hello(void);
/* plan.c */
int parse_u64(const char *s, uint64_t *v);
int parse_plan(const line_in *l, plan *p, char *err, size_t errn, int *unsupported);
/* result.c */
void send_error(long id, const char *code, long line, const char *msg);
void send_result(long id, int n, const char *probe, recorder *r, size_t worst, int stopped);
/* load.c: the built-in load's threads, on the pool workers from first. */
int load_start(const plan *p, int first);
void load_stop(int n, int first);
/* runner.c */
void *runner_main(void *unused);
void *reporter_main(void *unused);
int run_active(void);      /* a plan is measuring or about to */
int run_busy_for_plan(void);
void run_wait_idle(void);
/* Start p; announce(p) is called first, under the runner's lock, so its
 * lines come before any of the runner's. */
void run_submit(const plan *p, void (*announce)(const plan *p));
/* session.c: one session on fds in/out, until bye or the end of input. */
void session(int in, int out);
/* tcp.c: serve sessions on a TCP port (0: ephemeral); an exit status. */
int tcp_serve(int port, int once);

#endif

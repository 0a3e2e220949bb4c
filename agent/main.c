/*
 * rtscope-agent: start-up, the session, the runner and the reporter.
 *
 * Start-up (before the first protocol line): lock memory (mlockall, where
 * allowed), allocate and touch every recorder, make the worker threads, the
 * runner and the reporter. After `hello` nothing allocates.
 *
 * Threads: the main thread reads the host's lines (so a `stop` is seen while
 * a plan runs); the runner runs one plan at a time, handing each measuring
 * thread's loop to a worker and sending the result blocks when a variant
 * ends; the reporter sends `progress` lines from the recorders' live
 * counters (atomics). Measuring threads only measure.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>
#include "agent.h"

volatile int g_stop;

static const probe_desc *const probes[] = {
    &probe_timer, &probe_periodic, &probe_sem, &probe_pipe, &probe_mq,
    &probe_signal, &probe_switch, &probe_preempt, &probe_pi,
};
#define N_PROBES ((int)(sizeof probes / sizeof probes[0]))

/* Start-up settings. */
static int max_threads;
static size_t max_seconds = 3600;
static size_t load_bytes;
static port_info info;
static char mlock_text[32] = "ok";
static char dma_text[32] = "unavailable";
static long clock_res_ns;
static uint64_t clock_read_med, clock_read_min;

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
    clock_read_med = per[10];
    clock_read_min = per[0];
    (void)sink;
}

/* Preallocated recorders and load buffers. */
static recorder *recs;
static recorder **rec_ptrs;
static int n_recs;
static unsigned char **load_buf;

/* ---- the alloc-check build (make test-alloc) ---- */
#ifdef ALLOC_CHECK
extern volatile long alloc_count_after_start;
extern volatile long alloc_count_before_start;
extern volatile int alloc_started;
#endif

/* ---- live view for the reporter ---- */
static pthread_mutex_t live_m = PTHREAD_MUTEX_INITIALIZER;
static recorder *live_recs[64];
static int live_n;
static long live_id = -1;
static char live_variant[40];
static uint64_t live_start;
static int live_progress_ms = 250;

void live_register(recorder *r)
{
    pthread_mutex_lock(&live_m);
    if (live_n < (int)(sizeof live_recs / sizeof live_recs[0]))
        live_recs[live_n++] = r;
    pthread_mutex_unlock(&live_m);
}

static void live_begin(long id, const char *variant, int progress_ms)
{
    pthread_mutex_lock(&live_m);
    live_n = 0;
    live_id = id;
    snprintf(live_variant, sizeof live_variant, "%s", variant ? variant : "-");
    live_start = now_ns();
    live_progress_ms = progress_ms;
    pthread_mutex_unlock(&live_m);
}

static void live_end(void)
{
    pthread_mutex_lock(&live_m);
    live_n = 0;
    live_id = -1;
    pthread_mutex_unlock(&live_m);
}

static void *reporter_main(void *unused)
{
    line_out l;
    uint64_t next = now_ns(), last = 0;
    (void)unused;
    for (;;) {
        uint64_t s = 0, o = 0, m = 0, now, start = 0;
        long id;
        int ms, i, due = 0;
        next += 50000000u; /* wake every 50 ms; send at progress_ms */
        sleep_until_ns(next);
        /* Copy under the lock, write without it: a slow host never holds
         * up the runner (or a measuring thread registering). */
        pthread_mutex_lock(&live_m);
        ms = live_progress_ms;
        id = live_id;
        now = now_ns();
        if (id >= 0 && live_n > 0 && ms > 0 && now - last >= (uint64_t)ms * 1000000u) {
            due = 1;
            last = now;
            start = live_start;
            for (i = 0; i < live_n; i++) {
                uint64_t x = AT_LOAD_RELAXED(&live_recs[i]->live_max);
                s += AT_LOAD_RELAXED(&live_recs[i]->live_samples);
                o += AT_LOAD_RELAXED(&live_recs[i]->live_overruns);
                if (x > m)
                    m = x;
            }
            out_begin(&l, "progress");
            out_id(&l, id);
            out_str(&l, "variant", live_variant);
        }
        pthread_mutex_unlock(&live_m);
        if (!due)
            continue;
        out_u64(&l, "samples", s);
        out_u64(&l, "overruns", o);
        out_u64(&l, "max_ns", m);
        out_u64(&l, "elapsed_ns", now - start);
        out_send(&l);
    }
    return NULL;
}

/* ---- the announcement ---- */

/* A probe is offered when it has no variant list or one of its variants is
 * available on this system. */
static int probe_listed(const probe_desc *pd)
{
    int k;
    if (!pd->variants || !pd->available)
        return 1;
    for (k = 0; pd->variants[k]; k++)
        if (pd->available(pd->variants[k]))
            return 1;
    return 0;
}

static void send_hello(void)
{
    line_out l;
    int i, k, n_listed;
    out_begin(&l, "hello");
    out_u64(&l, "proto", PROTO_VERSION);
    out_str(&l, "agent", AGENT_VERSION);
    out_str(&l, "os", info.os);
    out_str(&l, "release", info.release);
    out_str(&l, "version", info.version);
    out_str(&l, "arch", info.arch);
    out_str(&l, "host", info.host);
    out_u64(&l, "cpus", (uint64_t)info.cpus);
    out_str(&l, "clock", "CLOCK_MONOTONIC");
    out_u64(&l, "res_ns", (uint64_t)clock_res_ns);
    out_u64(&l, "clock_read_ns", clock_read_med);
    out_u64(&l, "clock_read_min_ns", clock_read_min);
    out_str(&l, "preempt", info.preempt);
    out_str(&l, "mlock", mlock_text);
    out_u64(&l, "max_threads", (uint64_t)max_threads);
    out_u64(&l, "max_seconds", (uint64_t)max_seconds);
    out_u64(&l, "load_bytes", (uint64_t)load_bytes);
    out_u64(&l, "max_line", LINE_MAX_LEN);
#ifdef ALLOC_CHECK
    out_u64(&l, "alloc_check", 1);
    /* Allocations counted during start-up: proves the counter is live. */
    out_u64(&l, "allocs_startup", (uint64_t)alloc_count_before_start);
#else
    out_u64(&l, "alloc_check", 0);
#endif
    out_str(&l, "dma_latency", dma_text);
    out_u64(&l, "affinity", (uint64_t)info.affinity);
    out_send(&l);
    for (i = 0, k = 0; i < N_PROBES; i++)
        k += probe_listed(probes[i]);
    n_listed = k;
    for (i = 0; i < N_PROBES; i++) {
        if (!probe_listed(probes[i]))
            continue;
        out_begin(&l, "probe");
        out_str(&l, "name", probes[i]->name);
        if (probes[i]->variants) {
            line_out v;
            out_begin(&v, "x");
            v.len = 0;
            for (k = 0; probes[i]->variants[k]; k++) {
                size_t n = strlen(probes[i]->variants[k]);
                if (probes[i]->available && !probes[i]->available(probes[i]->variants[k]))
                    continue;
                if (v.len)
                    v.buf[v.len++] = ',';
                memcpy(v.buf + v.len, probes[i]->variants[k], n);
                v.len += n;
            }
            v.buf[v.len] = 0;
            out_str(&l, "variants", v.buf);
        } else {
            out_str(&l, "variants", "");
        }
        if (probes[i]->uses_periods)
            out_u64(&l, "periods", 1);
        out_send(&l);
    }
    out_begin(&l, "ready");
    out_u64(&l, "probes", (uint64_t)n_listed);
    out_send(&l);
}

static void send_error(long id, const char *code, long line, const char *msg)
{
    line_out l;
    out_begin(&l, "error");
    out_id(&l, id);
    out_str(&l, "code", code);
    if (line > 0)
        out_u64(&l, "line", (uint64_t)line);
    else
        out_str(&l, "line", "-");
    out_str(&l, "msg", msg);
    out_send(&l);
}

/* ---- plan parsing ---- */

static int parse_u64(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10u)
            return -1;
        x = x * 10u + (uint64_t)(*s - '0');
    }
    *v = x;
    return 0;
}

/* Comma list of numbers into out (at most max); count or -1. */
static int parse_list(const char *s, uint64_t *out, int max)
{
    char item[32];
    int n = 0;
    if (!s || !*s)
        return 0;
    while (*s) {
        size_t k = 0;
        while (s[k] && s[k] != ',')
            k++;
        if (k == 0 || k >= sizeof item || n >= max)
            return -1;
        memcpy(item, s, k);
        item[k] = 0;
        if (parse_u64(item, &out[n]) < 0)
            return -1;
        n++;
        s += k;
        if (*s == ',') {
            s++;
            if (!*s)
                return -1;
        }
    }
    return n;
}

static const probe_desc *probe_named(const char *name)
{
    int i;
    for (i = 0; i < N_PROBES; i++)
        if (strcmp(probes[i]->name, name) == 0)
            return probe_listed(probes[i]) ? probes[i] : NULL;
    return NULL;
}

/* Native names of a period: 10ms, 1s, 250us, 1500ns (as units::fmt_ns). */
static void fmt_period(uint64_t ns, char *buf, size_t n)
{
    static const struct {
        uint64_t u;
        const char *name;
    } units[] = {
        {86400000000000ull, "d"}, {3600000000000ull, "h"}, {60000000000ull, "m"},
        {1000000000ull, "s"}, {1000000ull, "ms"}, {1000ull, "us"},
    };
    size_t i;
    for (i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ns >= units[i].u && ns % units[i].u == 0) {
            snprintf(buf, n, "%llu%s", (unsigned long long)(ns / units[i].u), units[i].name);
            return;
        }
    if (ns >= 1000000000ull) {
        uint64_t ms = (ns + 500000ull) / 1000000ull; /* {:.3}s rounds */
        snprintf(buf, n, "%llu.%03llus", (unsigned long long)(ms / 1000u), (unsigned long long)(ms % 1000u));
        return;
    }
    snprintf(buf, n, "%lluns", (unsigned long long)ns);
}

static int bad(char *err, size_t n, const char *key, const char *what)
{
    snprintf(err, n, "%s: %s", key, what);
    return -1;
}

/* Fill p from a plan line; -1 with err naming the key. *unsupported set when
 * the probe or a variant is not this agent's. */
static int parse_plan(const line_in *l, plan *p, char *err, size_t errn, int *unsupported)
{
    const char *v;
    uint64_t x, list[MAX_CPUS];
    int n, i, k;
    const probe_desc *pd;
    memset(p, 0, sizeof *p);
    *unsupported = 0;
    p->id = -1;
    if (parse_u64(field(l, "id"), &x) < 0 || x > 2000000000u)
        return bad(err, errn, "id", "missing or not a number");
    p->id = (long)x;
    v = field(l, "probe");
    if (!v)
        return bad(err, errn, "probe", "missing");
    pd = probe_named(v);
    if (!pd) {
        *unsupported = 1;
        return bad(err, errn, "probe", "not a probe of this agent (see its probe lines)");
    }
    snprintf(p->probe, sizeof p->probe, "%s", v);
    if (parse_u64(field(l, "interval_ns"), &p->interval_ns) < 0 || p->interval_ns == 0) {
        if (pd->uses_periods && !field(l, "interval_ns"))
            p->interval_ns = 1000000u; /* unused: periods_ns pace it */
        else
            return bad(err, errn, "interval_ns", "missing or not a positive number");
    }
    if (parse_u64(field(l, "duration_ns"), &p->duration_ns) < 0 || p->duration_ns == 0)
        return bad(err, errn, "duration_ns", "missing or not a positive number");
    if (parse_u64(field(l, "priority"), &x) < 0 || x < 1 || x > 99)
        return bad(err, errn, "priority", "missing or not 1..99");
    p->priority = (int)x;
    v = field(l, "policy");
    if (!v)
        return bad(err, errn, "policy", "missing");
    if (strcmp(v, "fifo") == 0)
        p->policy = POL_FIFO;
    else if (strcmp(v, "rr") == 0)
        p->policy = POL_RR;
    else if (strcmp(v, "other") == 0)
        p->policy = POL_OTHER;
    else
        return bad(err, errn, "policy", "not fifo, rr or other");
    n = parse_list(field(l, "cpus"), list, MAX_CPUS);
    if (n <= 0)
        return bad(err, errn, "cpus", "missing or not a list of CPU numbers");
    for (i = 0; i < n; i++) {
        if (list[i] >= MAX_CPUS || !port_cpu_ok((int)list[i]))
            return bad(err, errn, "cpus", "names a CPU that is not online");
        p->cpus[i] = (int)list[i];
    }
    p->n_cpus = n;
    if (parse_u64(field(l, "threads"), &x) < 0 || x == 0)
        return bad(err, errn, "threads", "missing or not a positive number");
    if (x > (uint64_t)max_threads)
        return bad(err, errn, "threads", "more than the agent preallocated: start it with a larger --max-threads");
    p->threads = (int)x;
    if (parse_u64(field(l, "worst"), &x) < 0 || x == 0 || x > TAIL_K_DEFAULT)
        return bad(err, errn, "worst", "missing or not 1..1088");
    p->worst = (size_t)x;
    p->tail = 0; /* per variant: the native tail_capacity(share, interval) */
    if ((v = field(l, "tail")) != NULL) {
        if (parse_u64(v, &x) < 0 || x == 0 || x > TAIL_K_DEFAULT)
            return bad(err, errn, "tail", "not 1..1088");
        p->tail = (size_t)x < p->worst ? p->worst : (size_t)x;
    }
    p->iterations = UINT64_MAX;
    if ((v = field(l, "iterations")) != NULL && (parse_u64(v, &p->iterations) < 0 || p->iterations == 0))
        return bad(err, errn, "iterations", "not a positive number");
    p->msg_size = 16;
    if ((v = field(l, "msg_size")) != NULL) {
        if (parse_u64(v, &x) < 0 || x < 16 || x > 4096)
            return bad(err, errn, "msg_size", "not 16..4096 (bytes; the agent carries the send time in the message)");
        p->msg_size = (size_t)x;
    }
    if ((v = field(l, "warmup_ns")) != NULL && parse_u64(v, &p->warmup_ns) < 0)
        return bad(err, errn, "warmup_ns", "not a number");
    p->pi_burst_ns = 1000000u;
    if ((v = field(l, "pi_burst_ns")) != NULL && (parse_u64(v, &p->pi_burst_ns) < 0 || p->pi_burst_ns > 100000000u))
        return bad(err, errn, "pi_burst_ns", "not 0..100000000 (at most 100 ms)");
    p->progress_ms = 250;
    if ((v = field(l, "progress_ms")) != NULL) {
        if (parse_u64(v, &x) < 0 || x > 3600000u)
            return bad(err, errn, "progress_ms", "not 0..3600000");
        p->progress_ms = (int)x;
    }
    if ((v = field(l, "periods_ns")) != NULL) {
        n = parse_list(v, p->periods, MAX_PERIODS);
        if (n < 0)
            return bad(err, errn, "periods_ns", "not a list of at most 8 periods in ns");
        for (i = 0; i < n; i++)
            if (p->periods[i] == 0)
                return bad(err, errn, "periods_ns", "a period of 0");
        p->n_periods = n;
    }
    /* Variants: the plan's (validated), or all the agent has. */
    v = field(l, "variants");
    if (pd->uses_periods) {
        if (p->n_periods == 0) {
            p->periods[0] = 10000000u;
            p->periods[1] = 30000000u;
            p->periods[2] = 50000000u;
            p->n_periods = 3;
        }
        for (i = 0; i < p->n_periods; i++)
            fmt_period(p->periods[i], p->variants[i], sizeof p->variants[i]);
        p->n_variants = p->n_periods;
        if (v && *v)
            return bad(err, errn, "variants", "periodic takes periods_ns, not variants");
    } else if (pd->variants) {
        int want[MAX_VARIANTS];
        int nv = 0;
        for (k = 0; pd->variants[k]; k++)
            want[k] = !(v && *v);
        nv = k;
        if (v && *v) {
            const char *s = v;
            while (*s) {
                size_t m = 0;
                int found = 0;
                while (s[m] && s[m] != ',')
                    m++;
                for (k = 0; k < nv; k++)
                    if (strlen(pd->variants[k]) == m && strncmp(pd->variants[k], s, m) == 0 &&
                        (!pd->available || pd->available(pd->variants[k])))
                        want[k] = found = 1;
                if (!found) {
                    *unsupported = 1;
                    return bad(err, errn, "variants", "names a variant this agent does not have (see its probe lines)");
                }
                s += m;
                if (*s == ',')
                    s++;
            }
        }
        for (k = 0; k < nv; k++) {
            if (!want[k] || (pd->available && !pd->available(pd->variants[k])))
                continue;
            /* One CPU: no cross-CPU pair (as natively). */
            if (p->n_cpus < 2 && strstr(pd->variants[k], "/cross-cpu"))
                continue;
            snprintf(p->variants[p->n_variants++], sizeof p->variants[0], "%s", pd->variants[k]);
        }
        if (p->n_variants == 0)
            return bad(err, errn, "variants", "none left to run (cross-cpu variants need two CPUs in cpus)");
    } else if (v && *v) {
        return bad(err, errn, "variants", "this probe has no variants");
    }
    /* Built-in load. */
    if ((v = field(l, "load")) != NULL) {
        if (strcmp(v, "none") == 0)
            ;
        else if (strcmp(v, "cpu") == 0)
            p->load_cpu = 1;
        else if (strcmp(v, "mem") == 0)
            p->load_mem = 1;
        else if (strcmp(v, "cpu+mem") == 0)
            p->load_cpu = p->load_mem = 1;
        else
            return bad(err, errn, "load", "not none, cpu, mem or cpu+mem");
    }
    if (p->load_mem && load_bytes == 0)
        return bad(err, errn, "load", "mem needs memory preallocated: start the agent with --load-bytes BYTES");
    if (p->load_cpu || p->load_mem) {
        n = parse_list(field(l, "load_cpus"), list, MAX_CPUS);
        if (n < 0)
            return bad(err, errn, "load_cpus", "not a list of CPU numbers");
        if (n == 0)
            for (i = 0; i < info.cpus && n < MAX_CPUS; i++)
                list[n++] = (uint64_t)i;
        if (n > max_threads)
            return bad(err, errn, "load_cpus", "more load threads than --max-threads");
        for (i = 0; i < n; i++) {
            if (list[i] >= MAX_CPUS || !port_cpu_ok((int)list[i]))
                return bad(err, errn, "load_cpus", "names a CPU that is not online");
            p->load_cpus[i] = (int)list[i];
        }
        p->n_load_cpus = n;
        p->load_bytes = load_bytes;
        if ((v = field(l, "load_bytes")) != NULL) {
            if (parse_u64(v, &x) < 0 || x == 0 || x > load_bytes)
                return bad(err, errn, "load_bytes", "not 1..the agent's --load-bytes");
            p->load_bytes = (size_t)x;
        }
    }
    if (pd->recorders(p) > n_recs || pd->workers(p) > max_threads + 3)
        return bad(err, errn, "threads", "needs more recorders/threads than preallocated: start the agent with a larger --max-threads");
    return 0;
}

/* ---- results ---- */

static void send_result(long id, int n, const char *probe, recorder *r, size_t worst, int stopped)
{
    line_out l;
    char item[160], a[48], c[48];
    size_t i, n_hist = 0, n_sec = 0, top = hist_index((uint64_t)1 << HIST_TOP_BIT);
    recorder_finish(r);
    for (i = 0; i < HIST_LEN; i++)
        if (r->hist[i])
            n_hist++;
    for (i = 0; i < r->n_slots; i++)
        if (r->slots[i].count)
            n_sec++;
    out_begin(&l, "result");
    out_id(&l, id);
    out_u64(&l, "n", (uint64_t)n);
    out_str(&l, "probe", probe);
    out_str(&l, "variant", r->variant[0] ? r->variant : "-");
    out_u64(&l, "thread", (uint64_t)r->thread);
    if (r->cpu >= 0)
        out_u64(&l, "cpu", (uint64_t)r->cpu);
    else
        out_str(&l, "cpu", "-");
    out_u64(&l, "interval_ns", r->interval_ns);
    out_u64(&l, "samples", r->count);
    out_u64(&l, "overruns", r->overruns);
    out_u64(&l, "min_ns", r->count ? r->min : 0);
    out_u64(&l, "max_ns", r->max);
    u128_dec(r->sum, a);
    out_str(&l, "sum", a);
    u128_dec(r->sumsq, a);
    out_str(&l, "sumsq", a);
    out_u64(&l, "hist", n_hist);
    out_u64(&l, "tail", r->tail_len);
    out_u64(&l, "tail_k", r->tail_k);
    out_u64(&l, "worst", worst);
    out_u64(&l, "sec", n_sec);
    out_u64(&l, "width_s", r->slot_width_ns / 1000000000u);
    out_u64(&l, "setup", (uint64_t)r->n_setup);
    out_u64(&l, "stopped", (uint64_t)(stopped ? 1 : 0));
    if (r->error)
        out_str(&l, "error", r->error);
    out_u64(&l, "notes", r->note ? 1u : 0u);
    if (r->has_faults) {
        snprintf(a, sizeof a, "%llu:%llu", (unsigned long long)r->fault_minor, (unsigned long long)r->fault_major);
        out_str(&l, "faults", a);
    }
    if (r->has_signed) {
        snprintf(item, sizeof item, "%llu:%lld:%lld:%lld", (unsigned long long)r->sgn.n,
                 (long long)(r->sgn.n ? r->sgn.min : 0), (long long)(r->sgn.n ? r->sgn.max : 0),
                 (long long)r->sgn.sum);
        out_str(&l, "signed", item);
    }
    out_send(&l);
    for (i = 0; i < (size_t)r->n_setup; i++) {
        out_begin(&l, "setup");
        out_id(&l, id);
        out_u64(&l, "n", (uint64_t)n);
        out_str(&l, "step", r->setup[i].step);
        out_str(&l, "outcome", r->setup[i].outcome);
        out_str(&l, "detail", r->setup[i].detail);
        out_send(&l);
    }
    if (r->note) {
        /* On its own line: an escaped note can be long. */
        out_begin(&l, "note");
        out_id(&l, id);
        out_u64(&l, "n", (uint64_t)n);
        out_str(&l, "text", r->note);
        out_send(&l);
    }
    list_begin(&l, "hist", id, n, "b");
    for (i = 0; i < HIST_LEN; i++) {
        uint64_t hi;
        if (!r->hist[i])
            continue;
        hi = hist_hi(i);
        if (i == top && r->max > hi)
            hi = r->max; /* saturated values: the top bucket reaches the max */
        snprintf(item, sizeof item, "%llu:%llu:%llu", (unsigned long long)hist_lo(i),
                 (unsigned long long)hi, (unsigned long long)hist_count(r, i));
        list_item(&l, item);
    }
    list_end(&l);
    list_begin(&l, "tail", id, n, "s");
    for (i = 0; i < r->tail_len; i++) {
        const rec_sample *t = &r->tail[i];
        if (t->cpu >= 0)
            snprintf(c, sizeof c, "%d", (int)t->cpu);
        else
            snprintf(c, sizeof c, "-");
        snprintf(item, sizeof item, "%llu:%llu:%llu:%s", (unsigned long long)t->lat,
                 (unsigned long long)t->at, (unsigned long long)t->seq, c);
        list_item(&l, item);
    }
    list_end(&l);
    list_begin(&l, "sec", id, n, "s");
    for (i = 0; i < r->n_slots; i++) {
        const rec_slot *s = &r->slots[i];
        if (!s->count)
            continue;
        snprintf(item, sizeof item, "%llu:%llu:%llu:%llu:%llu",
                 (unsigned long long)(i * (r->slot_width_ns / 1000000000u)), (unsigned long long)s->count,
                 (unsigned long long)s->min, (unsigned long long)s->max, (unsigned long long)s->sum);
        list_item(&l, item);
    }
    list_end(&l);
    out_begin(&l, "end");
    out_id(&l, id);
    out_u64(&l, "n", (uint64_t)n);
    out_send(&l);
}

/* ---- built-in load: busy and memory-streaming threads at SCHED_OTHER ---- */

typedef struct {
    int cpu, mem;
    unsigned char *buf;
    size_t bytes;
    volatile int *quit;
} hog_arg;

static volatile int hog_quit;
static hog_arg hog_args[MAX_CPUS];

static void hog_job(void *p)
{
    hog_arg *h = p;
    volatile unsigned long sink = 0;
    size_t i = 0;
    rt_setup(NULL, 0, h->cpu, POL_OTHER, 0);
    while (!AT_LOAD_RELAXED(h->quit)) {
        if (h->mem) {
            size_t k;
            for (k = 0; k < 4096 && i < h->bytes; k += 64, i += 64)
                h->buf[i] = (unsigned char)(h->buf[i] + 1u);
            if (i >= h->bytes)
                i = 0;
        } else {
            int k;
            for (k = 0; k < 1000; k++)
                sink += (unsigned long)k;
        }
    }
    (void)sink;
}

static int start_load(const plan *p)
{
    int i;
    if (!p->load_cpu && !p->load_mem)
        return 0;
    AT_STORE(&hog_quit, 0);
    for (i = 0; i < p->n_load_cpus; i++) {
        hog_arg *h = &hog_args[i];
        h->cpu = p->load_cpus[i];
        /* cpu+mem: alternate busy and memory threads over the CPUs. */
        h->mem = p->load_mem && (!p->load_cpu || i % 2 == 1);
        h->buf = load_buf ? load_buf[i] : NULL;
        h->bytes = p->load_bytes;
        h->quit = &hog_quit;
        pool_run(max_threads + 3 + i, hog_job, h);
    }
    return p->n_load_cpus;
}

static void stop_load(int n)
{
    int i;
    AT_STORE(&hog_quit, 1);
    for (i = 0; i < n; i++)
        pool_join(max_threads + 3 + i);
}

/* ---- the runner ---- */

static pthread_mutex_t run_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_c = PTHREAD_COND_INITIALIZER;
static plan cur;
/* finishing: the runner has measured and is sending its plan's "done"; a
 * plan that arrives then (the host sends the next one as soon as it reads
 * "done") waits for it instead of being refused as busy. */
static int run_pending, running, finishing;

static int run_pass(const plan *p, const probe_desc *pd, int warm, int *results, int *stopped, char *err, size_t errn)
{
    int v, nv = p->n_variants ? p->n_variants : 1;
    uint64_t total = warm ? p->warmup_ns : p->duration_ns;
    uint64_t share = total / (uint64_t)nv;
    for (v = 0; v < nv; v++) {
        vrun vr;
        int i;
        const char *name = p->n_variants ? p->variants[v] : NULL;
        if (AT_LOAD(&g_stop)) {
            *stopped = 1;
            break;
        }
        memset(&vr, 0, sizeof vr);
        vr.p = p;
        vr.variant = name;
        vr.duration_ns = share ? share : 1;
        vr.warm = warm;
        vr.recs = rec_ptrs;
        vr.max_recs = n_recs;
        {
            /* As natively (spawn_measuring): tail_capacity(the probe's
             * duration, interval), a tenth of the planned samples + 64, at
             * most 1088, never below --worst; slots sized from the probe's
             * duration too. */
            uint64_t iv = pd->uses_periods ? p->periods[v] : p->interval_ns;
            uint64_t tk = p->tail;
            if (tk == 0) {
                tk = total / iv / 10u + 64u;
                if (tk > TAIL_K_DEFAULT)
                    tk = TAIL_K_DEFAULT;
                if (tk < p->worst)
                    tk = p->worst;
            }
            for (i = 0; i < n_recs; i++)
                recorder_reset(rec_ptrs[i], total ? total : 1, (size_t)tk);
        }
        if (!warm) {
            line_out l;
            out_begin(&l, "begin");
            out_id(&l, p->id);
            out_str(&l, "variant", name ? name : "-");
            out_u64(&l, "threads", (uint64_t)(pd->uses_periods ? pd->recorders(p) / 2 : pd->recorders(p)));
            out_u64(&l, "duration_ns", vr.duration_ns);
            out_send(&l);
            live_begin(p->id, name, p->progress_ms);
        } else {
            live_begin(-1, name, 0);
        }
        if (pd->run(&vr, err, errn) < 0) {
            live_end();
            return -1;
        }
        live_end();
        if (warm)
            continue;
        if (AT_LOAD(&g_stop))
            *stopped = 1;
        for (i = 0; i < vr.n_out; i++)
            send_result(p->id, (*results)++, p->probe, vr.recs[i], p->worst, *stopped);
    }
    return 0;
}

static void *runner_main(void *unused)
{
    (void)unused;
    for (;;) {
        plan *p = &cur;
        const probe_desc *pd;
        char err[160];
        int results = 0, stopped = 0, hogs, rc = 0;
        line_out l;
        pthread_mutex_lock(&run_m);
        while (!run_pending)
            pthread_cond_wait(&run_c, &run_m);
        run_pending = 0;
        pthread_mutex_unlock(&run_m);
        pd = probe_named(p->probe);
        err[0] = 0;
        hogs = start_load(p);
        if (p->warmup_ns > 0)
            rc = run_pass(p, pd, 1, &results, &stopped, err, sizeof err);
        if (rc == 0)
            rc = run_pass(p, pd, 0, &results, &stopped, err, sizeof err);
        stop_load(hogs);
        if (rc < 0)
            send_error(p->id, "internal", 0, err);
        out_begin(&l, "done");
        out_id(&l, p->id);
        out_str(&l, "status", rc < 0 ? "failed" : (stopped || AT_LOAD(&g_stop)) ? "stopped" : "complete");
        out_u64(&l, "results", (uint64_t)results);
        if (rc < 0)
            out_str(&l, "msg", err);
#ifdef ALLOC_CHECK
        out_u64(&l, "allocs", (uint64_t)alloc_count_after_start);
#endif
        pthread_mutex_lock(&run_m);
        finishing = 1;
        pthread_mutex_unlock(&run_m);
        out_send(&l);
        pthread_mutex_lock(&run_m);
        running = 0;
        finishing = 0;
        pthread_cond_broadcast(&run_c);
        pthread_mutex_unlock(&run_m);
    }
    return NULL;
}

static int is_running(void)
{
    int r;
    pthread_mutex_lock(&run_m);
    r = running || run_pending;
    pthread_mutex_unlock(&run_m);
    return r;
}

/* Busy for a new plan: a plan is measuring or about to. One whose "done"
 * is being sent is waited for (a few µs), not refused: the host may have
 * read that "done" already. */
static int busy_for_plan(void)
{
    int r;
    pthread_mutex_lock(&run_m);
    while (finishing && running)
        pthread_cond_wait(&run_c, &run_m);
    r = running || run_pending;
    pthread_mutex_unlock(&run_m);
    return r;
}

static void wait_idle(void)
{
    pthread_mutex_lock(&run_m);
    while (running || run_pending)
        pthread_cond_wait(&run_c, &run_m);
    pthread_mutex_unlock(&run_m);
}

/* ---- the session: read the host's lines ---- */

/* The agent's own kinds, echoed back by a terminal: ignored. */
static int own_kind(const char *k)
{
    static const char *const own[] = {"hello", "probe", "ready", "ack", "setup", "begin", "progress",
                                      "result", "note", "hist", "tail", "sec", "end", "done", "error"};
    size_t i;
    for (i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(k, own[i]) == 0)
            return 1;
    return 0;
}

static char in_buf[LINE_MAX_LEN + 2];

/* The agent's own threads (session, runner, reporter): placed off the plan's
 * CPUs for each plan, and the outcome sent as the set-up step "main thread
 * placement" (the native step's name). */
static pthread_t own_threads[3];

static void send_placement(const plan *p)
{
    unsigned char measured[MAX_CPUS];
    char detail[SETUP_TEXT * 2];
    line_out l;
    int i, rc;
    memset(measured, 0, sizeof measured);
    for (i = 0; i < p->n_cpus; i++)
        measured[p->cpus[i]] = 1;
    rc = port_place_outside(own_threads, 3, measured, detail, sizeof detail);
    out_begin(&l, "setup");
    out_id(&l, p->id);
    out_str(&l, "n", "-");
    out_str(&l, "step", "main thread placement");
    out_str(&l, "outcome", rc == 0 ? "ok" : rc == ENOENT || rc == ENOSYS ? "skipped" : "failed");
    out_str(&l, "detail", detail);
    out_send(&l);
}

/* One session on fds in/out; returns when the host says bye or the input ends. */
static void session(int in, int out)
{
    size_t have = 0;
    int skipping = 0;
    long lineno = 0;
    int bye = 0;
    out_set_fd(out);
    send_hello();
    while (!bye) {
        char *nl;
        ssize_t r;
        if (have >= sizeof in_buf - 1 && !(nl = memchr(in_buf, '\n', have))) {
            /* Over the limit: skip up to the next line end. */
            if (!skipping)
                send_error(-1, "too-long", lineno + 1, "line over 1024 bytes; skipped");
            skipping = 1;
            have = 0;
        }
        r = read(in, in_buf + have, sizeof in_buf - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        while ((nl = memchr(in_buf, '\n', have)) != NULL) {
            size_t len = (size_t)(nl - in_buf);
            line_in li;
            const char *why = "";
            int kind;
            *nl = 0;
            lineno++;
            if (skipping) {
                skipping = 0;
            } else if (len > LINE_MAX_LEN + 1) {
                send_error(-1, "too-long", lineno, "line over 1024 bytes");
            } else {
                kind = parse_line(in_buf, len, &li, &why);
                if (kind == 2) {
                    send_error(-1, "bad-line", lineno, "this agent speaks protocol 1 (RTS1)");
                } else if (kind < 0) {
                    send_error(-1, "bad-line", lineno, why);
                } else if (kind == 0) {
                    if (strcmp(li.kind, "hi") == 0) {
                        send_hello();
                    } else if (strcmp(li.kind, "bye") == 0) {
                        bye = 1;
                    } else if (strcmp(li.kind, "stop") == 0) {
                        if (is_running())
                            AT_STORE(&g_stop, 1);
                    } else if (strcmp(li.kind, "plan") == 0) {
                        char err[200];
                        int unsup;
                        uint64_t idv;
                        long id = parse_u64(field(&li, "id"), &idv) == 0 && idv <= 2000000000u ? (long)idv : -1;
                        if (busy_for_plan()) {
                            send_error(id, "busy", lineno, "a plan is running; send stop first");
                        } else {
                            plan np;
                            if (parse_plan(&li, &np, err, sizeof err, &unsup) < 0) {
                                send_error(id, unsup ? "unsupported" : "plan", lineno, err);
                            } else {
                                line_out l;
                                char vl[MAX_VARIANTS * 33];
                                size_t k = 0;
                                int i;
                                vl[0] = 0;
                                for (i = 0; i < np.n_variants; i++) {
                                    size_t m = strlen(np.variants[i]);
                                    if (i)
                                        vl[k++] = ',';
                                    memcpy(vl + k, np.variants[i], m);
                                    k += m;
                                    vl[k] = 0;
                                }
                                pthread_mutex_lock(&run_m);
                                cur = np;
                                AT_STORE(&g_stop, 0);
                                out_begin(&l, "ack");
                                out_id(&l, np.id);
                                out_str(&l, "variants", vl);
                                out_u64(&l, "threads", (uint64_t)np.threads);
                                out_send(&l);
                                out_begin(&l, "setup");
                                out_id(&l, np.id);
                                out_str(&l, "n", "-");
                                out_str(&l, "step", "mlockall");
                                out_str(&l, "outcome", strcmp(mlock_text, "ok") == 0 ? "ok" : "failed");
                                out_str(&l, "detail", mlock_text);
                                out_send(&l);
                                out_begin(&l, "setup");
                                out_id(&l, np.id);
                                out_str(&l, "n", "-");
                                out_str(&l, "step", "cpu_dma_latency");
                                out_str(&l, "outcome", strcmp(dma_text, "ok") == 0 ? "ok" : strcmp(dma_text, "unavailable") == 0 ? "skipped" : "failed");
                                out_str(&l, "detail", dma_text);
                                out_send(&l);
                                send_placement(&np);
                                run_pending = 1;
                                running = 1;
                                pthread_cond_broadcast(&run_c);
                                pthread_mutex_unlock(&run_m);
                            }
                        }
                    } else if (own_kind(li.kind)) {
                        /* Our own lines echoed back by a terminal: ignore. */
                    } else {
                        send_error(-1, "unknown-kind", lineno, li.kind);
                    }
                }
            }
            have -= len + 1;
            memmove(in_buf, nl + 1, have);
        }
    }
    /* EOF or bye: as stop, then wait for the results to be sent. */
    if (is_running())
        AT_STORE(&g_stop, 1);
    wait_idle();
    if (bye) {
        line_out l;
        out_begin(&l, "bye");
        out_send(&l);
    }
}

/* ---- start-up ---- */

static void usage(const char *bad_arg)
{
    if (bad_arg)
        fprintf(stderr, "rtscope-agent: bad argument '%s'\n", bad_arg);
    fprintf(stderr,
            "usage: rtscope-agent [--listen PORT [--once]] [--max-threads N] [--max-seconds S] [--load-bytes B]\n"
            "       rtscope-agent --version\n"
            "       rtscope-agent --sign 'KIND key=value ...'   (print the line with RTS1 and its checksum)\n"
            "Speaks rtscope's agent protocol 1 (docs/agent.md) on stdin/stdout, or on TCP with --listen.\n");
}

static int arg_num(int argc, char **argv, int *i, uint64_t *v, uint64_t lo, uint64_t hi)
{
    if (*i + 1 >= argc || parse_u64(argv[*i + 1], v) < 0 || *v < lo || *v > hi) {
        fprintf(stderr, "rtscope-agent: %s needs a number %llu..%llu\n", argv[*i],
                (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    (*i)++;
    return 0;
}

int main(int argc, char **argv)
{
    int i, listen_port = 0, listening = 0, once = 0, workers;
    uint64_t v;
    struct timespec res;
    struct sigaction sa;
    pthread_attr_t a;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("rtscope-agent %s protocol %d\n", AGENT_VERSION, PROTO_VERSION);
            return 0;
        } else if (strcmp(argv[i], "--sign") == 0 && i + 1 < argc) {
            /* Print a protocol line with its checksum: for people typing on
             * a console and for agent/test.sh (no other tool needed). */
            line_out l;
            size_t k = strlen(argv[i + 1]);
            if (k + 5 > LINE_MAX_LEN - 10) {
                fprintf(stderr, "rtscope-agent: --sign: line too long\n");
                return 2;
            }
            memcpy(l.buf, "RTS1 ", 5);
            memcpy(l.buf + 5, argv[i + 1], k);
            l.len = k + 5;
            out_send(&l);
            return 0;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(NULL);
            return 0;
        } else if (strcmp(argv[i], "--listen") == 0) {
            if (arg_num(argc, argv, &i, &v, 0, 65535) < 0)
                return 2;
            listen_port = (int)v; /* 0: an ephemeral port, printed */
            listening = 1;
        } else if (strcmp(argv[i], "--once") == 0) {
            once = 1;
        } else if (strcmp(argv[i], "--max-threads") == 0) {
            if (arg_num(argc, argv, &i, &v, 1, 64) < 0)
                return 2;
            max_threads = (int)v;
        } else if (strcmp(argv[i], "--max-seconds") == 0) {
            if (arg_num(argc, argv, &i, &v, 1, 10000000) < 0)
                return 2;
            max_seconds = (size_t)v;
        } else if (strcmp(argv[i], "--load-bytes") == 0) {
            if (arg_num(argc, argv, &i, &v, 0, (uint64_t)1 << 32) < 0)
                return 2;
            load_bytes = (size_t)v;
        } else {
            usage(argv[i]);
            return 2;
        }
    }

    port_startup();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    {
        /* The signal probe's signal: blocked in every thread (inherited by
         * all made below), so only its sigwaitinfo ever takes it. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, probe_signal_signo());
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    }

    port_fingerprint(&info);
    if (max_threads == 0)
        max_threads = info.cpus > 2 ? (info.cpus > 64 ? 64 : info.cpus) : 2;
    if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
        clock_res_ns = res.tv_sec * 1000000000L + res.tv_nsec;
    calibrate_clock();
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        snprintf(mlock_text, sizeof mlock_text, "failed:%s", errno_name(errno));
    port_dma_latency(dma_text, sizeof dma_text);

    /* Recorders: one per measuring thread, twice for periodic (latency and
     * period error) — 2 * max_threads. */
    n_recs = 2 * max_threads;
    recs = calloc((size_t)n_recs, sizeof *recs);
    rec_ptrs = calloc((size_t)n_recs, sizeof *rec_ptrs);
    if (!recs || !rec_ptrs) {
        fprintf(stderr, "rtscope-agent: out of memory at start-up\n");
        return 1;
    }
    for (i = 0; i < n_recs; i++) {
        if (recorder_alloc(&recs[i], TAIL_K_DEFAULT, max_seconds + 2) < 0) {
            fprintf(stderr, "rtscope-agent: out of memory at start-up (lower --max-threads / --max-seconds)\n");
            return 1;
        }
        rec_ptrs[i] = &recs[i];
    }
    if (load_bytes > 0) {
        load_buf = calloc((size_t)max_threads, sizeof *load_buf);
        for (i = 0; load_buf && i < max_threads; i++) {
            load_buf[i] = malloc(load_bytes);
            if (!load_buf[i])
                break;
            memset(load_buf[i], 1, load_bytes);
        }
        if (!load_buf || i < max_threads) {
            fprintf(stderr, "rtscope-agent: cannot preallocate --load-bytes %llu per thread\n", (unsigned long long)load_bytes);
            return 1;
        }
    }
    /* Workers: max_threads measuring + 3 (pair senders, pi's three) +
     * max_threads load threads. */
    workers = max_threads + 3 + max_threads;
    if (pool_init(workers, 32 * 1024) < 0) {
        fprintf(stderr, "rtscope-agent: cannot create %d worker threads\n", workers);
        return 1;
    }
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, (size_t)PTHREAD_STACK_MIN > 32 * 1024 ? (size_t)PTHREAD_STACK_MIN : 32 * 1024);
    own_threads[0] = pthread_self();
    if (pthread_create(&own_threads[1], &a, runner_main, NULL) != 0 || pthread_create(&own_threads[2], &a, reporter_main, NULL) != 0) {
        fprintf(stderr, "rtscope-agent: cannot create the runner and reporter threads\n");
        return 1;
    }
    pthread_attr_destroy(&a);
#ifdef ALLOC_CHECK
    alloc_started = 1;
#endif

    if (!listening) {
        /* On a serial console the terminal would echo the host's lines
         * back: turn echo off while the session lasts (POSIX termios). */
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
    {
        int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        struct sockaddr_in addr;
        if (s < 0) {
            fprintf(stderr, "rtscope-agent: socket: %s\n", errno_name(errno));
            return 1;
        }
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        memset(&addr, 0, sizeof addr);
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        addr.sin_port = htons((unsigned short)listen_port);
        if (bind(s, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(s, 1) != 0) {
            fprintf(stderr, "rtscope-agent: cannot listen on port %d: %s\n", listen_port, errno_name(errno));
            return 2;
        }
        {
            struct sockaddr_in got;
            socklen_t gl = sizeof got;
            if (getsockname(s, (struct sockaddr *)&got, &gl) == 0)
                listen_port = ntohs(got.sin_port);
        }
        fprintf(stderr, "rtscope-agent: listening on port %d\n", listen_port);
        for (;;) {
            int c = accept(s, NULL, NULL);
            if (c < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                fprintf(stderr, "rtscope-agent: accept: %s\n", errno_name(errno));
                return 1;
            }
            session(c, c);
            close(c);
            if (once)
                return 0;
        }
    }
}

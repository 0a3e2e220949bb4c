/*
 * rtscope-agent: a plan line -> a checked plan (docs/agent.md "plan").
 *
 * Every key is checked against what the agent preallocated and what the
 * system offers before anything runs; an invalid value is an error naming
 * the key (error code=plan), a probe or variant the agent does not have is
 * code=unsupported. Nothing here allocates.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include "agent.h"

int parse_u64(const char *s, uint64_t *v)
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

/* CPU list key into cpus (each online and < MAX_CPUS); count, 0 if absent, -1 bad. */
static int cpu_list(const line_in *l, const char *key, int *cpus, const char *not_list, char *err, size_t errn)
{
    static uint64_t list[MAX_CPUS]; /* 2 KiB: off the session's stack (plans are parsed there only) */
    int i, n = parse_list(field(l, key), list, MAX_CPUS);
    if (n < 0)
        return bad(err, errn, key, not_list);
    for (i = 0; i < n; i++) {
        if (list[i] >= MAX_CPUS || !port_cpu_ok((int)list[i]))
            return bad(err, errn, key, "names a CPU that is not online");
        cpus[i] = (int)list[i];
    }
    return n;
}

/* -p: within the system's SCHED_FIFO range as announced (prio_min,
 * prio_max in hello), and 1..99 as rtscope's -p is. */
static int plan_priority(const line_in *l, uint64_t *x, char *err, size_t errn)
{
    int lo = g_agent.prio_min > 1 ? g_agent.prio_min : 1;
    int hi = g_agent.prio_max < 99 ? g_agent.prio_max : 99;
    if (parse_u64(field(l, "priority"), x) < 0 || *x < (uint64_t)lo || *x > (uint64_t)hi) {
        snprintf(err, errn, "priority: missing or not %d..%d%s", lo, hi,
                 lo == 1 && hi == 99 ? "" : " (this system's SCHED_FIFO range, as rtscope's -p)");
        return -1;
    }
    return 0;
}

/* interval, duration, priority, policy, cpus, threads. */
static int plan_pacing(const line_in *l, const probe_desc *pd, plan *p, char *err, size_t errn)
{
    const char *v;
    uint64_t x;
    if (parse_u64(field(l, "interval_ns"), &p->interval_ns) < 0 || p->interval_ns == 0 ||
        p->interval_ns > PLAN_MAX_INTERVAL_NS) {
        if (pd->uses_periods && !field(l, "interval_ns"))
            p->interval_ns = 1000000u; /* unused: periods_ns pace it */
        else
            return bad(err, errn, "interval_ns", "missing or not 1..3600000000000 (1 ns to 1 h)");
    }
    if (parse_u64(field(l, "duration_ns"), &p->duration_ns) < 0 || p->duration_ns == 0 ||
        p->duration_ns > PLAN_MAX_DURATION_NS)
        return bad(err, errn, "duration_ns", "missing or not 1..31536000000000000 (1 ns to 365 days)");
    if (plan_priority(l, &x, err, errn) < 0)
        return -1;
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
    if (g_agent.own_prio > 0 && p->policy != POL_OTHER && p->priority - pd->prio_below <= g_agent.own_prio) {
        snprintf(err, errn,
                 "priority: %d puts the probe's lowest thread (%d) at or below the agent's own threads (priority %d, "
                 "the lowest this system allows): use %d..%d",
                 p->priority, p->priority - pd->prio_below, g_agent.own_prio, g_agent.own_prio + 1 + pd->prio_below,
                 g_agent.prio_max < 99 ? g_agent.prio_max : 99);
        return -1;
    }
    p->n_cpus = cpu_list(l, "cpus", p->cpus, "missing or not a list of CPU numbers", err, errn);
    if (p->n_cpus < 0)
        return -1;
    if (p->n_cpus == 0)
        return bad(err, errn, "cpus", "missing or not a list of CPU numbers");
    if (parse_u64(field(l, "threads"), &x) < 0 || x == 0)
        return bad(err, errn, "threads", "missing or not a positive number");
    if (x > (uint64_t)g_agent.max_threads)
        return bad(err, errn, "threads", "more than the agent preallocated: start it with a larger --max-threads");
    p->threads = (int)x;
    return 0;
}

/* worst, tail, iterations, msg_size, warmup, pi_burst, progress. */
static int plan_options(const line_in *l, plan *p, char *err, size_t errn)
{
    const char *v;
    uint64_t x;
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
    if ((v = field(l, "warmup_ns")) != NULL && (parse_u64(v, &p->warmup_ns) < 0 || p->warmup_ns > PLAN_MAX_DURATION_NS))
        return bad(err, errn, "warmup_ns", "not 0..31536000000000000 (at most 365 days)");
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
        int i, n = parse_list(v, p->periods, MAX_PERIODS);
        if (n < 0)
            return bad(err, errn, "periods_ns", "not a list of at most 8 periods in ns");
        for (i = 0; i < n; i++)
            if (p->periods[i] == 0 || p->periods[i] > PLAN_MAX_INTERVAL_NS)
                return bad(err, errn, "periods_ns", "a period not 1..3600000000000 (1 ns to 1 h)");
        p->n_periods = n;
    }
    return 0;
}

/* periodic: one variant per period (periods_ns, default 10/30/50 ms). */
static int plan_periods(const line_in *l, plan *p, char *err, size_t errn)
{
    const char *v = field(l, "variants");
    int i;
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
    return 0;
}

/* The plan's variants (checked against the probe's), or all it has, in the
 * probe's order; cross-cpu ones dropped with one CPU (as natively). */
static int plan_variants(const line_in *l, const probe_desc *pd, plan *p, char *err, size_t errn, int *unsupported)
{
    const char *v = field(l, "variants"), *s = v;
    int want[MAX_VARIANTS], k, nv;
    if (!pd->variants)
        return v && *v ? bad(err, errn, "variants", "this probe has no variants") : 0;
    for (k = 0; pd->variants[k]; k++)
        want[k] = !(v && *v);
    nv = k;
    while (s && *s) {
        size_t m = 0;
        int found = 0;
        while (s[m] && s[m] != ',')
            m++;
        for (k = 0; k < nv; k++)
            if (strlen(pd->variants[k]) == m && strncmp(pd->variants[k], s, m) == 0 &&
                probe_variant_offered(pd, pd->variants[k]))
                want[k] = found = 1;
        if (!found) {
            *unsupported = 1;
            return bad(err, errn, "variants", "names a variant this agent does not have (see its probe lines)");
        }
        s += m;
        if (*s == ',')
            s++;
    }
    for (k = 0; k < nv; k++) {
        if (!want[k] || !probe_variant_offered(pd, pd->variants[k]))
            continue;
        if (p->n_cpus < 2 && strstr(pd->variants[k], "/cross-cpu"))
            continue;
        snprintf(p->variants[p->n_variants++], sizeof p->variants[0], "%s", pd->variants[k]);
    }
    if (p->n_variants == 0)
        return bad(err, errn, "variants", "none left to run (cross-cpu variants need two CPUs in cpus)");
    return 0;
}

/* The built-in load: load, load_cpus, load_bytes. */
static int plan_load(const line_in *l, plan *p, char *err, size_t errn)
{
    const char *v = field(l, "load");
    uint64_t x;
    int i;
    if (v && strcmp(v, "cpu") == 0)
        p->load_cpu = 1;
    else if (v && strcmp(v, "mem") == 0)
        p->load_mem = 1;
    else if (v && strcmp(v, "cpu+mem") == 0)
        p->load_cpu = p->load_mem = 1;
    else if (v && strcmp(v, "none") != 0)
        return bad(err, errn, "load", "not none, cpu, mem or cpu+mem");
    if (p->load_mem && g_agent.load_bytes == 0)
        return bad(err, errn, "load", "mem needs memory preallocated: start the agent with --load-bytes BYTES");
    if (!p->load_cpu && !p->load_mem)
        return 0;
    p->n_load_cpus = cpu_list(l, "load_cpus", p->load_cpus, "not a list of CPU numbers", err, errn);
    if (p->n_load_cpus < 0)
        return -1;
    if (p->n_load_cpus == 0)
        for (i = 0; i < g_agent.info.cpus && i < MAX_CPUS; i++)
            p->load_cpus[p->n_load_cpus++] = i;
    if (p->n_load_cpus > g_agent.max_threads)
        return bad(err, errn, "load_cpus", "more load threads than --max-threads");
    p->load_bytes = g_agent.load_bytes;
    if ((v = field(l, "load_bytes")) != NULL) {
        if (parse_u64(v, &x) < 0 || x == 0 || x > g_agent.load_bytes)
            return bad(err, errn, "load_bytes", "not 1..the agent's --load-bytes");
        p->load_bytes = (size_t)x;
    }
    return 0;
}

/* Fill p from a plan line; -1 with err naming the key. *unsupported set when
 * the probe or a variant is not this agent's. */
int parse_plan(const line_in *l, plan *p, char *err, size_t errn, int *unsupported)
{
    const char *v;
    uint64_t x;
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
    if (plan_pacing(l, pd, p, err, errn) < 0 || plan_options(l, p, err, errn) < 0)
        return -1;
    if (pd->uses_periods ? plan_periods(l, p, err, errn) < 0 : plan_variants(l, pd, p, err, errn, unsupported) < 0)
        return -1;
    if (plan_load(l, p, err, errn) < 0)
        return -1;
    if (pd->recorders(p) > g_agent.n_recs || pd->workers(p) > g_agent.max_threads + 3)
        return bad(err, errn, "threads", "needs more recorders/threads than preallocated: start the agent with a larger --max-threads");
    return 0;
}

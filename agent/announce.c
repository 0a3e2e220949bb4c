/*
 * rtscope-agent: the probe table and the announcement (hello, one probe line
 * per probe offered, ready; docs/agent.md "hello", "probe").
 *
 * A probe is offered when it has no variant list or one of its variants is
 * available on this system (port_*.c); its probe line lists exactly the
 * variants available, as each probe's startup found them (pi: the mutex
 * protocols the system accepts, tried once before hello). The names are rtscope's own (measure::REGISTRY):
 * tests/agent.rs compares them with `rtscope probes`.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include "agent.h"

#ifdef ALLOC_CHECK
extern volatile long alloc_count_before_start;
#endif

static const probe_desc *const probes[] = {
    &probe_timer, &probe_periodic, &probe_sem, &probe_pipe, &probe_mq,
    &probe_signal, &probe_switch, &probe_preempt, &probe_pi,
};
#define N_PROBES ((int)(sizeof probes / sizeof probes[0]))

/* The port says first what the system has at all (port_offers: FreeRTOS
 * has no pipes and no signals), then the probe what its calls accepted. */
int probe_variant_offered(const probe_desc *pd, const char *variant)
{
    return port_offers(pd->name, variant) && (!pd->available || pd->available(variant));
}

static int probe_listed(const probe_desc *pd)
{
    int k;
    if (!pd->variants)
        return port_offers(pd->name, NULL);
    for (k = 0; pd->variants[k]; k++)
        if (probe_variant_offered(pd, pd->variants[k]))
            return 1;
    return 0;
}

const probe_desc *probe_named(const char *name)
{
    int i;
    for (i = 0; i < N_PROBES; i++)
        if (strcmp(probes[i]->name, name) == 0)
            return probe_listed(probes[i]) ? probes[i] : NULL;
    return NULL;
}

void probes_startup(void)
{
    int i;
    for (i = 0; i < N_PROBES; i++)
        if (probes[i]->startup)
            probes[i]->startup();
}

/* hello, probe and ready are sent by the session thread only: formatted
 * in static buffers, off its stack. */
static line_out hl;

static void hello_line(void)
{
    const agent_state *a = &g_agent;
    line_out *const l = &hl;
    out_begin(l, "hello");
    out_u64(l, "proto", PROTO_VERSION);
    out_str(l, "agent", AGENT_VERSION);
    out_str(l, "os", a->info.os);
    out_str(l, "release", a->info.release);
    out_str(l, "version", a->info.version);
    out_str(l, "arch", a->info.arch);
    out_str(l, "host", a->info.host);
    out_u64(l, "cpus", (uint64_t)a->info.cpus);
    out_str(l, "clock", "CLOCK_MONOTONIC");
    out_u64(l, "res_ns", a->clock_res_ns);
    if (a->info.tick_ns)
        out_u64(l, "tick_ns", a->info.tick_ns);
    if (a->info.sleep[0])
        out_str(l, "sleep", a->info.sleep);
    out_u64(l, "clock_read_ns", a->clock_read_med);
    out_u64(l, "clock_read_min_ns", a->clock_read_min);
    out_str(l, "preempt", a->info.preempt);
    out_str(l, "mlock", a->mlock_text);
    out_u64(l, "max_threads", (uint64_t)a->max_threads);
    out_u64(l, "max_seconds", (uint64_t)a->max_seconds);
    out_u64(l, "load_bytes", (uint64_t)a->load_bytes);
    out_u64(l, "max_line", LINE_MAX_LEN);
#ifdef ALLOC_CHECK
    out_u64(l, "alloc_check", 1);
    /* Allocations counted during start-up: proves the counter is live. */
    out_u64(l, "allocs_startup", (uint64_t)alloc_count_before_start);
#else
    out_u64(l, "alloc_check", 0);
#endif
    out_str(l, "dma_latency", a->dma_text);
    out_u64(l, "affinity", (uint64_t)a->info.affinity);
    out_i64(l, "prio_min", a->prio_min);
    out_i64(l, "prio_max", a->prio_max);
    out_i64(l, "own_prio", a->own_prio);
    out_send(l);
}

static void probe_line(const probe_desc *pd)
{
    line_out *const l = &hl;
    static char list[MAX_VARIANTS * 33];
    size_t len = 0;
    int k;
    out_begin(l, "probe");
    out_str(l, "name", pd->name);
    list[0] = 0;
    for (k = 0; pd->variants && pd->variants[k]; k++) {
        size_t n = strlen(pd->variants[k]);
        if (!probe_variant_offered(pd, pd->variants[k]) || len + n + 2 > sizeof list)
            continue;
        if (len)
            list[len++] = ',';
        memcpy(list + len, pd->variants[k], n);
        len += n;
        list[len] = 0;
    }
    out_str(l, "variants", list);
    if (pd->uses_periods)
        out_u64(l, "periods", 1);
    out_send(l);
}

void send_hello(void)
{
    line_out *const l = &hl;
    int i, n = 0;
    hello_line();
    for (i = 0; i < N_PROBES; i++)
        if (probe_listed(probes[i])) {
            probe_line(probes[i]);
            n++;
        }
    out_begin(l, "ready");
    out_u64(l, "probes", (uint64_t)n);
    out_send(l);
}

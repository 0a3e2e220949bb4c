/*
 * rtscope-agent: the built-in load (docs/agent.md, plan key `load`): busy
 * and memory-streaming threads at SCHED_OTHER on pool workers, one per CPU
 * of load_cpus, for the whole plan. The memory threads walk buffers
 * preallocated at start-up (--load-bytes): nothing allocates here.
 */
#define _POSIX_C_SOURCE 200809L
#include "agent.h"

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

int load_start(const plan *p, int first)
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
        h->buf = g_agent.load_buf ? g_agent.load_buf[i] : NULL;
        h->bytes = p->load_bytes;
        h->quit = &hog_quit;
        pool_run(first + i, hog_job, h);
    }
    return p->n_load_cpus;
}

void load_stop(int n, int first)
{
    int i;
    AT_STORE(&hog_quit, 1);
    for (i = 0; i < n; i++)
        pool_join(first + i);
}

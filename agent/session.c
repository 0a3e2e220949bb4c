/*
 * rtscope-agent: the session (docs/agent.md "Session"): hello, then the
 * host's lines one by one until bye or the end of input.
 *
 * Lines are read into one static buffer of the protocol's maximum (no
 * allocation; off the stack, for a small RTOS task); an overlong line is
 * skipped to its end, a malformed one answered with error code=bad-line.
 * Each protocol line goes to its kind's handler (the table below); the
 * agent's own kinds echoed back by a serial console are ignored. The
 * session thread only reads and answers: plans run on the runner thread,
 * so a stop is seen while one measures.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"

/* ---- plan-wide set-up steps, sent right after ack ---- */

/* The session thread's lines are formatted in static buffers (it is the
 * only writer of these): a small RTOS task's stack holds the session. */
static line_out sl;

static void setup_line(long id, const char *step, const char *outcome, const char *detail)
{
    line_out *l = &sl;
    out_begin(l, "setup");
    out_id(l, id);
    out_str(l, "n", "-");
    out_str(l, "step", step);
    out_str(l, "outcome", outcome);
    out_str(l, "detail", detail);
    out_send(l);
}

/* The agent's own threads (session, runner, reporter): placed off the
 * plan's CPUs for each plan, and the outcome sent as the set-up step "main
 * thread placement" (the native step's name). */
static void send_placement(const plan *p)
{
    static unsigned char measured[MAX_CPUS];
    static char detail[SETUP_TEXT * 2];
    int i, rc;
    memset(measured, 0, sizeof measured);
    for (i = 0; i < p->n_cpus; i++)
        measured[p->cpus[i]] = 1;
    rc = port_place_outside(g_agent.own, 3, measured, detail, sizeof detail);
    setup_line(p->id, "main thread placement", rc == 0 ? "ok" : rc == ENOENT || rc == ENOSYS ? "skipped" : "failed",
               detail);
}

/* ack, then the plan-wide steps: called by run_submit under the runner's
 * lock, so they come before the plan's begin. */
static void announce_plan(const plan *p)
{
    const char *mlock = g_agent.mlock_text, *dma = g_agent.dma_text;
    static char vl[MAX_VARIANTS * 33];
    size_t k = 0;
    int i;
    line_out *l = &sl;
    vl[0] = 0;
    for (i = 0; i < p->n_variants; i++) {
        size_t m = strlen(p->variants[i]);
        if (i)
            vl[k++] = ',';
        memcpy(vl + k, p->variants[i], m);
        k += m;
        vl[k] = 0;
    }
    out_begin(l, "ack");
    out_id(l, p->id);
    out_str(l, "variants", vl);
    out_u64(l, "threads", (uint64_t)p->threads);
    out_send(l);
    setup_line(p->id, "mlockall", strcmp(mlock, "ok") == 0 ? "ok" : "failed", mlock);
    setup_line(p->id, "cpu_dma_latency",
               strcmp(dma, "ok") == 0 ? "ok" : strcmp(dma, "unavailable") == 0 ? "skipped" : "failed", dma);
    send_placement(p);
}

/* ---- the handlers: one per host kind ---- */

typedef struct {
    int bye;              /* the host said bye */
} session_state;

static void on_hi(session_state *s, const line_in *li, long lineno)
{
    (void)s, (void)li, (void)lineno;
    send_hello();
}

static void on_bye(session_state *s, const line_in *li, long lineno)
{
    (void)li, (void)lineno;
    s->bye = 1;
}

static void on_stop(session_state *s, const line_in *li, long lineno)
{
    (void)s, (void)li, (void)lineno;
    if (run_active())
        AT_STORE(&g_stop, 1);
}

static void on_plan(session_state *s, const line_in *li, long lineno)
{
    static plan np; /* 3 KiB: off the stack */
    char err[200];
    int unsup;
    uint64_t idv;
    long id = parse_u64(field(li, "id"), &idv) == 0 && idv <= 2000000000u ? (long)idv : -1;
    (void)s;
    if (run_busy_for_plan())
        send_error(id, "busy", lineno, "a plan is running; send stop first");
    else if (pool_lost() > 0)
        send_error(id, "internal", lineno,
                   "a measuring thread of the last plan stalled and is still stuck in the system: restart the agent");
    else if (parse_plan(li, &np, err, sizeof err, &unsup) < 0)
        send_error(id, unsup ? "unsupported" : "plan", lineno, err);
    else
        run_submit(&np, announce_plan);
}

/* The agent's own kinds, echoed back by a terminal: ignored. */
static void on_own(session_state *s, const line_in *li, long lineno)
{
    (void)s, (void)li, (void)lineno;
}

static const struct {
    const char *kind;
    void (*handle)(session_state *s, const line_in *li, long lineno);
} handlers[] = {
    {.kind = "hi", .handle = on_hi},         {.kind = "bye", .handle = on_bye},
    {.kind = "stop", .handle = on_stop},     {.kind = "plan", .handle = on_plan},
    {.kind = "hello", .handle = on_own},     {.kind = "probe", .handle = on_own},
    {.kind = "ready", .handle = on_own},     {.kind = "ack", .handle = on_own},
    {.kind = "setup", .handle = on_own},     {.kind = "begin", .handle = on_own},
    {.kind = "progress", .handle = on_own},  {.kind = "result", .handle = on_own},
    {.kind = "note", .handle = on_own},      {.kind = "hist", .handle = on_own},
    {.kind = "tail", .handle = on_own},      {.kind = "sec", .handle = on_own},
    {.kind = "end", .handle = on_own},       {.kind = "done", .handle = on_own},
    {.kind = "error", .handle = on_own},
};

/* One received line (terminated, len bytes before the '\n'). */
static void dispatch(session_state *s, char *line, size_t len, long lineno)
{
    static line_in li; /* 656 bytes: off the stack */
    const char *why = "";
    size_t i;
    int kind;
    if (len > LINE_MAX_LEN + 1) {
        send_error(-1, "too-long", lineno, "line over 1024 bytes");
        return;
    }
    kind = parse_line(line, len, &li, &why);
    if (kind == 2)
        send_error(-1, "bad-line", lineno, "this agent speaks protocol 1 (RTS1)");
    else if (kind < 0)
        send_error(-1, "bad-line", lineno, why);
    if (kind != 0)
        return; /* noise (1) is ignored */
    for (i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(li.kind, handlers[i].kind) == 0) {
            handlers[i].handle(s, &li, lineno);
            return;
        }
    send_error(-1, "unknown-kind", lineno, li.kind);
}

static char in_buf[LINE_MAX_LEN + 2];

void session(int in, int out)
{
    session_state s = {0};
    size_t have = 0;
    int skipping = 0;
    long lineno = 0;
    out_set_fd(out);
    send_hello();
    while (!s.bye) {
        char *nl;
        ssize_t r;
        if (have >= sizeof in_buf - 1 && !memchr(in_buf, '\n', have)) {
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
            *nl = 0;
            lineno++;
            if (skipping)
                skipping = 0;
            else
                dispatch(&s, in_buf, len, lineno);
            have -= len + 1;
            memmove(in_buf, nl + 1, have);
        }
    }
    /* EOF or bye: as stop, then wait for the results to be sent. */
    if (run_active())
        AT_STORE(&g_stop, 1);
    run_wait_idle();
    if (s.bye) {
        out_begin(&sl, "bye");
        out_send(&sl);
    }
}

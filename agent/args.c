/*
 * rtscope-agent: the command line (docs/agent.md "Running the agent").
 * Bad arguments: a message naming the argument on stderr, exit 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include "agent.h"
#include "args.h"

#ifndef RTSCOPE_TCP
#define RTSCOPE_TCP 1
#endif

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

/* Print a protocol line with its checksum: for people typing on a console
 * and for agent/test.sh (no other tool needed). */
static int sign(const char *body)
{
    line_out l;
    size_t k = strlen(body);
    if (k + 5 > LINE_MAX_LEN - 10) {
        fprintf(stderr, "rtscope-agent: --sign: line too long\n");
        return 2;
    }
    memcpy(l.buf, "RTS1 ", 5);
    memcpy(l.buf + 5, body, k);
    l.len = k + 5;
    out_send(&l);
    return 0;
}

/* A numeric option into a: 1 done, 0 not one, -1 bad. */
static int number_option(int argc, char **argv, int *i, agent_args *a)
{
    uint64_t v;
    if (strcmp(argv[*i], "--listen") == 0) {
        if (!RTSCOPE_TCP) {
            fprintf(stderr, "rtscope-agent: --listen: this agent was built without TCP (RTSCOPE_TCP=0); "
                            "talk to it on stdin/stdout or a serial console\n");
            return -1;
        }
        if (arg_num(argc, argv, i, &v, 0, 65535) < 0)
            return -1;
        a->listen_port = (int)v; /* 0: an ephemeral port, printed */
        a->listening = 1;
    } else if (strcmp(argv[*i], "--max-threads") == 0) {
        if (arg_num(argc, argv, i, &v, 1, MAX_THREADS) < 0)
            return -1;
        a->max_threads = (int)v;
    } else if (strcmp(argv[*i], "--max-seconds") == 0) {
        if (arg_num(argc, argv, i, &v, 1, 10000000) < 0)
            return -1;
        a->max_seconds = (size_t)v;
    } else if (strcmp(argv[*i], "--load-bytes") == 0) {
        if (arg_num(argc, argv, i, &v, 0, (uint64_t)1 << 32) < 0)
            return -1;
        a->load_bytes = (size_t)v;
    } else {
        return 0;
    }
    return 1;
}

int args_parse(int argc, char **argv, agent_args *a)
{
    int i, rc;
    memset(a, 0, sizeof *a);
    a->max_seconds = 3600;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("rtscope-agent %s protocol %d\n", AGENT_VERSION, PROTO_VERSION);
            return 0;
        } else if (strcmp(argv[i], "--sign") == 0 && i + 1 < argc) {
            return sign(argv[i + 1]);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(NULL);
            return 0;
        } else if (strcmp(argv[i], "--once") == 0) {
            a->once = 1;
        } else if ((rc = number_option(argc, argv, &i, a)) != 0) {
            if (rc < 0)
                return 2;
        } else {
            usage(argv[i]);
            return 2;
        }
    }
    return -1;
}

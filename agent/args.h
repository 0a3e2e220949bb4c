/* rtscope-agent: the command line (args.c). */
#ifndef RTS_ARGS_H
#define RTS_ARGS_H
#include <stddef.h>

typedef struct {
    int listen_port, listening, once;
    int max_threads;        /* 0: the default, from the CPUs */
    size_t max_seconds, load_bytes;
} agent_args;

/* -1: run the agent with a; else the exit status (--version, --sign,
 * --help: done; a bad argument: 2, said on stderr). */
int args_parse(int argc, char **argv, agent_args *a);

#endif

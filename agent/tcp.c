/*
 * rtscope-agent: --listen, one TCP session at a time (docs/agent.md). Left
 * out of builds without a network stack (sources.mk: RTSCOPE_TCP=0), where
 * main says --listen is absent.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "agent.h"

int tcp_serve(int port, int once)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in addr, got;
    socklen_t gl = sizeof got;
    if (s < 0) {
        fprintf(stderr, "rtscope-agent: socket: %s\n", errno_name(errno));
        return 1;
    }
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons((unsigned short)port);
    if (bind(s, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(s, 1) != 0) {
        fprintf(stderr, "rtscope-agent: cannot listen on port %d: %s\n", port, errno_name(errno));
        return 2;
    }
    if (getsockname(s, (struct sockaddr *)&got, &gl) == 0)
        port = ntohs(got.sin_port);
    fprintf(stderr, "rtscope-agent: listening on port %d\n", port);
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

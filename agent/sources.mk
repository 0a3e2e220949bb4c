# rtscope-agent's sources and build options, for any build system: the
# agent's Makefile includes this file, and so can an RTOS's application
# build (NuttX apps, RTEMS waf, Zephyr CMake, an IDE project; see
# docs/porting.md). Paths are relative to this directory.
#
#   RTSCOPE_PORT  the port file's family: linux (Linux, glibc/musl, Xenomai
#                 on Linux) or posix (any other POSIX system: only
#                 POSIX.1-2008, no CPU pinning) or freertos (FreeRTOS with
#                 FreeRTOS+POSIX and newlib). Default: from uname -s.
#   RTSCOPE_TCP   1: --listen (TCP) compiled in; 0: left out, for an image
#                 with no network stack (--listen then says it is absent).

RTSCOPE_TCP ?= 1

# The portable core: the protocol, the session, the recorders, the probes.
RTSCOPE_CORE_SRC = main.c args.c session.c announce.c plan.c runner.c \
    result.c load.c proto.c crc32.c recorder.c pool.c util.c pair.c \
    probe_timer.c probe_periodic.c probe_sem.c probe_pipe.c probe_mq.c \
    probe_signal.c probe_switch.c probe_preempt.c probe_pi.c
RTSCOPE_HDR = agent.h args.h pair.h

# One port file per system family.
RTSCOPE_PORT_SRC_linux = port_linux.c
RTSCOPE_PORT_SRC_posix = port_posix.c
# FreeRTOS + FreeRTOS+POSIX + newlib: the port and one board file, the shim
# headers in freertos/ first on the include path, -DRTSCOPE_PORT_CLOCK (the
# port's clock and sleep) and -DRTSCOPE_PORT_OWN_PRIO (the port says the
# agent's own priority: FreeRTOS+POSIX's getschedparam does not)
# (docs/porting.md "FreeRTOS"; check-freertos.sh compiles them).
RTSCOPE_PORT_SRC_freertos = port_freertos.c board_mps2_an385.c
RTSCOPE_DEFS_freertos = -DRTSCOPE_PORT_CLOCK -DRTSCOPE_PORT_OWN_PRIO
RTSCOPE_INC_freertos = freertos

RTSCOPE_TCP_SRC_1 = tcp.c
RTSCOPE_TCP_SRC_0 =

# What every build of the agent compiles and defines (add the port's file).
RTSCOPE_SRC = $(RTSCOPE_CORE_SRC) $(RTSCOPE_TCP_SRC_$(RTSCOPE_TCP))
RTSCOPE_DEFS = -DRTSCOPE_TCP=$(RTSCOPE_TCP)
# Libraries on a Linux/glibc system; an RTOS links its own.
RTSCOPE_LIBS_linux = -lpthread -lrt
RTSCOPE_LIBS_posix = -lpthread

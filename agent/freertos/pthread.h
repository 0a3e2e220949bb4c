/* rtscope-agent on FreeRTOS: <pthread.h> is FreeRTOS+POSIX's, beside newlib
 * (docs/porting.md "FreeRTOS"), plus what the agent uses that it lacks:
 * pthread_once and the mutex protocols (port_freertos.c). */
#ifndef RTSCOPE_FREERTOS_PTHREAD_H
#define RTSCOPE_FREERTOS_PTHREAD_H
#include <sched.h>
#include <time.h>
#include "FreeRTOS_POSIX.h"
#include "FreeRTOS_POSIX/pthread.h"

typedef struct { volatile int done; } pthread_once_t;
#define PTHREAD_ONCE_INIT {0}
int pthread_once(pthread_once_t *once, void (*fn)(void));

#define PTHREAD_PRIO_NONE 0
#define PTHREAD_PRIO_INHERIT 1
#define PTHREAD_PRIO_PROTECT 2
int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol);
int pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int prio);
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int pthread_kill(pthread_t t, int sig);
#endif

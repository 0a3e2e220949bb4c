/* rtscope-agent on FreeRTOS: stands for newlib's <sys/_pthreadtypes.h>,
 * whose pthread types would clash with FreeRTOS+POSIX's. Only pthread_t is
 * needed this early (newlib's <signal.h> declares pthread_kill); the rest
 * come from FreeRTOS+POSIX (its FreeRTOS_POSIX_portable.h sets
 * posixconfigENABLE_PTHREAD_T to 0). */
#ifndef _SYS__PTHREADTYPES_H_
#define _SYS__PTHREADTYPES_H_
typedef void *pthread_t;
#endif

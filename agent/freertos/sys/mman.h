/* rtscope-agent on FreeRTOS: no virtual memory, nothing to lock
 * (port_freertos.c's mlockall says so). */
#ifndef RTSCOPE_FREERTOS_SYS_MMAN_H
#define RTSCOPE_FREERTOS_SYS_MMAN_H
#define MCL_CURRENT 1
#define MCL_FUTURE 2
int mlockall(int flags);
#endif

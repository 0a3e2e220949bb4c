/* rtscope-agent on FreeRTOS: FreeRTOS+POSIX's <mqueue.h>. */
#ifndef RTSCOPE_FREERTOS_MQUEUE_H
#define RTSCOPE_FREERTOS_MQUEUE_H
#include <fcntl.h>
#include <pthread.h>
#include "FreeRTOS_POSIX/mqueue.h"
#endif

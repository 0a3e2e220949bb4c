/* rtscope-agent on FreeRTOS: FreeRTOS+POSIX's <semaphore.h>. */
#ifndef RTSCOPE_FREERTOS_SEMAPHORE_H
#define RTSCOPE_FREERTOS_SEMAPHORE_H
#include <pthread.h>
#include "FreeRTOS_POSIX/semaphore.h"
#endif

/* rtscope-agent on FreeRTOS: what port_freertos.c needs from the board
 * (one file per board: board_mps2_an385.c; docs/porting.md "FreeRTOS"). */
#ifndef RTSCOPE_FREERTOS_BOARD_H
#define RTSCOPE_FREERTOS_BOARD_H
#include <stdint.h>

/* The counter, the one-shot and the UART ready; irq_prio: the NVIC priority
 * of the board's interrupts (they call board_oneshot_fired). */
void board_init(uint8_t irq_prio);
const char *board_name(void);
/* A free-running 64-bit counter and its rate (Hz). Callable from any
 * context, interrupts masked or not. */
uint64_t board_count(void);
uint32_t board_count_hz(void);
/* Interrupt once the counter reaches at (at once if it already has): the
 * board then calls board_oneshot_fired() from its interrupt. */
void board_oneshot_arm(uint64_t at);
void board_oneshot_fired(void); /* the port's */
/* The byte stream, polled: a byte or -1 (none yet); write waits for room. */
int board_uart_getc(void);
void board_uart_putc(int c);
#endif

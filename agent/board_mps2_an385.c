/*
 * Board file for QEMU's mps2-an385 (ARM MPS2 FPGA image AN385, Cortex-M3)
 * under port_freertos.c: the CMSDK APB timers at 25 MHz (TIMER0 free
 * running, its wrap interrupt extends it to 64 bits; TIMER1 the one-shot)
 * and CMSDK UART0, polled (-serial stdio). The vector table is the
 * project's: TIMER0_Handler at IRQ 8, TIMER1_Handler at IRQ 9. Another
 * board replaces this file (freertos/board.h says what it must give).
 */
#include <stdint.h>
#include "board.h"

#define REG(a) (*(volatile uint32_t *)(a))
#define TIMER0 0x40000000u
#define TIMER1 0x40001000u
#define T_CTRL 0x0u
#define T_VALUE 0x4u
#define T_RELOAD 0x8u
#define T_INT 0xCu
#define T_ENABLE 1u
#define T_IRQEN 8u
#define UART0 0x40004000u
#define U_DATA 0x0u
#define U_STATE 0x4u
#define U_CTRL 0x8u
#define U_BAUDDIV 0x10u
#define NVIC_ISER0 0xE000E100u
#define NVIC_IPR 0xE000E400u
#define IRQ_TIMER0 8
#define IRQ_TIMER1 9
#define SYSCLK_HZ 25000000u

static volatile uint32_t wraps;

static uint32_t irq_save(void)
{
    uint32_t p;
    __asm volatile("mrs %0, primask\n\tcpsid i" : "=r"(p) : : "memory");
    return p;
}

static void irq_restore(uint32_t p)
{
    __asm volatile("msr primask, %0" : : "r"(p) : "memory");
}

static void nvic_enable(int irq, uint8_t prio)
{
    *(volatile uint8_t *)(NVIC_IPR + (uint32_t)irq) = prio;
    REG(NVIC_ISER0) = 1u << irq;
}

void board_init(uint8_t irq_prio)
{
    REG(UART0 + U_BAUDDIV) = 16;
    REG(UART0 + U_CTRL) = 3; /* TX and RX on, no interrupts: polled */
    REG(TIMER0 + T_CTRL) = 0;
    REG(TIMER0 + T_RELOAD) = 0xFFFFFFFFu;
    REG(TIMER0 + T_VALUE) = 0xFFFFFFFFu;
    REG(TIMER0 + T_INT) = 1;
    REG(TIMER0 + T_CTRL) = T_ENABLE | T_IRQEN;
    REG(TIMER1 + T_CTRL) = 0;
    REG(TIMER1 + T_INT) = 1;
    nvic_enable(IRQ_TIMER0, irq_prio);
    nvic_enable(IRQ_TIMER1, irq_prio);
}

const char *board_name(void)
{
    return "mps2-an385";
}

uint32_t board_count_hz(void)
{
    return SYSCLK_HZ;
}

/* Counts down; a wrap not yet taken by its interrupt (masked here, or
 * pending) is seen in the interrupt status and counted. */
uint64_t board_count(void)
{
    uint32_t p = irq_save(), hi = wraps, v = REG(TIMER0 + T_VALUE);
    if (REG(TIMER0 + T_INT) & 1u) {
        v = REG(TIMER0 + T_VALUE);
        hi++;
    }
    irq_restore(p);
    return ((uint64_t)hi << 32) | (uint64_t)(0xFFFFFFFFu - v);
}

void TIMER0_Handler(void);
void TIMER0_Handler(void)
{
    REG(TIMER0 + T_INT) = 1;
    wraps++;
}

void board_oneshot_arm(uint64_t at)
{
    uint32_t p = irq_save();
    uint64_t now = board_count();
    uint64_t d = at > now ? at - now : 1;
    if (d > 0xFFFFFFF0u)
        d = 0xFFFFFFF0u; /* the handler re-arms for the rest */
    REG(TIMER1 + T_CTRL) = 0;
    REG(TIMER1 + T_INT) = 1;
    REG(TIMER1 + T_RELOAD) = 0xFFFFFFFFu;
    REG(TIMER1 + T_VALUE) = (uint32_t)d;
    REG(TIMER1 + T_CTRL) = T_ENABLE | T_IRQEN;
    irq_restore(p);
}

void TIMER1_Handler(void);
void TIMER1_Handler(void)
{
    REG(TIMER1 + T_INT) = 1;
    REG(TIMER1 + T_CTRL) = 0;
    board_oneshot_fired();
}

int board_uart_getc(void)
{
    if (REG(UART0 + U_STATE) & 2u)
        return (int)(REG(UART0 + U_DATA) & 0xFFu);
    return -1;
}

void board_uart_putc(int c)
{
    while (REG(UART0 + U_STATE) & 1u)
        ;
    REG(UART0 + U_DATA) = (uint32_t)(unsigned char)c;
}

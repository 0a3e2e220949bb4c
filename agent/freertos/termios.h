/* rtscope-agent on FreeRTOS: the UART is no terminal (isatty is 0, so the
 * agent never calls these; declared so main.c compiles unchanged; newlib's
 * own <termios.h> needs a <sys/termios.h> it does not ship for arm-none-eabi). */
#ifndef RTSCOPE_FREERTOS_TERMIOS_H
#define RTSCOPE_FREERTOS_TERMIOS_H
typedef unsigned int tcflag_t;
struct termios { tcflag_t c_lflag; };
#define ECHO 0x8
#define ECHONL 0x40
#define TCSANOW 0
int tcgetattr(int fd, struct termios *t);
int tcsetattr(int fd, int when, const struct termios *t);
#endif

/*
 * CRC-32 of a protocol line (docs/agent.md "Line format"): the reflected
 * polynomial 0xEDB88320, initial value and final xor 0xFFFFFFFF (zlib's,
 * crc32fast's). Table computed once on first use, 1 KiB, no allocation.
 * Invariant: crc32_bytes("123456789", 9) == 0xcbf43926 (the check value).
 */
#define _POSIX_C_SOURCE 200809L
#include "agent.h"

static uint32_t table[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    uint32_t i, k, c;
    for (i = 0; i < 256; i++) {
        c = i;
        for (k = 0; k < 8; k++)
            c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}

uint32_t crc32_bytes(const char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    pthread_once(&once, make_table);
    for (i = 0; i < n; i++)
        c = table[(c ^ (unsigned char)p[i]) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

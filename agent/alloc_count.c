/*
 * Test build only (make test-alloc, glibc): count every heap allocation of
 * the process once start-up is over. The agent's own calls and libc's
 * internal ones (glibc routes those through these symbols too) are counted;
 * the real work is done by glibc's __libc_* entry points. The count is sent
 * in `done ... allocs=N`; agent/test.sh asserts it is 0.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t a, size_t n);
extern void __libc_free(void *p);

volatile long alloc_count_after_start;
volatile long alloc_count_before_start;
volatile int alloc_started;

static void count(void)
{
    if (!alloc_started)
        __atomic_add_fetch(&alloc_count_before_start, 1, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&alloc_count_after_start, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    count();
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void *memalign(size_t a, size_t n);
void *memalign(size_t a, size_t n)
{
    count();
    return __libc_memalign(a, n);
}

void *aligned_alloc(size_t a, size_t n);
void *aligned_alloc(size_t a, size_t n)
{
    count();
    return __libc_memalign(a, n);
}

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p;
    count();
    p = __libc_memalign(a, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void free(void *p)
{
    __libc_free(p);
}

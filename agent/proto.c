/*
 * The line format of docs/agent.md: building lines (escaping, CRC, the
 * 1024-byte limit, lists split over lines), writing them whole under one
 * lock (the runner, the reporter and the reader all write), and parsing the
 * host's lines in place. No allocation: every line is built in a caller's
 * fixed buffer.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = 1;
static int out_dead;

void out_set_fd(int fd)
{
    pthread_mutex_lock(&out_lock);
    out_fd = fd;
    out_dead = 0;
    pthread_mutex_unlock(&out_lock);
}

int out_failed(void)
{
    int d;
    pthread_mutex_lock(&out_lock);
    d = out_dead;
    pthread_mutex_unlock(&out_lock);
    return d;
}

static void write_all(const char *p, size_t n)
{
    while (n > 0 && !out_dead) {
        ssize_t w = write(out_fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            out_dead = 1; /* peer gone: the session ends on its EOF */
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Room left for content, keeping 10 bytes for " *xxxxxxxx". */
#define CONTENT_MAX (LINE_MAX_LEN - 10)

/* Append n bytes, or nothing if they do not fit: a line is never longer
 * than LINE_MAX_LEN and an escape is never cut in half. Callers keep their
 * lines short enough (free texts are bounded: SETUP_TEXT, note_buf). */
static void put(line_out *l, const char *s, size_t n)
{
    if (l->len + n > CONTENT_MAX)
        return;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void put_esc(line_out *l, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c >= 0x7f || c == '%' || c == '*' || c == '=') {
            char e[3];
            e[0] = '%';
            e[1] = hex[c >> 4];
            e[2] = hex[c & 15];
            put(l, e, 3);
        } else {
            put(l, (const char *)&c, 1);
        }
    }
}

void out_begin(line_out *l, const char *kind)
{
    l->len = 0;
    l->items = 0;
    put(l, "RTS1 ", 5);
    put(l, kind, strlen(kind));
}

static void put_key(line_out *l, const char *key)
{
    put(l, " ", 1);
    put(l, key, strlen(key));
    put(l, "=", 1);
}

void out_str(line_out *l, const char *key, const char *val)
{
    put_key(l, key);
    put_esc(l, val);
}

static size_t fmt_u64(uint64_t v, char *b)
{
    char t[24];
    size_t n = 0, i;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        b[i] = t[n - 1 - i];
    b[n] = 0;
    return n;
}

void out_u64(line_out *l, const char *key, uint64_t v)
{
    char b[24];
    put_key(l, key);
    put(l, b, fmt_u64(v, b));
}

void out_i64(line_out *l, const char *key, int64_t v)
{
    char b[24];
    put_key(l, key);
    if (v < 0) {
        put(l, "-", 1);
        put(l, b, fmt_u64((uint64_t)0 - (uint64_t)v, b));
    } else {
        put(l, b, fmt_u64((uint64_t)v, b));
    }
}

void out_id(line_out *l, long id)
{
    if (id < 0)
        out_str(l, "id", "-");
    else
        out_u64(l, "id", (uint64_t)id);
}

void out_send(line_out *l)
{
    static const char hex[] = "0123456789abcdef";
    uint32_t c = crc32_bytes(l->buf, l->len);
    char *p = l->buf + l->len;
    int i;
    p[0] = ' ';
    p[1] = '*';
    for (i = 0; i < 8; i++)
        p[2 + i] = hex[(c >> (28 - 4 * i)) & 15u];
    p[10] = '\n';
    pthread_mutex_lock(&out_lock);
    write_all(l->buf, l->len + 11);
    pthread_mutex_unlock(&out_lock);
}

/* ---- list lines ---- */

void list_begin(line_out *l, const char *kind, long id, long n, const char *key)
{
    out_begin(l, kind);
    out_id(l, id);
    if (n >= 0)
        out_u64(l, "n", (uint64_t)n);
    else
        out_str(l, "n", "-");
    put_key(l, key);
    l->mark = l->len;
    l->items = 0;
}

void list_item(line_out *l, const char *item)
{
    size_t n = strlen(item);
    if (l->len + 1 + n > CONTENT_MAX && l->items > 0) {
        char keep[96];
        size_t m = l->mark;
        memcpy(keep, l->buf, m < sizeof keep ? m : sizeof keep);
        out_send(l);
        memcpy(l->buf, keep, m < sizeof keep ? m : sizeof keep);
        l->len = m;
        l->items = 0;
    }
    if (l->items > 0)
        put(l, ",", 1);
    put(l, item, n);
    l->items++;
}

void list_end(line_out *l)
{
    if (l->items > 0)
        out_send(l);
    l->items = 0;
}

/* ---- parsing ---- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode %XX in place; -1 on a broken escape. */
static int unescape(char *s)
{
    char *w = s;
    for (; *s; s++) {
        if (*s == '%') {
            int a = hexval(s[1]), b = a < 0 ? -1 : hexval(s[2]);
            if (a < 0 || b < 0)
                return -1;
            *w++ = (char)(a * 16 + b);
            s += 2;
        } else {
            *w++ = *s;
        }
    }
    *w = 0;
    return 0;
}

/* The checksum at the end of s[0..len): 0 and *body (the bytes it covers),
 * or -1 with *why. */
static int check_crc(const char *s, size_t len, size_t *body, const char **why)
{
    uint32_t want = 0;
    size_t i;
    if (len < 5 + 1 + 10 || s[len - 10] != ' ' || s[len - 9] != '*') {
        *why = "no checksum at the end (' *' and 8 hex digits)";
        return -1;
    }
    for (i = len - 8; i < len; i++) {
        int h = hexval(s[i]);
        if (h < 0) {
            *why = "checksum is not 8 hex digits";
            return -1;
        }
        want = (want << 4) | (uint32_t)h;
    }
    *body = len - 10;
    if (crc32_bytes(s, *body) != want) {
        *why = "checksum mismatch";
        return -1;
    }
    return 0;
}

/* The kind at p into out->kind; the position after it, or NULL with *why. */
static char *parse_kind(char *p, line_in *out, const char **why)
{
    char *tok = p;
    while (*p && *p != ' ')
        p++;
    if ((size_t)(p - tok) == 0 || (size_t)(p - tok) >= sizeof out->kind) {
        *why = "missing or overlong kind";
        return NULL;
    }
    memcpy(out->kind, tok, (size_t)(p - tok));
    out->kind[p - tok] = 0;
    for (tok = out->kind; *tok; tok++)
        if (!((*tok >= 'a' && *tok <= 'z') || *tok == '-')) {
            *why = "kind is not [a-z-]+";
            return NULL;
        }
    if (*p == ' ') {
        p++;
        if (*p == 0) {
            *why = "trailing space before the checksum";
            return NULL;
        }
    }
    return p;
}

/* One key=value field k (terminated) into out; 0 or -1 with *why. */
static int add_field(char *k, line_in *out, const char **why)
{
    char *eq = strchr(k, '='), *c;
    if (!eq || eq == k) {
        *why = "field is not key=value";
        return -1;
    }
    *eq = 0;
    for (c = k; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.')) {
            *why = "key is not [a-z0-9_.]+";
            return -1;
        }
    if (unescape(eq + 1) < 0) {
        *why = "broken %XX escape";
        return -1;
    }
    if (field(out, k)) {
        *why = "key given twice";
        return -1;
    }
    if (out->n >= MAX_FIELDS) {
        *why = "too many fields";
        return -1;
    }
    out->key[out->n] = k;
    out->val[out->n] = eq + 1;
    out->n++;
    return 0;
}

int parse_line(char *s, size_t len, line_in *out, const char **why)
{
    size_t body;
    char *p;
    out->n = 0;
    out->kind[0] = 0;
    if (len > 0 && s[len - 1] == '\r')
        s[--len] = 0;
    if (len < 3 || strncmp(s, "RTS", 3) != 0)
        return 1;
    if (len < 5 || strncmp(s, "RTS1 ", 5) != 0) {
        *why = "not protocol version 1";
        return 2;
    }
    if (check_crc(s, len, &body, why) < 0)
        return -1;
    s[body] = 0;
    if ((p = parse_kind(s + 5, out, why)) == NULL)
        return -1;
    while (*p) {
        char *k;
        if (*p == ' ') {
            *why = "fields must be separated by exactly one space";
            return -1;
        }
        k = p;
        while (*p && *p != ' ')
            p++;
        if (*p) {
            *p++ = 0;
            if (*p == 0 || *p == ' ') {
                *why = "fields must be separated by exactly one space";
                return -1;
            }
        }
        if (add_field(k, out, why) < 0)
            return -1;
    }
    return 0;
}

const char *field(const line_in *l, const char *key)
{
    int i;
    for (i = 0; i < l->n; i++)
        if (strcmp(l->key[i], key) == 0)
            return l->val[i];
    return NULL;
}

/*
 * A small JSON reader for the hook (rewindfs-hook.c, its one includer): enough
 * to find the members of an object and decode string values (RFC 8259
 * escapes, \u surrogate pairs to UTF-8). Not a validator: malformed input
 * gives "not found". Apart from the hook's file because it is a concern of
 * its own (static functions, one translation unit: the build compiles
 * rewindfs-hook.c alone).
 */
#ifndef REWINDFS_HOOK_JSON_H
#define REWINDFS_HOOK_JSON_H

#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static void put_utf8(char **o, unsigned cp) {
  char *q = *o;
  if (cp < 0x80) *q++ = (char)cp;
  else if (cp < 0x800) { *q++ = (char)(0xC0 | (cp >> 6)); *q++ = (char)(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) { *q++ = (char)(0xE0 | (cp >> 12)); *q++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *q++ = (char)(0x80 | (cp & 0x3F)); }
  else { *q++ = (char)(0xF0 | (cp >> 18)); *q++ = (char)(0x80 | ((cp >> 12) & 0x3F)); *q++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *q++ = (char)(0x80 | (cp & 0x3F)); }
  *o = q;
}

static int hex4(const char *p, const char *e, unsigned *v) {
  if (e - p < 4) return 0;
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    *v <<= 4;
    if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  return 1;
}

/* p at '"': returns the position after the closing quote (NULL if malformed); the decoded string in *out when out != NULL. */
static const char *str(const char *p, const char *e, char **out) {
  if (p >= e || *p != '"') return NULL;
  p++;
  const char *s = p;
  while (p < e && *p != '"') { if (*p == '\\') p++; p++; }
  if (p >= e) return NULL;
  if (out) {
    char *o = malloc((size_t)(p - s) * 2 + 1), *q = o;
    if (!o) return NULL;
    for (const char *r = s; r < p; r++) {
      if (*r != '\\') { *q++ = *r; continue; }
      r++;
      switch (*r) {
        case 'n': *q++ = '\n'; break;
        case 't': *q++ = '\t'; break;
        case 'r': *q++ = '\r'; break;
        case 'b': *q++ = '\b'; break;
        case 'f': *q++ = '\f'; break;
        case 'u': {
          unsigned cp, lo;
          if (!hex4(r + 1, p, &cp)) { *q++ = '?'; break; }
          r += 4;
          if (cp >= 0xD800 && cp < 0xDC00 && r + 6 < p && r[1] == '\\' && r[2] == 'u' && hex4(r + 3, p, &lo) && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            r += 6;
          }
          put_utf8(&q, cp);
          break;
        }
        default: *q++ = *r; /* \" \\ \/ */
      }
    }
    *q = 0;
    *out = o;
  }
  return p + 1;
}

/* Skips one value; returns the position after it, NULL if malformed. */
static const char *skip(const char *p, const char *e) {
  p = ws(p, e);
  if (p >= e) return NULL;
  if (*p == '"') return str(p, e, NULL);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (p < e) {
      if (*p == '"') { p = str(p, e, NULL); if (!p) return NULL; continue; }
      if (*p == '{' || *p == '[') depth++;
      else if (*p == '}' || *p == ']') { if (--depth == 0) return p + 1; }
      p++;
    }
    return NULL;
  }
  while (p < e && !strchr(",}] \t\r\n", *p)) p++;
  return p;
}

/* The member `key` of the object at p..e: its value's start and end, or 0. */
static int member(const char *p, const char *e, const char *key, const char **vs, const char **ve) {
  p = ws(p, e);
  if (p >= e || *p != '{') return 0;
  p++;
  for (;;) {
    p = ws(p, e);
    if (p >= e || *p != '"') return 0;
    char *k = NULL;
    p = str(p, e, &k);
    if (!p) return 0;
    p = ws(p, e);
    if (p >= e || *p != ':') { free(k); return 0; }
    p = ws(p + 1, e);
    const char *end = skip(p, e);
    if (!end) { free(k); return 0; }
    int hit = strcmp(k, key) == 0;
    free(k);
    if (hit) { *vs = p; *ve = end; return 1; }
    p = ws(end, e);
    if (p < e && *p == ',') { p++; continue; }
    return 0;
  }
}

/* The string member `key` of the object at p..e, decoded (malloc'ed), or NULL. */
static char *member_str(const char *p, const char *e, const char *key) {
  const char *vs, *ve;
  char *out = NULL;
  if (!member(p, e, key, &vs, &ve) || *vs != '"') return NULL;
  return str(vs, ve, &out) ? out : NULL;
}

#endif

/*
 * rewindfs-announce: the helper process that tells watchers about a
 * restore (issue 17; fs/history/announce.ts, daemon/announce.ts).
 *
 * The daemon must never touch its own mount, so after a restore it starts
 * this process and writes it the restore's steps on stdin; the process
 * repeats them through the mount, and the kernel emits the inotify and
 * fanotify events a watcher expects. The daemon answers this process's
 * requests (and only those: it knows the pid) without changing anything.
 *
 * Usage: rewindfs-announce MOUNTPOINT < steps
 * A step is three NUL-terminated fields: OP, PATH (workspace path, '/a/b'),
 * ARG. OP and ARG:
 *   u  unlink            ARG empty
 *   r  rmdir             ARG empty
 *   d  mkdir             ARG the mode, octal
 *   n  mknod             ARG "MODE RDEV", octal and decimal
 *   l  symlink           ARG the link target
 *   m  modify: open O_WRONLY, ftruncate to its size, close (falls back to a)
 *   a  attrib: lchown to the owner it has
 * A failing step is reported on stderr ("OP PATH: error") and the rest go on.
 * Exit status: 0 when every step worked, 1 when some failed, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int attrib (const char *p) {
  struct stat st;
  if (lstat(p, &st) != 0) return -1;
  return lchown(p, st.st_uid, st.st_gid);
}

static int modify (const char *p) {
  int fd = open(p, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return attrib(p);
  struct stat st;
  int r = fstat(fd, &st);
  if (r == 0) r = ftruncate(fd, st.st_size);
  int e = errno;
  close(fd);
  errno = e;
  return r;
}

int main (int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: rewindfs-announce MOUNTPOINT < steps\n"); return 2; }
  if (chdir("/") != 0) return 2;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  if (!buf) return 2;
  for (;;) {
    if (len == cap) { cap *= 2; char *b = realloc(buf, cap); if (!b) return 2; buf = b; }
    ssize_t n = read(0, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t) n;
  }
  const char *mnt = argv[1];
  size_t mlen = strlen(mnt);
  char *path = malloc(mlen + 4097);
  if (!path) return 2;
  int failed = 0;
  size_t i = 0;
  while (i < len) {
    const char *f[3];
    for (int k = 0; k < 3; k++) {
      f[k] = buf + i;
      while (i < len && buf[i] != '\0') i++;
      if (i >= len) { fprintf(stderr, "rewindfs-announce: a step is cut short\n"); return 1; }
      i++;
    }
    size_t plen = strlen(f[1]);
    if (plen > 4096) { fprintf(stderr, "%s %s: path too long\n", f[0], f[1]); failed = 1; continue; }
    memcpy(path, mnt, mlen);
    memcpy(path + mlen, f[1], plen + 1);
    int r;
    switch (f[0][0]) {
      case 'u': r = unlink(path); break;
      case 'r': r = rmdir(path); break;
      case 'd': r = mkdir(path, (mode_t) strtoul(f[2], NULL, 8)); break;
      case 'n': {
        char *end;
        mode_t mode = (mode_t) strtoul(f[2], &end, 8);
        dev_t dev = (dev_t) strtoull(end, NULL, 10);
        r = mknod(path, mode, dev);
        break;
      }
      case 'l': r = symlink(f[2], path); break;
      case 'm': r = modify(path); break;
      case 'a': r = attrib(path); break;
      default: r = -1; errno = EINVAL;
    }
    if (r != 0) { fprintf(stderr, "%s %s: %s\n", f[0], f[1], strerror(errno)); failed = 1; }
  }
  return failed;
}

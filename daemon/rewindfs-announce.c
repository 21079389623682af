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
 * Every call is made relative to a descriptor of the mount's root, opened
 * first and checked to be a FUSE filesystem: if the mount is gone (a lazy
 * unmount from outside), nothing is done to the directory underneath.
 * Exit status: 0 when every step worked, 1 when some failed, 2 on bad usage,
 * 3 when MOUNTPOINT is not a FUSE mount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* FUSE_SUPER_MAGIC (linux/magic.h) */
#define FUSE_MAGIC 0x65735546

static int root = -1;

static int attrib (const char *p) {
  struct stat st;
  if (fstatat(root, p, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
  return fchownat(root, p, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
}

static int modify (const char *p) {
  int fd = openat(root, p, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
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
  root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct statfs sf;
  if (root < 0 || fstatfs(root, &sf) != 0 || sf.f_type != FUSE_MAGIC) {
    fprintf(stderr, "rewindfs-announce: %s is not a FUSE mount: nothing done\n", argv[1]);
    return 3;
  }
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
    /* workspace path '/a/b' -> 'a/b' below the root descriptor */
    const char *path = f[1];
    while (*path == '/') path++;
    int r;
    if (*path == '\0') {
      /* the root itself: only its attributes can change (IN_ATTRIB) */
      struct stat st;
      r = f[0][0] != 'a' && f[0][0] != 'm' ? (errno = EINVAL, -1)
        : fstat(root, &st) != 0 ? -1 : fchownat(root, "", st.st_uid, st.st_gid, AT_EMPTY_PATH);
      if (r != 0) { fprintf(stderr, "%s %s: %s\n", f[0], f[1], strerror(errno)); failed = 1; }
      continue;
    }
    switch (f[0][0]) {
      case 'u': r = unlinkat(root, path, 0); break;
      case 'r': r = unlinkat(root, path, AT_REMOVEDIR); break;
      case 'd': r = mkdirat(root, path, (mode_t) strtoul(f[2], NULL, 8)); break;
      case 'n': {
        char *end;
        mode_t mode = (mode_t) strtoul(f[2], &end, 8);
        dev_t dev = (dev_t) strtoull(end, NULL, 10);
        r = mknodat(root, path, mode, dev);
        break;
      }
      case 'l': r = symlinkat(f[2], root, path); break;
      case 'm': r = modify(path); break;
      case 'a': r = attrib(path); break;
      default: r = -1; errno = EINVAL;
    }
    if (r != 0) { fprintf(stderr, "%s %s: %s\n", f[0], f[1], strerror(errno)); failed = 1; }
  }
  return failed;
}

/*
 * rewindfs-announce: the helper process that tells watchers about a
 * restore (issue 17; fs/history/announce.ts, daemon/announce.ts).
 *
 * The daemon must never touch its own mount, so it keeps this process
 * (started at the first restore, alive until the daemon goes) and writes it
 * each restore's steps on stdin; the process repeats them through the
 * mount, and the kernel emits the inotify and fanotify events a watcher
 * expects. The daemon answers this process's requests (and only those: it
 * knows the pid) without changing anything, and only while a batch runs.
 *
 * Usage: rewindfs-announce MOUNTPOINT < batches
 * Input: batches of steps. A step is three NUL-terminated fields: OP, PATH
 * (workspace path, '/a/b'), ARG. OP and ARG:
 *   u  unlink            ARG empty
 *   r  rmdir             ARG empty
 *   d  mkdir             ARG the mode, octal
 *   n  mknod             ARG "MODE RDEV", octal and decimal
 *   l  symlink           ARG the link target
 *   m  modify: open O_WRONLY, ftruncate to its size, close (falls back to a)
 *   a  attrib: lchown to the owner it has
 *   .  end of the batch  PATH and ARG empty
 * Output on stdout, NUL-terminated records (paths are bytes and may hold a
 * newline): "! OP PATH: error" for a failing step (the rest go on), and
 * "= N" at the end of each batch, N the batch's failed steps.
 *
 * Each batch opens the mount's root first and checks with fstatfs that it
 * is a FUSE filesystem; every call is made relative to that descriptor and
 * it is closed at the batch's end, so between batches the process holds
 * nothing of the mount (an unmount is never busy because of it). If the
 * mount is gone (a lazy unmount from outside), nothing is done to the
 * directory underneath: the batch reports "! . MOUNTPOINT: not a FUSE
 * mount: nothing done" and every step as failed.
 *
 * The process ends at the end of its input, or when the daemon that started
 * it dies (PR_SET_PDEATHSIG). Exit status: 0 at the end of the input, 1
 * when the input ends inside a batch, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/close_range.h>

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

/* one NUL-terminated record on stdout */
static void report (const char *fmt, const char *a, const char *b, const char *c) {
  printf(fmt, a, b, c);
  putchar('\0');
}

/* Opens the mount's root for a batch: 0, or -1 when it is not a FUSE mount (nothing may be done). */
static int open_root (const char *mountpoint) {
  root = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct statfs sf;
  if (root < 0 || fstatfs(root, &sf) != 0 || sf.f_type != FUSE_MAGIC) {
    if (root >= 0) close(root);
    root = -1;
    return -1;
  }
  return 0;
}

/* Does one step below the root descriptor: 0, or -1 with errno. */
static int step (const char *op, const char *wspath, const char *arg) {
  /* workspace path '/a/b' -> 'a/b' below the root descriptor */
  const char *path = wspath;
  while (*path == '/') path++;
  if (*path == '\0') {
    /* the root itself: only its attributes can change (IN_ATTRIB) */
    struct stat st;
    if (op[0] != 'a' && op[0] != 'm') { errno = EINVAL; return -1; }
    if (fstat(root, &st) != 0) return -1;
    return fchownat(root, "", st.st_uid, st.st_gid, AT_EMPTY_PATH);
  }
  switch (op[0]) {
    case 'u': return unlinkat(root, path, 0);
    case 'r': return unlinkat(root, path, AT_REMOVEDIR);
    case 'd': return mkdirat(root, path, (mode_t) strtoul(arg, NULL, 8));
    case 'n': {
      char *end;
      mode_t mode = (mode_t) strtoul(arg, &end, 8);
      dev_t dev = (dev_t) strtoull(end, NULL, 10);
      return mknodat(root, path, mode, dev);
    }
    case 'l': return symlinkat(arg, root, path);
    case 'm': return modify(path);
    case 'a': return attrib(path);
    default: errno = EINVAL; return -1;
  }
}

int main (int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: rewindfs-announce MOUNTPOINT < batches\n"); return 2; }
  /* gone with the daemon, even when it is killed (its pipe would end our input too, but not while we wait on the mount) */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0;
  /* nothing of the daemon's is kept alive by this long-lived process: its store files, sockets, the FUSE device */
  close_range(3, ~0U, 0);
  if (chdir("/") != 0) return 2;
  const char *mountpoint = argv[1];
  size_t cap = 1 << 16, len = 0, pos = 0;
  char *buf = malloc(cap);
  if (!buf) return 2;
  int in_batch = 0, usable = 0;
  long failed = 0;
  for (;;) {
    /* parse every whole step in buf[pos, len) */
    for (;;) {
      const char *f[3];
      size_t i = pos;
      int k = 0;
      for (; k < 3; k++) {
        f[k] = buf + i;
        while (i < len && buf[i] != '\0') i++;
        if (i >= len) break;
        i++;
      }
      if (k < 3) break; /* the step is not all here yet */
      pos = i;
      if (!in_batch) {
        in_batch = 1; failed = 0;
        usable = open_root(mountpoint) == 0;
        if (!usable) report("! . %s: not a FUSE mount: nothing done%s%s", mountpoint, "", "");
      }
      if (f[0][0] == '.') {
        char n[32];
        snprintf(n, sizeof n, "%ld", failed);
        report("= %s%s%s", n, "", "");
        fflush(stdout);
        if (root >= 0) close(root);
        root = -1; in_batch = 0;
        continue;
      }
      if (!usable) { failed++; continue; }
      if (step(f[0], f[1], f[2]) != 0) {
        report("! %s %s: %s", f[0], f[1], strerror(errno));
        failed++;
      }
    }
    /* keep the unparsed tail at the front, grow when a step fills the buffer */
    if (pos > 0) { memmove(buf, buf + pos, len - pos); len -= pos; pos = 0; }
    if (len == cap) { cap *= 2; char *b = realloc(buf, cap); if (!b) return 2; buf = b; }
    ssize_t n = read(0, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t) n;
  }
  fflush(stdout);
  if (in_batch || len > 0) { fprintf(stderr, "rewindfs-announce: the input ended inside a batch\n"); return 1; }
  return 0;
}

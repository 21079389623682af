/*
 * passthrough-ll: a small passthrough filesystem on libfuse 3's LOW-LEVEL
 * API, the "transport's ceiling" peer of bench/session.ts: what a request
 * costs when it is answered in C with one syscall on the backing directory,
 * through the same kernel interface a low-level rewindfs would use.
 *
 *   passthrough-ll SOURCE MOUNTPOINT
 *
 * Prints "ready" on stdout once mounted; unmounts and exits on SIGTERM,
 * SIGINT or SIGHUP (auto_unmount also removes the mount if it is killed).
 *
 * Mount options are the product's (fuse/adapter.ts MOUNT_OPTIONS) as far as
 * libfuse 3 has them: default_permissions, allow_other, max_write=131072
 * (set in init), 60 s entry and attribute timeouts (in every reply),
 * negative_timeout=0 (ENOENT lookups are not cached), no kernel_cache, no
 * writeback cache, no direct_io; auto_unmount. big_writes is implied in
 * libfuse 3; use_ino, hard_remove and nonempty are high-level or fuse 2
 * options (a low-level filesystem picks its node ids itself and never hides
 * unlinked files). The capabilities libfuse 3 asks by default stay on
 * (parallel dirops, async read, readdirplus auto); READDIRPLUS is served.
 *
 * Node ids are pointers to a node holding an O_PATH descriptor of the backing
 * inode, found again by (st_dev, st_ino) in a hash table so that two names
 * of one inode share one node; a node is freed when the kernel forgets its
 * last lookup. The design is the classic one of libfuse's own
 * example/passthrough_ll.c (written afresh here, not copied).
 *
 * Descriptors are bounded: a session's node_modules makes the kernel remember
 * over 20,000 inodes, and a machine whose hard RLIMIT_NOFILE is 20,000 (no
 * CAP_SYS_RESOURCE to raise it) then fails with EMFILE (every tsc build of the
 * full benchmark of 2026-12-05 did). Up to FD_BUDGET nodes (the descriptor
 * limit less 2,048 for open files and directories) keep their O_PATH
 * descriptor; a node made past the budget keeps a file handle instead
 * (name_to_handle_at(2)) and opens it with open_by_handle_at(2) for each
 * request, closing it after (needs CAP_DAC_READ_SEARCH, i.e. root).
 */
#define FUSE_USE_VERSION 34
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#include <sys/resource.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define TIMEOUT 60.0
#define BUCKETS 65536

struct node {
  struct node *next; /* hash chain */
  dev_t dev;
  ino_t ino;
  int fd; /* O_PATH, or -1 when the node holds `handle` instead */
  struct file_handle *handle;
  uint64_t nlookup;
};

static struct node root;
static struct node *table[BUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static long fd_budget = 16384; /* set in main from RLIMIT_NOFILE */
static long fds_held = 0;      /* nodes holding a descriptor; under table_lock */
static int mount_fd = -1;      /* the source opened O_RDONLY: open_by_handle_at refuses O_PATH (EBADF) */

/* A descriptor of n's backing inode for one request (-1 and errno set on failure); give it back
 * with fd_done. */
static int node_fd (struct node *n) {
  if (n->fd >= 0) return n->fd;
  return open_by_handle_at(mount_fd, n->handle, O_PATH);
}

static void fd_done (struct node *n, int fd) {
  if (n->fd < 0 && fd >= 0) close(fd);
}

/* Runs `call` (an expression using `fd`) with a descriptor of node `n`; `r` gets its value, or -1
 * with errno when the node's handle cannot be opened. */
#define WITH_FD(n, fd, r, call) do { int fd = node_fd(n); if (fd < 0) { r = -1; break; } r = (call); int e_ = errno; fd_done(n, fd); errno = e_; } while (0)

static struct node *N (fuse_ino_t ino) {
  return ino == FUSE_ROOT_ID ? &root : (struct node *) (uintptr_t) ino;
}

static unsigned bucket (dev_t dev, ino_t ino) {
  uint64_t h = (uint64_t) ino * 0x9E3779B97F4A7C15ull ^ (uint64_t) dev;
  return (unsigned) (h >> 48) % BUCKETS;
}

static void procpath (char *buf, int fd) { snprintf(buf, 64, "/proc/self/fd/%d", fd); }

/* Looks `name` up under `parent`, fills `e`; the node's nlookup grows by one. */
static int do_lookup (fuse_ino_t parent, const char *name, struct fuse_entry_param *e) {
  memset(e, 0, sizeof(*e));
  e->attr_timeout = TIMEOUT;
  e->entry_timeout = TIMEOUT;
  int fd;
  WITH_FD(N(parent), pfd, fd, openat(pfd, name, O_PATH | O_NOFOLLOW));
  if (fd < 0) return errno;
  if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) { int err = errno; close(fd); return err; }
  pthread_mutex_lock(&table_lock);
  unsigned b = bucket(e->attr.st_dev, e->attr.st_ino);
  struct node *n = table[b];
  while (n && !(n->dev == e->attr.st_dev && n->ino == e->attr.st_ino)) n = n->next;
  if (n) {
    n->nlookup++;
    close(fd);
  } else {
    n = calloc(1, sizeof(*n));
    if (!n) { pthread_mutex_unlock(&table_lock); close(fd); return ENOMEM; }
    n->dev = e->attr.st_dev; n->ino = e->attr.st_ino; n->fd = fd; n->nlookup = 1;
    if (fds_held >= fd_budget) {
      struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
      int mount_id;
      if (h) h->handle_bytes = MAX_HANDLE_SZ;
      if (h && name_to_handle_at(fd, "", h, &mount_id, AT_EMPTY_PATH) == 0) { n->handle = h; n->fd = -1; close(fd); }
      else { free(h); fds_held++; } /* no handle: keep the descriptor */
    } else {
      fds_held++;
    }
    n->next = table[b]; table[b] = n;
  }
  pthread_mutex_unlock(&table_lock);
  e->ino = (uintptr_t) n;
  return 0;
}

static void forget_one (fuse_ino_t ino, uint64_t nlookup) {
  if (ino == FUSE_ROOT_ID) return;
  struct node *n = N(ino);
  pthread_mutex_lock(&table_lock);
  n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
  if (n->nlookup == 0) {
    struct node **p = &table[bucket(n->dev, n->ino)];
    while (*p && *p != n) p = &(*p)->next;
    if (*p) *p = n->next;
    if (n->fd >= 0) { close(n->fd); fds_held--; }
    free(n->handle);
    free(n);
  }
  pthread_mutex_unlock(&table_lock);
}

static void pt_init (void *userdata, struct fuse_conn_info *conn) {
  (void) userdata;
  conn->max_write = 131072;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void pt_lookup (fuse_req_t req, fuse_ino_t parent, const char *name) {
  struct fuse_entry_param e;
  int err = do_lookup(parent, name, &e);
  if (err) fuse_reply_err(req, err); else fuse_reply_entry(req, &e);
}

static void pt_forget (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  forget_one(ino, nlookup);
  fuse_reply_none(req);
}

static void pt_forget_multi (fuse_req_t req, size_t count, struct fuse_forget_data *f) {
  for (size_t i = 0; i < count; i++) forget_one(f[i].ino, f[i].nlookup);
  fuse_reply_none(req);
}

static void pt_getattr (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void) fi;
  struct stat st;
  int r;
  WITH_FD(N(ino), fd, r, fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
  if (r < 0) fuse_reply_err(req, errno);
  else fuse_reply_attr(req, &st, TIMEOUT);
}

static void pt_setattr (fuse_req_t req, fuse_ino_t ino, struct stat *a, int set, struct fuse_file_info *fi) {
  struct node *n = N(ino);
  int nfd = node_fd(n);
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  int r = 0;
  if (set & FUSE_SET_ATTR_MODE) r = fi ? fchmod(fi->fh, a->st_mode) : chmod(p, a->st_mode);
  if (!r && (set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
    uid_t u = (set & FUSE_SET_ATTR_UID) ? a->st_uid : (uid_t) -1;
    gid_t g = (set & FUSE_SET_ATTR_GID) ? a->st_gid : (gid_t) -1;
    r = fchownat(nfd, "", u, g, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
  }
  if (!r && (set & FUSE_SET_ATTR_SIZE)) r = fi ? ftruncate(fi->fh, a->st_size) : truncate(p, a->st_size);
  if (!r && (set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
    struct timespec tv[2];
    tv[0].tv_sec = 0; tv[0].tv_nsec = UTIME_OMIT; tv[1] = tv[0];
    if (set & FUSE_SET_ATTR_ATIME_NOW) tv[0].tv_nsec = UTIME_NOW; else if (set & FUSE_SET_ATTR_ATIME) tv[0] = a->st_atim;
    if (set & FUSE_SET_ATTR_MTIME_NOW) tv[1].tv_nsec = UTIME_NOW; else if (set & FUSE_SET_ATTR_MTIME) tv[1] = a->st_mtim;
    r = fi ? futimens(fi->fh, tv) : utimensat(AT_FDCWD, p, tv, 0);
  }
  int err = errno;
  fd_done(n, nfd);
  if (r) { fuse_reply_err(req, err); return; }
  pt_getattr(req, ino, fi);
}

static void pt_readlink (fuse_req_t req, fuse_ino_t ino) {
  char buf[PATH_MAX + 1];
  ssize_t len;
  WITH_FD(N(ino), fd, len, readlinkat(fd, "", buf, sizeof(buf)));
  if (len < 0) { fuse_reply_err(req, errno); return; }
  if (len == sizeof(buf)) { fuse_reply_err(req, ENAMETOOLONG); return; }
  buf[len] = 0;
  fuse_reply_readlink(req, buf);
}

/* after a successful create-like call `r == 0`: answers with the new entry */
static void reply_made (fuse_req_t req, int r, fuse_ino_t parent, const char *name) {
  if (r) { fuse_reply_err(req, errno); return; }
  struct fuse_entry_param e;
  int err = do_lookup(parent, name, &e);
  if (err) fuse_reply_err(req, err); else fuse_reply_entry(req, &e);
}

static void pt_mknod (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  int r;
  WITH_FD(N(parent), fd, r, mknodat(fd, name, mode, rdev));
  reply_made(req, r, parent, name);
}

static void pt_mkdir (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  int r;
  WITH_FD(N(parent), fd, r, mkdirat(fd, name, mode));
  reply_made(req, r, parent, name);
}

static void pt_symlink (fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  int r;
  WITH_FD(N(parent), fd, r, symlinkat(link, fd, name));
  reply_made(req, r, parent, name);
}

static void pt_link (fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name) {
  int sfd = node_fd(N(ino));
  if (sfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, sfd);
  int r;
  WITH_FD(N(parent), fd, r, linkat(AT_FDCWD, p, fd, name, AT_SYMLINK_FOLLOW));
  int err = errno;
  fd_done(N(ino), sfd);
  errno = err;
  reply_made(req, r, parent, name);
}

static void pt_unlink (fuse_req_t req, fuse_ino_t parent, const char *name) {
  int r;
  WITH_FD(N(parent), fd, r, unlinkat(fd, name, 0));
  fuse_reply_err(req, r ? errno : 0);
}

static void pt_rmdir (fuse_req_t req, fuse_ino_t parent, const char *name) {
  int r;
  WITH_FD(N(parent), fd, r, unlinkat(fd, name, AT_REMOVEDIR));
  fuse_reply_err(req, r ? errno : 0);
}

static void pt_rename (fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t np, const char *nn, unsigned int flags) {
  int from = node_fd(N(parent));
  if (from < 0) { fuse_reply_err(req, errno); return; }
  int r;
  WITH_FD(N(np), to, r, renameat2(from, name, to, nn, flags));
  int err = errno;
  fd_done(N(parent), from);
  fuse_reply_err(req, r ? err : 0);
}

static void pt_open (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  int nfd = node_fd(N(ino));
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  int fd = open(p, fi->flags & ~(O_NOFOLLOW | O_DIRECT));
  int err = errno;
  fd_done(N(ino), nfd);
  errno = err;
  if (fd < 0) { fuse_reply_err(req, errno); return; }
  fi->fh = fd;
  fuse_reply_open(req, fi);
}

static void pt_create (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
  int fd;
  WITH_FD(N(parent), pfd, fd, openat(pfd, name, (fi->flags | O_CREAT) & ~(O_NOFOLLOW | O_DIRECT), mode));
  if (fd < 0) { fuse_reply_err(req, errno); return; }
  struct fuse_entry_param e;
  int err = do_lookup(parent, name, &e);
  if (err) { close(fd); fuse_reply_err(req, err); return; }
  fi->fh = fd;
  fuse_reply_create(req, &e, fi);
}

static void pt_read (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  (void) ino;
  struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
  buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
  buf.buf[0].fd = fi->fh;
  buf.buf[0].pos = off;
  fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void pt_write_buf (fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off, struct fuse_file_info *fi) {
  (void) ino;
  struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
  out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
  out.buf[0].fd = fi->fh;
  out.buf[0].pos = off;
  ssize_t r = fuse_buf_copy(&out, in, 0);
  if (r < 0) fuse_reply_err(req, -r); else fuse_reply_write(req, (size_t) r);
}

static void pt_flush (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void) ino;
  fuse_reply_err(req, close(dup(fi->fh)) ? errno : 0);
}

static void pt_release (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void) ino;
  close(fi->fh);
  fuse_reply_err(req, 0);
}

static void pt_fsync (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  (void) ino;
  fuse_reply_err(req, (datasync ? fdatasync(fi->fh) : fsync(fi->fh)) ? errno : 0);
}

struct dirp { DIR *dp; struct dirent *entry; off_t offset; };

static void pt_opendir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  struct dirp *d = calloc(1, sizeof(*d));
  if (!d) { fuse_reply_err(req, ENOMEM); return; }
  int fd;
  WITH_FD(N(ino), nfd, fd, openat(nfd, ".", O_RDONLY | O_DIRECTORY));
  if (fd < 0 || !(d->dp = fdopendir(fd))) { int err = errno; if (fd >= 0) close(fd); free(d); fuse_reply_err(req, err); return; }
  fi->fh = (uintptr_t) d;
  fuse_reply_open(req, fi);
}

static void readdir_common (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi, int plus) {
  struct dirp *d = (struct dirp *) (uintptr_t) fi->fh;
  char *buf = malloc(size), *p = buf;
  size_t rem = size;
  int err = 0;
  if (!buf) { fuse_reply_err(req, ENOMEM); return; }
  if (off != d->offset) { seekdir(d->dp, off); d->entry = NULL; d->offset = off; }
  for (;;) {
    if (!d->entry) {
      errno = 0;
      d->entry = readdir(d->dp);
      if (!d->entry) { err = errno; break; }
    }
    const char *name = d->entry->d_name;
    off_t next = d->entry->d_off;
    size_t used;
    if (plus) {
      struct fuse_entry_param e;
      int dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
      if (dots) {
        memset(&e, 0, sizeof(e));
        e.attr.st_ino = d->entry->d_ino;
        e.attr.st_mode = d->entry->d_type << 12;
      } else if ((err = do_lookup(ino, name, &e))) {
        break;
      }
      used = fuse_add_direntry_plus(req, p, rem, name, &e, next);
      if (used > rem) { if (!dots) forget_one(e.ino, 1); break; }
    } else {
      struct stat st;
      memset(&st, 0, sizeof(st));
      st.st_ino = d->entry->d_ino;
      st.st_mode = d->entry->d_type << 12;
      used = fuse_add_direntry(req, p, rem, name, &st, next);
      if (used > rem) break;
    }
    p += used; rem -= used;
    d->entry = NULL;
    d->offset = next;
  }
  if (err && rem == size) fuse_reply_err(req, err);
  else fuse_reply_buf(req, buf, size - rem);
  free(buf);
}

static void pt_readdir (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  readdir_common(req, ino, size, off, fi, 0);
}

static void pt_readdirplus (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  readdir_common(req, ino, size, off, fi, 1);
}

static void pt_releasedir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void) ino;
  struct dirp *d = (struct dirp *) (uintptr_t) fi->fh;
  closedir(d->dp);
  free(d);
  fuse_reply_err(req, 0);
}

static void pt_fsyncdir (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  (void) ino;
  int fd = dirfd(((struct dirp *) (uintptr_t) fi->fh)->dp);
  fuse_reply_err(req, (datasync ? fdatasync(fd) : fsync(fd)) ? errno : 0);
}

static void pt_statfs (fuse_req_t req, fuse_ino_t ino) {
  struct statvfs s;
  int nfd = node_fd(N(ino));
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  int r = statvfs(p, &s), err = errno;
  fd_done(N(ino), nfd);
  if (r < 0) fuse_reply_err(req, err); else fuse_reply_statfs(req, &s);
}

static void pt_getxattr (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
  int nfd = node_fd(N(ino));
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  char *buf = size ? malloc(size) : NULL;
  ssize_t r = getxattr(p, name, buf, size);
  int err = errno;
  fd_done(N(ino), nfd);
  errno = err;
  if (r < 0) fuse_reply_err(req, errno);
  else if (size == 0) fuse_reply_xattr(req, (size_t) r);
  else fuse_reply_buf(req, buf, (size_t) r);
  free(buf);
}

static void pt_listxattr (fuse_req_t req, fuse_ino_t ino, size_t size) {
  int nfd = node_fd(N(ino));
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  char *buf = size ? malloc(size) : NULL;
  ssize_t r = listxattr(p, buf, size);
  int err = errno;
  fd_done(N(ino), nfd);
  errno = err;
  if (r < 0) fuse_reply_err(req, errno);
  else if (size == 0) fuse_reply_xattr(req, (size_t) r);
  else fuse_reply_buf(req, buf, (size_t) r);
  free(buf);
}

static void pt_setxattr (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags) {
  int nfd = node_fd(N(ino));
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  int r = setxattr(p, name, value, size, flags), err = errno;
  fd_done(N(ino), nfd);
  fuse_reply_err(req, r ? err : 0);
}

static void pt_removexattr (fuse_req_t req, fuse_ino_t ino, const char *name) {
  int nfd = node_fd(N(ino));
  if (nfd < 0) { fuse_reply_err(req, errno); return; }
  char p[64]; procpath(p, nfd);
  int r = removexattr(p, name), err = errno;
  fd_done(N(ino), nfd);
  fuse_reply_err(req, r ? err : 0);
}

static const struct fuse_lowlevel_ops ops = {
  .init = pt_init,
  .lookup = pt_lookup,
  .forget = pt_forget,
  .forget_multi = pt_forget_multi,
  .getattr = pt_getattr,
  .setattr = pt_setattr,
  .readlink = pt_readlink,
  .mknod = pt_mknod,
  .mkdir = pt_mkdir,
  .symlink = pt_symlink,
  .link = pt_link,
  .unlink = pt_unlink,
  .rmdir = pt_rmdir,
  .rename = pt_rename,
  .open = pt_open,
  .create = pt_create,
  .read = pt_read,
  .write_buf = pt_write_buf,
  .flush = pt_flush,
  .release = pt_release,
  .fsync = pt_fsync,
  .opendir = pt_opendir,
  .readdir = pt_readdir,
  .readdirplus = pt_readdirplus,
  .releasedir = pt_releasedir,
  .fsyncdir = pt_fsyncdir,
  .statfs = pt_statfs,
  .getxattr = pt_getxattr,
  .listxattr = pt_listxattr,
  .setxattr = pt_setxattr,
  .removexattr = pt_removexattr,
};

int main (int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: passthrough-ll SOURCE MOUNTPOINT\n"); return 2; }
  umask(0);
  /* one O_PATH descriptor per inode the kernel remembers: a session's node_modules passes 20,000,
   * so raise the descriptor limit as far as the kernel allows (root may raise the hard limit to
   * fs.nr_open; anyone else to the hard limit) */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    struct rlimit want = { 1048576, 1048576 };
    if (setrlimit(RLIMIT_NOFILE, &want) != 0) { nofile.rlim_cur = nofile.rlim_max; setrlimit(RLIMIT_NOFILE, &nofile); }
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) fd_budget = (long) nofile.rlim_cur - 2048;
    if (fd_budget < 64) fd_budget = 64;
  }
  root.fd = open(argv[1], O_PATH | O_DIRECTORY);
  if (root.fd < 0) { perror(argv[1]); return 1; }
  mount_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
  if (mount_fd < 0) { perror(argv[1]); return 1; }
  root.nlookup = 2;
  char *fargv[] = { argv[0], "-o", "default_permissions,allow_other,auto_unmount,fsname=passthrough-ll,subtype=passthrough-ll", NULL };
  struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
  struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
  if (!se) return 1;
  if (fuse_set_signal_handlers(se) != 0) return 1;
  if (fuse_session_mount(se, argv[2]) != 0) return 1;
  printf("ready\n");
  fflush(stdout);
  struct fuse_loop_config *cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 0);
  fuse_loop_cfg_set_idle_threads(cfg, 10);
  int r = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return r ? 1 : 0;
}

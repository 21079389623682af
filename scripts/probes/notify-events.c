/*
 * Probe: which inotify/fanotify events the FUSE notifications produce
 * (issue 17, DECISIONS.md "What a watcher sees of FUSE notifications").
 *
 * A tiny read-only filesystem on libfuse 3's low-level API with a fixed set
 * of nodes whose presence, type and content the probe changes behind the
 * kernel's back, then tells the kernel with one notification. Commands come
 * on stdin, one a line; each is answered "ok RC" on stdout (RC = the notify
 * call's return value, 0 or -errno). Run by notify-events.sh.
 *
 *   hide NAME | unhide NAME      the node named NAME disappears / appears
 *   set NAME TEXT                its content becomes TEXT
 *   retype                       "t" (a file, ino 7) becomes a directory (ino 8)
 *   ie PARENT NAME               fuse_lowlevel_notify_inval_entry
 *   ii INO                       fuse_lowlevel_notify_inval_inode (whole file)
 *   del PARENT CHILD NAME        fuse_lowlevel_notify_delete
 *   store INO TEXT               fuse_lowlevel_notify_store at offset 0
 *
 * Entry and attribute timeouts are 60 s, as the product's, so the kernel
 * keeps what it looked up until told otherwise.
 * Build: gcc -O2 -o notify-events notify-events.c $(pkg-config --cflags --libs fuse3) -lpthread
 */
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct node { fuse_ino_t ino, parent; const char *name; mode_t mode; char content[256]; int present; };
static struct node nodes[] = {
  { 1, 1, "", S_IFDIR | 0755, "", 1 },
  { 2, 1, "a", S_IFREG | 0644, "AAAA\n", 1 },
  { 3, 1, "b", S_IFREG | 0644, "BBBB\n", 1 },
  { 4, 1, "d", S_IFDIR | 0755, "", 1 },
  { 5, 4, "c", S_IFREG | 0644, "CCCC\n", 1 },
  { 6, 1, "n", S_IFREG | 0644, "NEW\n", 0 },
  { 7, 1, "t", S_IFREG | 0644, "file t\n", 1 },
  { 8, 1, "t", S_IFDIR | 0755, "", 0 },
};
#define NNODES (sizeof nodes / sizeof nodes[0])
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fuse_session *se;

static struct node *by_ino (fuse_ino_t ino) {
  for (size_t i = 0; i < NNODES; i++) if (nodes[i].ino == ino && nodes[i].present) return &nodes[i];
  return NULL;
}
static struct node *by_name (fuse_ino_t parent, const char *name) {
  for (size_t i = 1; i < NNODES; i++) if (nodes[i].parent == parent && nodes[i].present && !strcmp(nodes[i].name, name)) return &nodes[i];
  return NULL;
}
static void fill (struct node *n, struct stat *st) {
  memset(st, 0, sizeof *st);
  st->st_ino = n->ino; st->st_mode = n->mode; st->st_nlink = S_ISDIR(n->mode) ? 2 : 1;
  st->st_size = S_ISDIR(n->mode) ? 0 : (off_t)strlen(n->content);
  st->st_mtime = 1700000000;
}
static void op_lookup (fuse_req_t req, fuse_ino_t parent, const char *name) {
  pthread_mutex_lock(&lock);
  struct node *n = by_name(parent, name);
  if (!n) { pthread_mutex_unlock(&lock); fuse_reply_err(req, ENOENT); return; }
  struct fuse_entry_param e; memset(&e, 0, sizeof e);
  e.ino = n->ino; e.attr_timeout = 60; e.entry_timeout = 60; fill(n, &e.attr);
  pthread_mutex_unlock(&lock);
  fuse_reply_entry(req, &e);
}
static void op_getattr (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)fi;
  pthread_mutex_lock(&lock);
  struct node *n = by_ino(ino);
  struct stat st;
  if (n) fill(n, &st);
  pthread_mutex_unlock(&lock);
  if (!n) fuse_reply_err(req, ENOENT); else fuse_reply_attr(req, &st, 60);
}
static void op_readdir (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  char buf[4096]; size_t used = 0; off_t i = 0;
  pthread_mutex_lock(&lock);
  struct stat st; memset(&st, 0, sizeof st);
  const char *dots[] = { ".", ".." };
  for (int k = 0; k < 2; k++, i++) {
    if (i < off) continue;
    st.st_ino = ino; st.st_mode = S_IFDIR;
    size_t l = fuse_add_direntry(req, buf + used, sizeof buf - used, dots[k], &st, i + 1);
    if (used + l > size || used + l > sizeof buf) goto done;
    used += l;
  }
  for (size_t k = 1; k < NNODES; k++) {
    if (nodes[k].parent != ino || !nodes[k].present) continue;
    if (i++ < off) continue;
    fill(&nodes[k], &st);
    size_t l = fuse_add_direntry(req, buf + used, sizeof buf - used, nodes[k].name, &st, i);
    if (used + l > size || used + l > sizeof buf) break;
    used += l;
  }
done:
  pthread_mutex_unlock(&lock);
  fuse_reply_buf(req, buf, used);
}
static void op_open (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  pthread_mutex_lock(&lock);
  struct node *n = by_ino(ino);
  pthread_mutex_unlock(&lock);
  if (!n) { fuse_reply_err(req, ENOENT); return; }
  fi->keep_cache = 1; /* pages stay unless invalidated: what a notification must drop */
  fuse_reply_open(req, fi);
}
static void op_read (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)fi;
  char tmp[256]; size_t len = 0;
  pthread_mutex_lock(&lock);
  struct node *n = by_ino(ino);
  if (n) { len = strlen(n->content); memcpy(tmp, n->content, len); }
  pthread_mutex_unlock(&lock);
  if (!n) { fuse_reply_err(req, ENOENT); return; }
  if ((size_t)off >= len) { fuse_reply_buf(req, NULL, 0); return; }
  fuse_reply_buf(req, tmp + off, len - off < size ? len - off : size);
}
/* a write is accepted and dropped: the probe's helper opens for writing and closes without writing */
static void op_write (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)ino; (void)buf; (void)off; (void)fi; fuse_reply_write(req, size);
}
static void op_setattr (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
  (void)attr; (void)to_set; op_getattr(req, ino, fi);
}

static const struct fuse_lowlevel_ops ops = {
  .lookup = op_lookup, .getattr = op_getattr, .readdir = op_readdir,
  .open = op_open, .read = op_read, .write = op_write, .setattr = op_setattr,
};

static void *loop (void *arg) { (void)arg; fuse_session_loop(se); return NULL; }

int main (int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]); return 2; }
  char *fargv[] = { argv[0], "-o", "fsname=notify-probe,subtype=probe", NULL };
  struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
  se = fuse_session_new(&args, &ops, sizeof ops, NULL);
  if (!se || fuse_session_mount(se, argv[1]) != 0) { fprintf(stderr, "mount failed\n"); return 1; }
  pthread_t th; pthread_create(&th, NULL, loop, NULL);
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("ready\n");
  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    char cmd[16] = "", a[128] = "", b[128] = "", c[128] = "";
    sscanf(line, "%15s %127s %127s %127s", cmd, a, b, c);
    int rc = 0;
    if (!strcmp(cmd, "hide") || !strcmp(cmd, "unhide") || !strcmp(cmd, "set")) {
      pthread_mutex_lock(&lock);
      for (size_t k = 1; k < NNODES; k++) if (!strcmp(nodes[k].name, a) && nodes[k].ino != 8) {
        if (!strcmp(cmd, "set")) snprintf(nodes[k].content, sizeof nodes[k].content, "%s\n", b);
        else nodes[k].present = !strcmp(cmd, "unhide");
      }
      pthread_mutex_unlock(&lock);
    } else if (!strcmp(cmd, "retype")) {
      pthread_mutex_lock(&lock); nodes[6].present = 0; nodes[7].present = 1; pthread_mutex_unlock(&lock);
    } else if (!strcmp(cmd, "ie")) rc = fuse_lowlevel_notify_inval_entry(se, strtoull(a, 0, 10), b, strlen(b));
    else if (!strcmp(cmd, "ii")) rc = fuse_lowlevel_notify_inval_inode(se, strtoull(a, 0, 10), 0, 0);
    else if (!strcmp(cmd, "del")) rc = fuse_lowlevel_notify_delete(se, strtoull(a, 0, 10), strtoull(b, 0, 10), c, strlen(c));
    else if (!strcmp(cmd, "store")) {
      struct fuse_bufvec bv = FUSE_BUFVEC_INIT(strlen(b));
      bv.buf[0].mem = b;
      rc = fuse_lowlevel_notify_store(se, strtoull(a, 0, 10), 0, &bv, 0);
    } else if (!strcmp(cmd, "quit")) break;
    else rc = -EINVAL;
    printf("ok %d\n", rc);
  }
  fuse_session_unmount(se);
  fuse_session_exit(se);
  return 0;
}

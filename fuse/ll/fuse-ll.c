/*
 * rewindfs's own N-API binding on libfuse 3's LOW-LEVEL API (3.14).
 *
 * Thread model (see README.md in this folder):
 *   - the JS thread reads requests from /dev/fuse itself (a uv_poll_t on
 *     the non-blocking fd; fuse_session_receive_buf + libfuse's dispatch,
 *     at most READ_BATCH per wake-up). Our callbacks copy what the request
 *     carries (names, write data: libfuse's buffer is reused for the next
 *     request) into one malloc'd item and queue it; the queue is drained
 *     right after the read. FORGET is answered at once (it has no reply)
 *     and only its counts travel to JS. (A reader thread of its own, as
 *     before, cost one more thread wake-up per request.)
 *   - the JS thread calls the handler of each item and answers (now or
 *     later) by calling a reply function, which calls fuse_reply_* directly
 *     (a writev on /dev/fuse; libfuse's reply path is thread safe). Pending
 *     requests live in a slot table touched only by the JS thread; an id
 *     names slot + generation, so a second answer finds no pending request.
 *   - the NOTIFY thread (one pthread) runs batches of kernel notifications
 *     (inval_inode, inval_entry, delete, store, expire). They must never run
 *     on the JS thread: the kernel may make them wait for a request that is
 *     itself waiting for JS. Completion comes back through the same uv_async.
 *
 * Node ids: see nodeid.h (the one definition of the ino/incarnation split).
 */
#define FUSE_USE_VERSION 314
#define _GNU_SOURCE

#include <fuse_lowlevel.h>
#include <node_api.h>
#include <uv.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "nodeid.h"

/* Kernel opcodes as the kernel ABI defines them (linux/fuse.h); the request
 * counters are indexed by them. Names are the kernel's, lower-cased. */
#define LL_KOP_MAX 64
static const char *const kop_names[LL_KOP_MAX] = {
  [1] = "lookup", [2] = "forget", [3] = "getattr", [4] = "setattr", [5] = "readlink",
  [6] = "symlink", [8] = "mknod", [9] = "mkdir", [10] = "unlink", [11] = "rmdir",
  [12] = "rename", [13] = "link", [14] = "open", [15] = "read", [16] = "write",
  [17] = "statfs", [18] = "release", [20] = "fsync", [21] = "setxattr", [22] = "getxattr",
  [23] = "listxattr", [24] = "removexattr", [25] = "flush", [26] = "init", [27] = "opendir",
  [28] = "readdir", [29] = "releasedir", [30] = "fsyncdir", [31] = "getlk", [32] = "setlk",
  [33] = "setlkw", [34] = "access", [35] = "create", [36] = "interrupt", [37] = "bmap",
  [38] = "destroy", [39] = "ioctl", [40] = "poll", [41] = "notify_reply", [42] = "batch_forget",
  [43] = "fallocate", [44] = "readdirplus", [45] = "rename2", [46] = "lseek",
  [47] = "copy_file_range", [48] = "setupmapping", [49] = "removemapping", [50] = "syncfs",
  [51] = "tmpfile", [52] = "statx",
};

/* Our operations (the JS handler table is indexed by these; OP_NAMES is
 * exported so the TS wrapper maps names to numbers from here). */
enum {
  OP_LOOKUP, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_READLINK, OP_MKNOD, OP_MKDIR,
  OP_UNLINK, OP_RMDIR, OP_SYMLINK, OP_RENAME, OP_LINK, OP_OPEN, OP_READ, OP_WRITE,
  OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR, OP_READDIR, OP_RELEASEDIR, OP_FSYNCDIR,
  OP_STATFS, OP_SETXATTR, OP_GETXATTR, OP_LISTXATTR, OP_REMOVEXATTR, OP_ACCESS,
  OP_CREATE, OP_FALLOCATE, OP_READDIRPLUS, OP_LSEEK, OP_COPY_FILE_RANGE, OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
  "lookup", "forget", "getattr", "setattr", "readlink", "mknod", "mkdir",
  "unlink", "rmdir", "symlink", "rename", "link", "open", "read", "write",
  "flush", "release", "fsync", "opendir", "readdir", "releasedir", "fsyncdir",
  "statfs", "setxattr", "getxattr", "listxattr", "removexattr", "access",
  "create", "fallocate", "readdirplus", "lseek", "copyFileRange"
};

/* Events delivered to the JS `events` callback. */
enum { EV_INIT = 0, EV_NOTIFY = 1, EV_GONE = 2, EV_EXIT = 3 };

/* Layout of the shared argument scratch (Float64Array) written before each
 * dispatch; documented in session.ts (ARG_*). */
#define A_UID 0
#define A_GID 1
#define A_PID 2
#define A_UMASK 3
#define A_INO 4
#define A_INC 5
#define A_INO2 6
#define A_INC2 7
#define A_N 8
#define A_LEN 16
#define NNUM (A_LEN - A_N)
/* Answer scratch (Float64Array), attributes or statfs, written by JS before a reply. */
#define R_LEN 16
enum { R_MODE, R_NLINK, R_UID, R_GID, R_RDEV, R_SIZE, R_BLOCKS, R_BLKSIZE, R_INO };
/* entry answers: 1 when the entry's inode has no security.capability now (capability cache, below) */
#define R_NOCAP 12

/* ---------------------------------------------------------------- items */

typedef struct ll_item {
  struct ll_item *next;
  fuse_req_t req;           /* NULL for forget and for event items */
  uint32_t op;
  uint32_t ctx[4];          /* uid, gid, pid, umask */
  uint64_t ino, ino2;       /* node ids */
  double n[NNUM];
  int64_t t[3];             /* setattr times, ns since the epoch */
  size_t len1, len2, len3;  /* bytes of name, name2, data, inline in buf in that order */
  int js_owns;              /* data became an external Buffer: freed by its finalizer */
  char buf[];
} ll_item_t;

/* ---------------------------------------------------------------- notify jobs */

typedef struct {
  int32_t type;             /* 0 inval_entry, 1 inval_inode, 2 delete, 3 store, 4 expire_entry; -1 malformed */
  uint64_t a, b;            /* node ids */
  int64_t off, len;
  char *name;               /* malloc'd, namelen bytes + NUL */
  size_t namelen;
  char *data;               /* store: malloc'd copy, len bytes */
} ll_nitem_t;

typedef struct ll_job {
  struct ll_job *next;
  double id;
  uint32_t n;
  ll_nitem_t *items;
  int32_t *results;
  double ms;
} ll_job_t;

/* ---------------------------------------------------------------- pending requests */

typedef struct {
  fuse_req_t req;           /* NULL: free */
  uint32_t gen;
  uint32_t op;
  size_t size;              /* read/readdir/xattr: the size the kernel asked for */
  char *dbuf;               /* readdir reply being built */
  size_t dused;
  uint32_t next_free;
  uint64_t ino;             /* the request's inode number (low bits of its node id) */
  uint32_t xc;              /* s->xchange when the request reached JS (capability cache) */
  uint8_t cap;              /* getxattr of security.capability */
  uint8_t xmut;             /* setxattr/removexattr: counted in s->xinflight until answered */
} ll_slot_t;

#define SLOT_BITS 22
#define SLOT_NONE UINT32_MAX

enum { ST_MOUNTED = 1, ST_STOPPING = 2, ST_DONE = 3 };

typedef struct {
  napi_env env;
  struct fuse_session *se;
  char *mountpoint;
  int state;
  int fd;

  /* reading /dev/fuse: a uv_poll_t on the JS thread's loop (no thread of its own) */
  uv_poll_t poll;
  int poll_inited;
  struct fuse_buf rbuf;     /* libfuse's receive buffer, reused */
  int stop;                 /* atomic: no more reading */
  int exiting;              /* atomic: new requests are answered EIO */
  int loop_done;            /* atomic: the kernel ended the connection (or reading failed) */

  /* request queue (libfuse's dispatch -> JS handlers; also notify completions) */
  pthread_mutex_t q_mut;
  ll_item_t *q_head, *q_tail;
  uv_async_t async;
  int async_inited;

  /* JS side */
  napi_ref dispatch_ref, events_ref, self_ref;
  napi_ref args_ref, times_ref, ans_ref, ans_times_ref;
  double *args; int64_t *times; double *ans; int64_t *ans_times;
  napi_async_context actx;
  int implemented[OP_COUNT];
  int no_security_capability;

  /* capability cache (JS thread only): inode numbers known to have no
   * security.capability; see cap_* below */
  int cap_cache;            /* enabled by the mount's config */
  uint64_t *cap_keys;       /* open addressing, linear probing; 0 = empty */
  uint32_t cap_mask, cap_count;
  uint32_t xchange;         /* bumped by every xattr change that may reach the filesystem */
  uint32_t xinflight;       /* setxattr/removexattr requests handed to JS and not answered */
  uint64_t cap_answers;     /* getxattr("security.capability") answered here */

  /* borrowed writes (mount config): the write handler keeps no reference to
   * its data, so a write item is freed (here: cached) as soon as the handler
   * returns, and the next write reuses warm memory (see write_item) */
  int borrow_writes;
  ll_item_t *wcache[4];
  uint32_t wcache_n;

  /* config applied in init */
  uint32_t want_on, want_off;
  uint32_t max_write, max_readahead, max_background, congestion_threshold;
  uint32_t init_capable, init_want, init_proto_minor, init_max_write, init_max_readahead;
  int init_seen;            /* atomic */
  int init_delivered;

  /* slots */
  ll_slot_t *slots;
  uint32_t nslots, free_head, pending;

  /* notify thread */
  pthread_t nthread;
  int n_started;
  pthread_mutex_t n_mut;
  pthread_cond_t n_cond;
  ll_job_t *n_head, *n_tail, *n_done_head, *n_done_tail;
  int n_stop;
  int n_exited;             /* guarded by n_mut */

  /* counters */
  uint64_t kops[LL_KOP_MAX + 1];    /* by kernel opcode; [LL_KOP_MAX] = other */
  uint64_t bad_answers, failed_replies, late_replies, eio_teardown;
} ll_session_t;

static inline void atomic_set (int *p, int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static inline int atomic_get (int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

static void ll_log (const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("rewindfs fuse-ll: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* libfuse's own messages: kept in a buffer while fuse_session_new/mount run
 * (so a refused option becomes part of the thrown Error), stderr otherwise. */
static char *capture_buf = NULL;
static size_t capture_len = 0;
static pthread_mutex_t capture_mut = PTHREAD_MUTEX_INITIALIZER;
static void ll_fuse_log (enum fuse_log_level level, const char *fmt, va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  pthread_mutex_lock(&capture_mut);
  if (capture_buf != NULL) {
    size_t n = strlen(line);
    if (capture_len + n < 4000) { memcpy(capture_buf + capture_len, line, n + 1); capture_len += n; }
    pthread_mutex_unlock(&capture_mut);
    return;
  }
  pthread_mutex_unlock(&capture_mut);
  if (level <= FUSE_LOG_NOTICE || level == FUSE_LOG_DEBUG) fprintf(stderr, "libfuse: %s", line);
}

/* ================================================================ capability cache
 *
 * The kernel asks getxattr("security.capability") before EVERY write to a
 * regular file (file_remove_privs -> cap_inode_need_killpriv; a FUSE mount
 * has SB_NOSEC only with handle_killpriv_v2, so no answer is remembered):
 * 25,000 requests in one npm ci, each a round trip through JS answered
 * ENODATA. With the cache on (mount
 * config), the binding answers ENODATA itself for an inode it KNOWS has no
 * security.capability. The filesystem stays the one source of truth; the
 * binding only remembers answers it passed on:
 *   - learned from an entry answer (lookup, create, mknod, mkdir, symlink,
 *     link, readdirplus) carrying R_NOCAP = 1 (JS asked the filesystem),
 *     and from the filesystem's own ENODATA answer to that getxattr;
 *   - only when no xattr change can have happened while the request was in
 *     JS (xchange unchanged since it was handed over, no setxattr or
 *     removexattr in flight);
 *   - forgotten for an inode when a setxattr or removexattr of it is handed
 *     to JS, and all at once by every notify batch (a restore changes inodes
 *     behind the kernel and sends one right after its swap, before any
 *     request is read).
 * Keyed by inode number (the node id's low bits): every incarnation of an
 * inode shares the entry. JS thread only (requests are read there too).
 */
#define CAP_MIN_SLOTS 4096u
/* more inodes than this: start over (the table stays under 32 MiB) */
#define CAP_MAX_COUNT (1u << 20)

static uint32_t cap_hash (uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; /* murmur3's fmix64 */
  return (uint32_t) k;
}

static int cap_known (ll_session_t *s, uint64_t ino) {
  if (s->cap_keys == NULL || ino == 0) return 0;
  for (uint32_t i = cap_hash(ino) & s->cap_mask;; i = (i + 1) & s->cap_mask) {
    uint64_t k = s->cap_keys[i];
    if (k == ino) return 1;
    if (k == 0) return 0;
  }
}

static void cap_clear (ll_session_t *s) {
  free(s->cap_keys);
  s->cap_keys = NULL;
  s->cap_mask = 0;
  s->cap_count = 0;
}

static void cap_put (uint64_t *keys, uint32_t mask, uint64_t ino) {
  uint32_t i = cap_hash(ino) & mask;
  while (keys[i] != 0 && keys[i] != ino) i = (i + 1) & mask;
  keys[i] = ino;
}

static void cap_add (ll_session_t *s, uint64_t ino) {
  if (ino == 0 || cap_known(s, ino)) return;
  if (s->cap_count >= CAP_MAX_COUNT) cap_clear(s);
  uint32_t slots = s->cap_keys ? s->cap_mask + 1 : 0;
  if ((s->cap_count + 1) * 2 > slots) { /* load at most 1/2 */
    uint32_t n = slots ? slots * 2 : CAP_MIN_SLOTS;
    uint64_t *nk = calloc(n, sizeof(uint64_t));
    if (nk == NULL) return; /* not remembered: JS answers */
    for (uint32_t i = 0; i < slots; i++) if (s->cap_keys[i] != 0) cap_put(nk, n - 1, s->cap_keys[i]);
    free(s->cap_keys);
    s->cap_keys = nk;
    s->cap_mask = n - 1;
  }
  cap_put(s->cap_keys, s->cap_mask, ino);
  s->cap_count++;
}

/* Linear probing's deletion by backward shift (Knuth, TAOCP vol. 3, 6.4 Algorithm R). */
static void cap_remove (ll_session_t *s, uint64_t ino) {
  if (s->cap_keys == NULL || ino == 0) return;
  uint32_t m = s->cap_mask, i = cap_hash(ino) & m;
  while (s->cap_keys[i] != ino) { if (s->cap_keys[i] == 0) return; i = (i + 1) & m; }
  for (uint32_t j = i;;) {
    j = (j + 1) & m;
    uint64_t k = s->cap_keys[j];
    if (k == 0) break;
    uint32_t h = cap_hash(k) & m;
    if (((j - h) & m) >= ((j - i) & m)) { s->cap_keys[i] = k; i = j; }
  }
  s->cap_keys[i] = 0;
  s->cap_count--;
}

/* Any xattr of any inode may have changed (a notify batch): forget everything. */
static void cap_forget_all (ll_session_t *s) {
  cap_clear(s);
  s->xchange++;
}

/* The filesystem answered request `sl` saying inode `ino` has no
 * security.capability: remembered unless an xattr change may have crossed
 * the request. */
static void cap_learn (ll_session_t *s, const ll_slot_t *sl, uint64_t ino) {
  if (s->cap_cache && sl->xc == s->xchange && s->xinflight == 0) cap_add(s, ino);
}

/* ================================================================ request side (called by libfuse's dispatch) */

static void item_init (ll_item_t *it, fuse_req_t req, uint32_t op, uint64_t ino) {
  memset(it, 0, sizeof(ll_item_t));
  it->req = req;
  it->op = op;
  it->ino = ino;
  if (req != NULL) {
    const struct fuse_ctx *c = fuse_req_ctx(req);
    it->ctx[0] = c->uid; it->ctx[1] = c->gid; it->ctx[2] = (uint32_t) c->pid; it->ctx[3] = c->umask;
  }
}

static ll_item_t *item_new (fuse_req_t req, uint32_t op, uint64_t ino, size_t extra) {
  ll_item_t *it = malloc(sizeof(ll_item_t) + extra + 1);
  if (it == NULL) return NULL;
  item_init(it, req, op, ino);
  return it;
}

/* Bytes of a cached write item: the largest WRITE libfuse 3.14 takes (max_write <= 1 MiB: 256 pages) and its item. */
#define WITEM_BYTES (sizeof(ll_item_t) + (1u << 20) + 4096 + 1)

/*
 * A write item. With borrowed writes, items up to WITEM_BYTES come from a
 * cache of a few such blocks (filled by item_done): a sequential write of
 * 1 MiB requests otherwise took a fresh malloc per request, i.e. a fresh
 * mmap whose 256 pages each faulted in during the copy, and kept it until
 * the garbage collector ran the Buffer's finalizer. JS thread only (requests
 * are read there).
 */
static ll_item_t *write_item (ll_session_t *s, fuse_req_t req, uint64_t ino, size_t size) {
  if (!s->borrow_writes || sizeof(ll_item_t) + size + 1 > WITEM_BYTES) return item_new(req, OP_WRITE, ino, size);
  ll_item_t *it = s->wcache_n > 0 ? s->wcache[--s->wcache_n] : malloc(WITEM_BYTES);
  if (it == NULL) return NULL;
  item_init(it, req, OP_WRITE, ino);
  return it;
}

/* An item JS no longer sees: a borrowed write's block goes back to the cache (room permitting), anything else is freed. */
static void item_done (ll_session_t *s, ll_item_t *it, int cached_size) {
  if (cached_size && s->wcache_n < sizeof s->wcache / sizeof s->wcache[0]) { s->wcache[s->wcache_n++] = it; return; }
  free(it);
}

static void enqueue (ll_session_t *s, ll_item_t *it) {
  pthread_mutex_lock(&s->q_mut);
  if (s->q_tail) s->q_tail->next = it; else s->q_head = it;
  s->q_tail = it;
  pthread_mutex_unlock(&s->q_mut);
  uv_async_send(&s->async);
}

/* Common entry for requests that go to JS: the session, EIO while tearing down or out of memory. */
#define LL_BEGIN(op_, ino_, extra_) \
  ll_session_t *s = fuse_req_userdata(req); \
  if (atomic_get(&s->exiting)) { fuse_reply_err(req, EIO); __atomic_fetch_add(&s->eio_teardown, 1, __ATOMIC_RELAXED); return; } \
  ll_item_t *it = item_new(req, op_, ino_, extra_); \
  if (it == NULL) { fuse_reply_err(req, ENOMEM); return; }

static void put_name (ll_item_t *it, const char *name) {
  size_t n = strlen(name);
  memcpy(it->buf, name, n);
  it->len1 = n;
}

static void ll_lookup (fuse_req_t req, fuse_ino_t parent, const char *name) {
  LL_BEGIN(OP_LOOKUP, parent, strlen(name))
  put_name(it, name);
  enqueue(s, it);
}

static void queue_forgets (ll_session_t *s, size_t count, const struct fuse_forget_data *f) {
  if (!s->implemented[OP_FORGET] || atomic_get(&s->exiting)) return;
  /* +8: room to align the doubles */
  ll_item_t *it = item_new(NULL, OP_FORGET, 0, count * 3 * sizeof(double) + 8);
  if (it == NULL) { ll_log("out of memory: %zu forgets lost", count); return; }
  double *d;
  d = (double *) (void *) (((uintptr_t) it->buf + 7) & ~(uintptr_t) 7);
  for (size_t i = 0; i < count; i++) {
    d[3 * i] = (double) ll_ino_of(f[i].ino);
    d[3 * i + 1] = (double) ll_incarnation_of(f[i].ino);
    d[3 * i + 2] = (double) f[i].nlookup;
  }
  it->n[0] = (double) count;
  it->len3 = count * 3 * sizeof(double);
  it->n[1] = (double) ((char *) d - it->buf); /* offset of the doubles in buf */
  enqueue(s, it);
}

static void ll_forget (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  ll_session_t *s = fuse_req_userdata(req);
  struct fuse_forget_data f = { .ino = ino, .nlookup = nlookup };
  fuse_reply_none(req);
  queue_forgets(s, 1, &f);
}

static void ll_forget_multi (fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
  ll_session_t *s = fuse_req_userdata(req);
  queue_forgets(s, count, forgets);
  fuse_reply_none(req);
}

static double fh_of (struct fuse_file_info *fi) { return fi ? (double) fi->fh : -1; }

static void ll_getattr (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  LL_BEGIN(OP_GETATTR, ino, 0)
  it->n[0] = fh_of(fi);
  enqueue(s, it);
}

static int64_t ts_ns (const struct timespec *ts) { return (int64_t) ts->tv_sec * 1000000000LL + ts->tv_nsec; }

static void ll_setattr (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
  LL_BEGIN(OP_SETATTR, ino, 0)
  it->n[0] = to_set;
  it->n[1] = attr->st_mode;
  it->n[2] = attr->st_uid;
  it->n[3] = attr->st_gid;
  it->n[4] = (double) attr->st_size;
  it->n[5] = fh_of(fi);
  it->t[0] = ts_ns(&attr->st_atim);
  it->t[1] = ts_ns(&attr->st_mtim);
  it->t[2] = ts_ns(&attr->st_ctim);
  enqueue(s, it);
}

static void ll_readlink (fuse_req_t req, fuse_ino_t ino) {
  LL_BEGIN(OP_READLINK, ino, 0)
  enqueue(s, it);
}

static void ll_mknod (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  LL_BEGIN(OP_MKNOD, parent, strlen(name))
  put_name(it, name);
  it->n[0] = mode;
  it->n[1] = (double) rdev;
  enqueue(s, it);
}

static void ll_mkdir (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  LL_BEGIN(OP_MKDIR, parent, strlen(name))
  put_name(it, name);
  it->n[0] = mode;
  enqueue(s, it);
}

static void ll_unlink (fuse_req_t req, fuse_ino_t parent, const char *name) {
  LL_BEGIN(OP_UNLINK, parent, strlen(name))
  put_name(it, name);
  enqueue(s, it);
}

static void ll_rmdir (fuse_req_t req, fuse_ino_t parent, const char *name) {
  LL_BEGIN(OP_RMDIR, parent, strlen(name))
  put_name(it, name);
  enqueue(s, it);
}

static void ll_symlink (fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  size_t n = strlen(name), l = strlen(link);
  LL_BEGIN(OP_SYMLINK, parent, n + l)
  memcpy(it->buf, name, n); it->len1 = n;
  memcpy(it->buf + n, link, l); it->len2 = l;
  enqueue(s, it);
}

static void ll_rename (fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname, unsigned int flags) {
  size_t n = strlen(name), m = strlen(newname);
  LL_BEGIN(OP_RENAME, parent, n + m)
  memcpy(it->buf, name, n); it->len1 = n;
  memcpy(it->buf + n, newname, m); it->len2 = m;
  it->ino2 = newparent;
  it->n[0] = flags;
  enqueue(s, it);
}

static void ll_link (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  LL_BEGIN(OP_LINK, ino, strlen(newname))
  put_name(it, newname);
  it->ino2 = newparent;
  enqueue(s, it);
}

static void ll_open (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  LL_BEGIN(OP_OPEN, ino, 0)
  it->n[0] = fi->flags;
  enqueue(s, it);
}

static void ll_read (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  LL_BEGIN(OP_READ, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = (double) size;
  it->n[2] = (double) off;
  it->n[3] = fi->flags;
  enqueue(s, it);
}

static void ll_write (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  ll_session_t *s = fuse_req_userdata(req);
  if (atomic_get(&s->exiting)) { fuse_reply_err(req, EIO); __atomic_fetch_add(&s->eio_teardown, 1, __ATOMIC_RELAXED); return; }
  ll_item_t *it = write_item(s, req, ino, size);
  if (it == NULL) { fuse_reply_err(req, ENOMEM); return; }
  memcpy(it->buf, buf, size);
  it->len3 = size;
  it->n[0] = (double) fi->fh;
  it->n[1] = (double) off;
  it->n[2] = fi->flags;
  it->n[3] = fi->writepage;
  enqueue(s, it);
}

static void ll_flush (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  LL_BEGIN(OP_FLUSH, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = (double) fi->lock_owner;
  enqueue(s, it);
}

static void ll_release (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  LL_BEGIN(OP_RELEASE, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = fi->flags;
  enqueue(s, it);
}

static void ll_fsync (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  LL_BEGIN(OP_FSYNC, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = datasync;
  enqueue(s, it);
}

static void ll_opendir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  LL_BEGIN(OP_OPENDIR, ino, 0)
  it->n[0] = fi->flags;
  enqueue(s, it);
}

static void ll_readdir (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  LL_BEGIN(OP_READDIR, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = (double) size;
  it->n[2] = (double) off;
  enqueue(s, it);
}

static void ll_readdirplus (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  LL_BEGIN(OP_READDIRPLUS, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = (double) size;
  it->n[2] = (double) off;
  enqueue(s, it);
}

static void ll_releasedir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  LL_BEGIN(OP_RELEASEDIR, ino, 0)
  it->n[0] = (double) fi->fh;
  enqueue(s, it);
}

static void ll_fsyncdir (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  LL_BEGIN(OP_FSYNCDIR, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = datasync;
  enqueue(s, it);
}

static void ll_statfs (fuse_req_t req, fuse_ino_t ino) {
  LL_BEGIN(OP_STATFS, ino, 0)
  enqueue(s, it);
}

static int is_security_capability (const char *name) { return strcmp(name, "security.capability") == 0; }

static void ll_setxattr (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags) {
  ll_session_t *s0 = fuse_req_userdata(req);
  if (s0->no_security_capability && is_security_capability(name)) { fuse_reply_err(req, EOPNOTSUPP); return; }
  size_t n = strlen(name);
  LL_BEGIN(OP_SETXATTR, ino, n + size)
  memcpy(it->buf, name, n); it->len1 = n;
  memcpy(it->buf + n, value, size); it->len3 = size;
  it->n[0] = flags;
  enqueue(s, it);
}

static void ll_getxattr (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
  ll_session_t *s0 = fuse_req_userdata(req);
  /* the kernel asks for security.capability before every write (file_remove_privs) */
  if (s0->no_security_capability && is_security_capability(name)) { fuse_reply_err(req, ENODATA); return; }
  /* known to have none (capability cache above) */
  if (s0->cap_cache && !atomic_get(&s0->exiting) && is_security_capability(name) && cap_known(s0, ll_ino_of(ino))) {
    s0->cap_answers++;
    fuse_reply_err(req, ENODATA);
    return;
  }
  LL_BEGIN(OP_GETXATTR, ino, strlen(name))
  put_name(it, name);
  it->n[0] = (double) size;
  enqueue(s, it);
}

static void ll_listxattr (fuse_req_t req, fuse_ino_t ino, size_t size) {
  LL_BEGIN(OP_LISTXATTR, ino, 0)
  it->n[0] = (double) size;
  enqueue(s, it);
}

static void ll_removexattr (fuse_req_t req, fuse_ino_t ino, const char *name) {
  LL_BEGIN(OP_REMOVEXATTR, ino, strlen(name))
  put_name(it, name);
  enqueue(s, it);
}

static void ll_access (fuse_req_t req, fuse_ino_t ino, int mask) {
  LL_BEGIN(OP_ACCESS, ino, 0)
  it->n[0] = mask;
  enqueue(s, it);
}

static void ll_create (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
  LL_BEGIN(OP_CREATE, parent, strlen(name))
  put_name(it, name);
  it->n[0] = mode;
  it->n[1] = fi->flags;
  enqueue(s, it);
}

static void ll_fallocate (fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, struct fuse_file_info *fi) {
  LL_BEGIN(OP_FALLOCATE, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = mode;
  it->n[2] = (double) offset;
  it->n[3] = (double) length;
  enqueue(s, it);
}

static void ll_lseek (fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi) {
  LL_BEGIN(OP_LSEEK, ino, 0)
  it->n[0] = (double) fi->fh;
  it->n[1] = (double) off;
  it->n[2] = whence;
  enqueue(s, it);
}

static void ll_copy_file_range (fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
                                fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len, int flags) {
  LL_BEGIN(OP_COPY_FILE_RANGE, ino_in, 0)
  it->ino2 = ino_out;
  it->n[0] = (double) fi_in->fh;
  it->n[1] = (double) off_in;
  it->n[2] = (double) fi_out->fh;
  it->n[3] = (double) off_out;
  it->n[4] = (double) len;
  it->n[5] = flags;
  enqueue(s, it);
}

static void ll_init (void *userdata, struct fuse_conn_info *conn) {
  ll_session_t *s = userdata;
  conn->want |= s->want_on & conn->capable;
  conn->want &= ~s->want_off;
  if (s->max_write && s->max_write < conn->max_write) conn->max_write = s->max_write;
  if (s->max_readahead) conn->max_readahead = s->max_readahead;
  if (s->max_background) conn->max_background = s->max_background;
  if (s->congestion_threshold) conn->congestion_threshold = s->congestion_threshold;
  conn->time_gran = 1;
  s->init_capable = conn->capable;
  s->init_want = conn->want;
  s->init_proto_minor = conn->proto_minor;
  s->init_max_write = conn->max_write;
  s->init_max_readahead = conn->max_readahead;
  atomic_set(&s->init_seen, 1);
  uv_async_send(&s->async);
}

/* loop_main is gone: requests are read on the JS thread (on_readable, below). */

/* ================================================================ notify thread */

static double now_ms (void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void run_job (ll_session_t *s, ll_job_t *job) {
  for (uint32_t i = 0; i < job->n; i++) {
    ll_nitem_t *it = &job->items[i];
    int r;
    if (atomic_get(&s->loop_done) || atomic_get(&s->stop)) { job->results[i] = -ENOTCONN; continue; }
    switch (it->type) {
      case 0: r = fuse_lowlevel_notify_inval_entry(s->se, it->a, it->name, it->namelen); break;
      case 1: r = fuse_lowlevel_notify_inval_inode(s->se, it->a, it->off, it->len); break;
      case 2: r = fuse_lowlevel_notify_delete(s->se, it->a, it->b, it->name, it->namelen); break;
      case 3: {
        struct fuse_bufvec bv = FUSE_BUFVEC_INIT((size_t) it->len);
        bv.buf[0].mem = it->data;
        r = fuse_lowlevel_notify_store(s->se, it->a, it->off, &bv, 0);
        break;
      }
      case 4: r = fuse_lowlevel_notify_expire_entry(s->se, it->a, it->name, it->namelen, FUSE_LL_EXPIRE_ONLY); break;
      default: r = -EINVAL;
    }
    job->results[i] = r;
  }
}

static void free_job (ll_job_t *job) {
  for (uint32_t i = 0; i < job->n; i++) { free(job->items[i].name); free(job->items[i].data); }
  free(job->items);
  free(job->results);
  free(job);
}

static void *notify_main (void *arg) {
  ll_session_t *s = arg;
  pthread_mutex_lock(&s->n_mut);
  for (;;) {
    while (s->n_head == NULL && !s->n_stop) pthread_cond_wait(&s->n_cond, &s->n_mut);
    ll_job_t *job = s->n_head;
    if (job == NULL) break; /* stopped, queue empty */
    s->n_head = job->next;
    if (s->n_head == NULL) s->n_tail = NULL;
    int cancelled = s->n_stop;
    pthread_mutex_unlock(&s->n_mut);
    double t0 = now_ms();
    if (cancelled) for (uint32_t i = 0; i < job->n; i++) job->results[i] = -ENOTCONN;
    else run_job(s, job);
    job->ms = now_ms() - t0;
    job->next = NULL;
    pthread_mutex_lock(&s->n_mut);
    if (s->n_done_tail) s->n_done_tail->next = job; else s->n_done_head = job;
    s->n_done_tail = job;
    pthread_mutex_unlock(&s->n_mut);
    uv_async_send(&s->async);
    pthread_mutex_lock(&s->n_mut);
  }
  s->n_exited = 1;
  pthread_mutex_unlock(&s->n_mut);
  uv_async_send(&s->async);
  return NULL;
}

/* ================================================================ JS thread: slots */

static double slot_alloc (ll_session_t *s, const ll_item_t *it, size_t size) {
  if (s->free_head == SLOT_NONE) {
    uint32_t n = s->nslots ? s->nslots * 2 : 256;
    if (n > (1u << SLOT_BITS)) n = 1u << SLOT_BITS;
    if (n == s->nslots) return -1;
    ll_slot_t *ns = realloc(s->slots, n * sizeof(ll_slot_t));
    if (ns == NULL) return -1;
    for (uint32_t i = s->nslots; i < n; i++) {
      ns[i].req = NULL; ns[i].gen = 1; ns[i].dbuf = NULL; ns[i].dused = 0;
      ns[i].next_free = i + 1 < n ? i + 1 : SLOT_NONE;
    }
    s->free_head = s->nslots;
    s->slots = ns;
    s->nslots = n;
  }
  uint32_t i = s->free_head;
  ll_slot_t *sl = &s->slots[i];
  s->free_head = sl->next_free;
  sl->req = it->req; sl->op = it->op; sl->size = size; sl->dbuf = NULL; sl->dused = 0;
  sl->ino = ll_ino_of(it->ino); sl->xc = s->xchange; sl->xmut = 0;
  sl->cap = it->op == OP_GETXATTR && it->len1 == 19 && memcmp(it->buf, "security.capability", 19) == 0;
  if (it->op == OP_SETXATTR || it->op == OP_REMOVEXATTR) {
    /* the inode's xattrs change in JS from now until the answer */
    cap_remove(s, sl->ino);
    s->xchange++;
    s->xinflight++;
    sl->xmut = 1;
  }
  s->pending++;
  return (double) sl->gen * (double) (1u << SLOT_BITS) + i;
}

static ll_slot_t *slot_get (ll_session_t *s, double id) {
  if (!(id >= 0) || id > 9007199254740991.0) return NULL;
  uint64_t v = (uint64_t) id;
  uint32_t i = v & ((1u << SLOT_BITS) - 1);
  uint32_t gen = (uint32_t) (v >> SLOT_BITS);
  if (i >= s->nslots) return NULL;
  ll_slot_t *sl = &s->slots[i];
  if (sl->req == NULL || sl->gen != gen) return NULL;
  return sl;
}

static void slot_free (ll_session_t *s, ll_slot_t *sl) {
  uint32_t i = (uint32_t) (sl - s->slots);
  if (sl->xmut) { sl->xmut = 0; s->xinflight--; s->xchange++; }
  free(sl->dbuf);
  sl->dbuf = NULL;
  sl->req = NULL;
  sl->gen = sl->gen + 1 == 0 ? 1 : sl->gen + 1;
  if (sl->gen >= (1u << 30)) sl->gen = 1; /* keeps ids below 2^52 */
  sl->next_free = s->free_head;
  s->free_head = i;
  s->pending--;
}

/* ================================================================ JS thread: dispatch */

static napi_value mk_buffer_copy (napi_env env, const char *p, size_t n) {
  napi_value v;
  void *data;
  napi_create_buffer_copy(env, n, n ? p : "", &data, &v);
  return v;
}

static void ext_free (napi_env env, void *data, void *hint) {
  ll_item_t *it = hint;
  int64_t dummy;
  napi_adjust_external_memory(env, -(int64_t) it->len3, &dummy);
  free(it);
}

static void log_exception (napi_env env, const char *what) {
  napi_value exc, str;
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) return;
  napi_get_and_clear_last_exception(env, &exc);
  char msg[512] = "?";
  size_t len;
  if (napi_coerce_to_string(env, exc, &str) == napi_ok) napi_get_value_string_utf8(env, str, msg, sizeof msg, &len);
  ll_log("%s threw: %s", what, msg);
}

static void dispatch_item (ll_session_t *s, napi_value dispatch, napi_value recv, ll_item_t *it) {
  napi_env env = s->env;
  double id = 0;
  if (it->req != NULL) {
    size_t size = 0;
    if (it->op == OP_READ || it->op == OP_READDIR || it->op == OP_READDIRPLUS) size = (size_t) it->n[1];
    else if (it->op == OP_GETXATTR || it->op == OP_LISTXATTR) size = (size_t) it->n[0];
    id = slot_alloc(s, it, size);
    if (id < 0) { fuse_reply_err(it->req, ENOMEM); free(it); return; }
  }
  double *A = s->args;
  A[A_UID] = it->ctx[0]; A[A_GID] = it->ctx[1]; A[A_PID] = it->ctx[2]; A[A_UMASK] = it->ctx[3];
  A[A_INO] = (double) ll_ino_of(it->ino); A[A_INC] = (double) ll_incarnation_of(it->ino);
  A[A_INO2] = (double) ll_ino_of(it->ino2); A[A_INC2] = (double) ll_incarnation_of(it->ino2);
  memcpy(A + A_N, it->n, sizeof it->n);
  s->times[0] = it->t[0]; s->times[1] = it->t[1]; s->times[2] = it->t[2];

  napi_value argv[5], undef;
  napi_get_undefined(env, &undef);
  napi_create_uint32(env, it->op, &argv[0]);
  napi_create_double(env, id, &argv[1]);
  argv[2] = it->len1 || it->op == OP_LOOKUP ? mk_buffer_copy(env, it->buf, it->len1) : undef;
  argv[3] = it->len2 ? mk_buffer_copy(env, it->buf + it->len1, it->len2) : undef;
  argv[4] = undef;
  int owned = 0, borrowed = 0;
  if (it->op == OP_FORGET) {
    void *ab;
    napi_create_arraybuffer(env, it->len3, &ab, &argv[4]);
    memcpy(ab, it->buf + (size_t) it->n[1], it->len3);
  } else if (it->op == OP_WRITE && s->borrow_writes && it->len3 > 0) {
    /* the handler keeps no reference (MountOptions.borrowWriteData): a view of the item, emptied after the call */
    if (napi_create_external_buffer(env, it->len3, it->buf + it->len1 + it->len2, NULL, NULL, &argv[4]) == napi_ok) borrowed = 1;
    else argv[4] = mk_buffer_copy(env, it->buf + it->len1 + it->len2, it->len3);
  } else if (it->op == OP_WRITE) {
    int64_t dummy;
    if (napi_create_external_buffer(env, it->len3, it->len3 ? it->buf + it->len1 + it->len2 : it->buf, ext_free, it, &argv[4]) == napi_ok) {
      owned = 1;
      napi_adjust_external_memory(env, (int64_t) it->len3, &dummy);
    } else {
      argv[4] = mk_buffer_copy(env, it->buf + it->len1 + it->len2, it->len3);
    }
  } else if (it->op == OP_SETXATTR) {
    argv[4] = mk_buffer_copy(env, it->buf + it->len1 + it->len2, it->len3);
  }
  napi_value ret;
  napi_status st = napi_call_function(env, recv, dispatch, 5, argv, &ret);
  if (st != napi_ok) {
    log_exception(env, op_names[it->op]);
    if (it->req != NULL) {
      ll_slot_t *sl = slot_get(s, id);
      if (sl != NULL) { fuse_reply_err(sl->req, EIO); slot_free(s, sl); s->bad_answers++; }
    }
  }
  if (borrowed) {
    /* detach the view: whatever JS kept now has no bytes (never freed memory under it) */
    napi_value ab;
    napi_typedarray_type ty;
    size_t len, off;
    void *d;
    if (napi_get_typedarray_info(env, argv[4], &ty, &len, &d, &ab, &off) != napi_ok || napi_detach_arraybuffer(env, ab) != napi_ok) {
      ll_log("write: could not empty the borrowed data buffer after its handler; its memory is left allocated");
      return;
    }
  }
  if (!owned) item_done(s, it, it->op == OP_WRITE && s->borrow_writes && it->len3 > 0 && sizeof(ll_item_t) + it->len3 + 1 <= WITEM_BYTES);
}

static void emit_event (ll_session_t *s, napi_value recv, int kind, napi_value a, napi_value b, napi_value c) {
  napi_env env = s->env;
  napi_value events, argv[4];
  napi_get_reference_value(env, s->events_ref, &events);
  napi_create_int32(env, kind, &argv[0]);
  argv[1] = a; argv[2] = b; argv[3] = c;
  napi_value ret;
  if (napi_call_function(env, recv, events, 4, argv, &ret) != napi_ok) log_exception(env, "event handler");
}

static napi_value init_info (ll_session_t *s) {
  napi_env env = s->env;
  napi_value o, v;
  napi_create_object(env, &o);
#define SETU(k, x) napi_create_uint32(env, (x), &v); napi_set_named_property(env, o, k, v);
  SETU("protoMinor", s->init_proto_minor)
  SETU("capable", s->init_capable)
  SETU("want", s->init_want)
  SETU("maxWrite", s->init_max_write)
  SETU("maxReadahead", s->init_max_readahead)
#undef SETU
  return o;
}

static void teardown_finish (ll_session_t *s, napi_value recv);

/* Answers every queued and pending request with EIO (teardown). */
static void fail_pending (ll_session_t *s) {
  pthread_mutex_lock(&s->q_mut);
  ll_item_t *it = s->q_head;
  s->q_head = s->q_tail = NULL;
  pthread_mutex_unlock(&s->q_mut);
  while (it != NULL) {
    ll_item_t *next = it->next;
    if (it->req != NULL) { fuse_reply_err(it->req, EIO); s->eio_teardown++; }
    free(it);
    it = next;
  }
  for (uint32_t i = 0; i < s->nslots; i++) {
    if (s->slots[i].req != NULL) {
      fuse_reply_err(s->slots[i].req, EIO);
      s->eio_teardown++;
      slot_free(s, &s->slots[i]);
    }
  }
}

static void deliver_jobs (ll_session_t *s, napi_value recv) {
  napi_env env = s->env;
  for (;;) {
    pthread_mutex_lock(&s->n_mut);
    ll_job_t *job = s->n_done_head;
    s->n_done_head = s->n_done_tail = NULL;
    pthread_mutex_unlock(&s->n_mut);
    if (job == NULL) return;
    while (job != NULL) {
      ll_job_t *next = job->next;
      napi_handle_scope hs;
      napi_open_handle_scope(env, &hs);
      napi_value ab, arr, idv, msv;
      void *data;
      napi_create_arraybuffer(env, job->n * sizeof(int32_t), &data, &ab);
      memcpy(data, job->results, job->n * sizeof(int32_t));
      napi_create_typedarray(env, napi_int32_array, job->n, ab, 0, &arr);
      napi_create_double(env, job->id, &idv);
      napi_create_double(env, job->ms, &msv);
      free_job(job);
      emit_event(s, recv, EV_NOTIFY, idv, arr, msv);
      napi_close_handle_scope(env, hs);
      job = next;
    }
  }
}

static void on_async (uv_async_t *h) {
  ll_session_t *s = h->data;
  napi_env env = s->env;
  if (s->state == ST_DONE) return;
  napi_handle_scope hs;
  napi_open_handle_scope(env, &hs);
  napi_value resource, recv, dispatch;
  napi_get_reference_value(env, s->self_ref, &resource);
  napi_get_undefined(env, &recv);
  napi_get_reference_value(env, s->dispatch_ref, &dispatch);
  napi_callback_scope cs;
  napi_open_callback_scope(env, resource, s->actx, &cs);

  if (atomic_get(&s->init_seen) && !s->init_delivered) {
    s->init_delivered = 1;
    napi_value u;
    napi_get_undefined(env, &u);
    emit_event(s, recv, EV_INIT, init_info(s), u, u);
  }
  for (;;) {
    if (s->state != ST_MOUNTED) break;
    pthread_mutex_lock(&s->q_mut);
    ll_item_t *it = s->q_head;
    s->q_head = s->q_tail = NULL;
    pthread_mutex_unlock(&s->q_mut);
    if (it == NULL) break;
    while (it != NULL) {
      ll_item_t *next = it->next;
      if (s->state != ST_MOUNTED) {
        /* unmount() was called by a handler: the rest get EIO */
        if (it->req) fuse_reply_err(it->req, EIO);
        free(it);
      } else {
        napi_handle_scope is;
        napi_open_handle_scope(env, &is);
        dispatch_item(s, dispatch, recv, it);
        napi_close_handle_scope(env, is);
      }
      it = next;
    }
  }
  deliver_jobs(s, recv);

  if (s->state == ST_MOUNTED && atomic_get(&s->loop_done)) {
    /* the kernel ended the connection (fusermount3 -u, umount, abort) */
    napi_value u;
    napi_get_undefined(env, &u);
    emit_event(s, recv, EV_GONE, u, u, u);
    if (s->state == ST_MOUNTED) {
      s->state = ST_STOPPING;
      atomic_set(&s->exiting, 1);
      fail_pending(s);
      pthread_mutex_lock(&s->n_mut);
      s->n_stop = 1;
      pthread_cond_signal(&s->n_cond);
      pthread_mutex_unlock(&s->n_mut);
    }
  }
  if (s->state == ST_STOPPING) {
    pthread_mutex_lock(&s->n_mut);
    int nex = s->n_exited || !s->n_started;
    pthread_mutex_unlock(&s->n_mut);
    if (nex) {
      deliver_jobs(s, recv);
      teardown_finish(s, recv);
    }
  }
  napi_close_callback_scope(env, cs);
  napi_close_handle_scope(env, hs);
}

static void async_closed (uv_handle_t *h) { (void) h; }

/*
 * /dev/fuse is readable: read requests (non-blocking) and hand them to JS
 * at once, on this thread. Reading here instead of on a thread of its own
 * saves one thread wake-up per request (two threads woken per request
 * before: the reader, then the JS thread through uv_async; on a 2-vCPU VM
 * a cross-CPU wake-up is a VM exit). At most READ_BATCH requests per call,
 * so timers and the protocol's sockets get their turn.
 */
#define READ_BATCH 64
static void on_readable (uv_poll_t *h, int status, int events) {
  (void) events;
  ll_session_t *s = h->data;
  if (s->state != ST_MOUNTED || atomic_get(&s->loop_done)) return;
  if (status < 0) { ll_log("poll of /dev/fuse: %s", uv_strerror(status)); }
  for (int i = 0; i < READ_BATCH && !atomic_get(&s->stop); i++) {
    int res = fuse_session_receive_buf(s->se, &s->rbuf);
    if (res == -EAGAIN) break;
    if (res == -EINTR) continue;
    if (res <= 0) { /* 0: the kernel ended the connection (unmount, abort); <0: error */
      if (res < 0 && res != -ENODEV) ll_log("reading /dev/fuse: %s", strerror(-res));
      atomic_set(&s->loop_done, 1);
      uv_poll_stop(&s->poll);
      break;
    }
    if (s->rbuf.size >= sizeof(uint32_t) * 2) {
      uint32_t opcode = ((uint32_t *) s->rbuf.mem)[1];
      __atomic_fetch_add(&s->kops[opcode < LL_KOP_MAX ? opcode : LL_KOP_MAX], 1, __ATOMIC_RELAXED);
    }
    fuse_session_process_buf(s->se, &s->rbuf);
  }
  /* dispatch what was queued (and INIT, a gone connection, finished notify jobs) */
  on_async(&s->async);
}

static void teardown_finish (ll_session_t *s, napi_value recv) {
  napi_env env = s->env;
  atomic_set(&s->stop, 1);
  if (s->poll_inited) { uv_poll_stop(&s->poll); uv_close((uv_handle_t *) &s->poll, async_closed); s->poll_inited = 0; }
  fail_pending(s);
  fuse_session_unmount(s->se);
  fuse_session_destroy(s->se);
  s->se = NULL;
  free(s->rbuf.mem); s->rbuf.mem = NULL;
  s->state = ST_DONE;
  uv_close((uv_handle_t *) &s->async, async_closed);
  napi_value u;
  napi_get_undefined(env, &u);
  emit_event(s, recv, EV_EXIT, u, u, u);
  napi_delete_reference(env, s->dispatch_ref); s->dispatch_ref = NULL;
  napi_delete_reference(env, s->events_ref); s->events_ref = NULL;
  napi_async_destroy(env, s->actx);
}

/* ================================================================ N-API helpers */

#define ARGS(n) \
  size_t argc = n; napi_value argv[n]; \
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;

static ll_session_t *get_session (napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) { napi_throw_type_error(env, "EINVAL", "not a fuse-ll session"); return NULL; }
  return p;
}

static int get_num (napi_env env, napi_value v, double *out) {
  return napi_get_value_double(env, v, out) == napi_ok && *out == *out ? 0 : -1;
}

static napi_value ret_int (napi_env env, int32_t n) {
  napi_value r;
  napi_create_int32(env, n, &r);
  return r;
}

static int get_bytes (napi_env env, napi_value v, void **data, size_t *len) {
  bool is;
  if (napi_is_buffer(env, v, &is) == napi_ok && is) return napi_get_buffer_info(env, v, data, len) == napi_ok ? 0 : -1;
  if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
    napi_typedarray_type t; size_t n; napi_value ab; size_t off;
    if (napi_get_typedarray_info(env, v, &t, &n, data, &ab, &off) != napi_ok || t != napi_uint8_array) return -1;
    *len = n;
    return 0;
  }
  return -1;
}

/* A reply found its request: returns the slot, or NULL (the request was
 * already answered, or the session is torn down): the caller returns 1. */
static ll_slot_t *reply_slot (napi_env env, napi_value *argv, ll_session_t **sp) {
  ll_session_t *s = get_session(env, argv[0]);
  *sp = s;
  if (s == NULL) return NULL;
  double id;
  if (get_num(env, argv[1], &id) != 0) return NULL;
  ll_slot_t *sl = s->state == ST_MOUNTED ? slot_get(s, id) : NULL;
  if (sl == NULL) s->late_replies++;
  return sl;
}

/* A bad answer: the request gets EIO and JS gets a TypeError saying why. */
static napi_value bad_answer (napi_env env, ll_session_t *s, ll_slot_t *sl, const char *why) {
  fuse_reply_err(sl->req, EIO);
  slot_free(s, sl);
  s->bad_answers++;
  napi_throw_type_error(env, "EBADANSWER", why);
  return NULL;
}

static napi_value replied (napi_env env, ll_session_t *s, ll_slot_t *sl, int r) {
  slot_free(s, sl);
  if (r != 0) s->failed_replies++;
  return ret_int(env, r);
}

static void ns_to_ts (int64_t ns, struct timespec *ts) {
  int64_t sec = ns / 1000000000LL, nsec = ns % 1000000000LL;
  if (nsec < 0) { nsec += 1000000000LL; sec--; }
  ts->tv_sec = sec;
  ts->tv_nsec = nsec;
}

static int ok_uint (double v, double max) { return v >= 0 && v <= max && v == (double) (uint64_t) v; }

/* Reads the attribute scratch into st; NULL or a reason. */
static const char *read_attr (ll_session_t *s, uint64_t ino, struct stat *st) {
  double *R = s->ans;
  memset(st, 0, sizeof *st);
  if (!ok_uint(R[R_MODE], 0xffffffff) || ((mode_t) R[R_MODE] & S_IFMT) == 0) return "attr.mode must carry a file type (e.g. 0o100644)";
  if (!ok_uint(R[R_NLINK], 0xffffffff)) return "attr.nlink must be an integer >= 0";
  if (!ok_uint(R[R_UID], 0xffffffff) || !ok_uint(R[R_GID], 0xffffffff)) return "attr.uid/gid must be integers in [0, 2^32)";
  if (!ok_uint(R[R_SIZE], 9007199254740991.0) || !ok_uint(R[R_BLOCKS], 9007199254740991.0)) return "attr.size/blocks must be integers in [0, 2^53)";
  if (!ok_uint(R[R_RDEV], 9007199254740991.0) || !ok_uint(R[R_BLKSIZE], 0xffffffff) || !ok_uint(R[R_INO], 9007199254740991.0)) return "attr.rdev/blksize/ino must be integers >= 0";
  st->st_mode = (mode_t) R[R_MODE];
  st->st_nlink = (nlink_t) R[R_NLINK];
  st->st_uid = (uid_t) R[R_UID];
  st->st_gid = (gid_t) R[R_GID];
  st->st_rdev = (dev_t) R[R_RDEV];
  st->st_size = (off_t) R[R_SIZE];
  st->st_blocks = (blkcnt_t) R[R_BLOCKS];
  st->st_blksize = (blksize_t) R[R_BLKSIZE];
  st->st_ino = R[R_INO] > 0 ? (ino_t) R[R_INO] : (ino_t) ino;
  ns_to_ts(s->ans_times[0], &st->st_atim);
  ns_to_ts(s->ans_times[1], &st->st_mtim);
  ns_to_ts(s->ans_times[2], &st->st_ctim);
  return NULL;
}

/* Reads (ino, incarnation, generation, entry timeout, attr timeout) at argv[i..i+4] plus the attr scratch. */
static const char *read_entry (napi_env env, ll_session_t *s, napi_value *argv, struct fuse_entry_param *e) {
  double ino, inc, gen, et, at;
  memset(e, 0, sizeof *e);
  if (get_num(env, argv[0], &ino) || get_num(env, argv[1], &inc) || get_num(env, argv[2], &gen) ||
      get_num(env, argv[3], &et) || get_num(env, argv[4], &at)) return "entry fields must be numbers";
  if (!ok_uint(ino, (double) LL_INO_MASK)) return "entry.ino must be an integer in [0, 2^40) (0: negative entry)";
  if (!ok_uint(inc, (double) LL_INCARNATION_MAX)) return "entry.incarnation must be an integer in [0, 2^24)";
  if (!ok_uint(gen, 9007199254740991.0)) return "entry.generation must be an integer >= 0";
  if (!(et >= 0 && et < 1e9) || !(at >= 0 && at < 1e9)) return "entry timeouts must be seconds in [0, 1e9)";
  e->entry_timeout = et;
  e->attr_timeout = at;
  if (ino == 0) { /* negative entry: the kernel caches "no such name" for entry_timeout */
    if (inc != 0) return "a negative entry (ino 0) has no incarnation";
    return NULL;
  }
  e->ino = ll_nodeid((uint64_t) ino, (uint64_t) inc);
  e->generation = (uint64_t) gen;
  return read_attr(s, (uint64_t) ino, &e->attr);
}

static int is_entry_op (uint32_t op) {
  return op == OP_LOOKUP || op == OP_MKNOD || op == OP_MKDIR || op == OP_SYMLINK || op == OP_LINK;
}

/* ================================================================ replies */

/* replyErr(h, id, errno >= 0): 0 | 1 (no pending request) | -errno (reply failed) */
static napi_value n_reply_err (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  double e;
  if (get_num(env, argv[2], &e) || !(e >= 0 && e < 4096) || e != (int) e) return bad_answer(env, s, sl, "errno must be an integer in [0, 4096)");
  if (e == 0 && (sl->op == OP_LOOKUP || is_entry_op(sl->op) || sl->op == OP_CREATE || sl->op == OP_GETATTR || sl->op == OP_SETATTR ||
                 sl->op == OP_READ || sl->op == OP_READLINK || sl->op == OP_OPEN || sl->op == OP_OPENDIR || sl->op == OP_STATFS ||
                 sl->op == OP_GETXATTR || sl->op == OP_LISTXATTR || sl->op == OP_WRITE || sl->op == OP_READDIR ||
                 sl->op == OP_READDIRPLUS || sl->op == OP_LSEEK || sl->op == OP_COPY_FILE_RANGE))
    return bad_answer(env, s, sl, "this operation needs a value, not a bare success");
  if (sl->cap && e == ENODATA) cap_learn(s, sl, sl->ino);
  return replied(env, s, sl, fuse_reply_err(sl->req, (int) e));
}

/* replyEntry(h, id, ino, incarnation, generation, entryTimeout, attrTimeout) + attr scratch */
static napi_value n_reply_entry (napi_env env, napi_callback_info info) {
  ARGS(7)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  if (!is_entry_op(sl->op)) return bad_answer(env, s, sl, "an entry answers lookup, mknod, mkdir, symlink and link only");
  struct fuse_entry_param e;
  const char *why = read_entry(env, s, argv + 2, &e);
  if (why) return bad_answer(env, s, sl, why);
  if (e.ino == 0 && sl->op != OP_LOOKUP) return bad_answer(env, s, sl, "only lookup may answer a negative entry (ino 0)");
  if (e.ino != 0 && s->ans[R_NOCAP] == 1) cap_learn(s, sl, ll_ino_of(e.ino));
  return replied(env, s, sl, fuse_reply_entry(sl->req, &e));
}

static int open_flags (struct fuse_file_info *fi, double fh, double flags) {
  if (!ok_uint(fh, 9007199254740991.0) || !ok_uint(flags, 255)) return -1;
  int f = (int) flags;
  fi->fh = (uint64_t) fh;
  fi->direct_io = (f & 1) != 0;
  fi->keep_cache = (f & 2) != 0;
  fi->nonseekable = (f & 4) != 0;
  fi->cache_readdir = (f & 8) != 0;
  fi->noflush = (f & 16) != 0;
  return 0;
}

/* replyCreate(h, id, ino, incarnation, generation, entryTimeout, attrTimeout, fh, openFlags) + attr scratch */
static napi_value n_reply_create (napi_env env, napi_callback_info info) {
  ARGS(9)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  if (sl->op != OP_CREATE) return bad_answer(env, s, sl, "a create answer answers create only");
  struct fuse_entry_param e;
  const char *why = read_entry(env, s, argv + 2, &e);
  if (why) return bad_answer(env, s, sl, why);
  if (e.ino == 0) return bad_answer(env, s, sl, "create needs an inode (ino > 0)");
  struct fuse_file_info fi;
  memset(&fi, 0, sizeof fi);
  double fh, fl;
  if (get_num(env, argv[7], &fh) || get_num(env, argv[8], &fl) || open_flags(&fi, fh, fl)) return bad_answer(env, s, sl, "create: fh must be an integer in [0, 2^53)");
  if (s->ans[R_NOCAP] == 1) cap_learn(s, sl, ll_ino_of(e.ino));
  return replied(env, s, sl, fuse_reply_create(sl->req, &e, &fi));
}

/* replyAttr(h, id, attrTimeout) + attr scratch; ino of the request's node */
static napi_value n_reply_attr (napi_env env, napi_callback_info info) {
  ARGS(4)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  if (sl->op != OP_GETATTR && sl->op != OP_SETATTR) return bad_answer(env, s, sl, "attributes answer getattr and setattr only");
  double t, ino;
  if (get_num(env, argv[2], &t) || !(t >= 0 && t < 1e9)) return bad_answer(env, s, sl, "attr timeout must be seconds in [0, 1e9)");
  if (get_num(env, argv[3], &ino) || !ok_uint(ino, (double) LL_INO_MASK)) return bad_answer(env, s, sl, "ino must be an integer");
  struct stat st;
  const char *why = read_attr(s, (uint64_t) ino, &st);
  if (why) return bad_answer(env, s, sl, why);
  return replied(env, s, sl, fuse_reply_attr(sl->req, &st, t));
}

/* replyOpen(h, id, fh, openFlags): openFlags bits 1 direct_io, 2 keep_cache, 4 nonseekable, 8 cache_readdir, 16 noflush */
static napi_value n_reply_open (napi_env env, napi_callback_info info) {
  ARGS(4)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  if (sl->op != OP_OPEN && sl->op != OP_OPENDIR) return bad_answer(env, s, sl, "an open answer answers open and opendir only");
  struct fuse_file_info fi;
  memset(&fi, 0, sizeof fi);
  double fh, fl;
  if (get_num(env, argv[2], &fh) || get_num(env, argv[3], &fl) || open_flags(&fi, fh, fl)) return bad_answer(env, s, sl, "fh must be an integer in [0, 2^53)");
  return replied(env, s, sl, fuse_reply_open(sl->req, &fi));
}

/* replyBuf(h, id, bytes): read (at most the size asked for) */
static napi_value n_reply_buf (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  void *data; size_t len;
  if (sl->op != OP_READ) return bad_answer(env, s, sl, "bytes answer read only");
  if (get_bytes(env, argv[2], &data, &len)) return bad_answer(env, s, sl, "read must answer a Buffer or Uint8Array");
  if (len > sl->size) return bad_answer(env, s, sl, "read answered more bytes than the kernel asked for");
  return replied(env, s, sl, fuse_reply_buf(sl->req, data, len));
}

/* replyReadlink(h, id, bytes) */
static napi_value n_reply_readlink (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  void *data; size_t len;
  if (sl->op != OP_READLINK) return bad_answer(env, s, sl, "a link target answers readlink only");
  if (get_bytes(env, argv[2], &data, &len)) return bad_answer(env, s, sl, "readlink must answer a Buffer");
  if (len == 0 || len > 65536 || memchr(data, 0, len) != NULL) return bad_answer(env, s, sl, "a link target is 1..65536 bytes without NUL");
  char *z = malloc(len + 1);
  if (z == NULL) return bad_answer(env, s, sl, "out of memory");
  memcpy(z, data, len); z[len] = 0;
  int r = fuse_reply_readlink(sl->req, z);
  free(z);
  return replied(env, s, sl, r);
}

/* replyCount(h, id, n): write, copy_file_range (bytes written) */
static napi_value n_reply_count (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  double n;
  if (sl->op != OP_WRITE && sl->op != OP_COPY_FILE_RANGE) return bad_answer(env, s, sl, "a byte count answers write and copy_file_range only");
  if (get_num(env, argv[2], &n) || !ok_uint(n, 4294967295.0)) return bad_answer(env, s, sl, "a byte count must be an integer in [0, 2^32)");
  return replied(env, s, sl, fuse_reply_write(sl->req, (size_t) n));
}

/* replyLseek(h, id, offset) */
static napi_value n_reply_lseek (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  double n;
  if (sl->op != OP_LSEEK) return bad_answer(env, s, sl, "an offset answers lseek only");
  if (get_num(env, argv[2], &n) || !ok_uint(n, 9007199254740991.0)) return bad_answer(env, s, sl, "lseek must answer an integer offset >= 0");
  return replied(env, s, sl, fuse_reply_lseek(sl->req, (off_t) n));
}

/* replyStatfs(h, id) + statfs scratch [bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid, flag, namemax] */
static napi_value n_reply_statfs (napi_env env, napi_callback_info info) {
  ARGS(2)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  if (sl->op != OP_STATFS) return bad_answer(env, s, sl, "statfs fields answer statfs only");
  double *R = s->ans;
  for (int i = 0; i < 11; i++) if (!ok_uint(R[i], 18446744073709551615.0)) return bad_answer(env, s, sl, "statfs fields must be integers >= 0");
  struct statvfs v;
  memset(&v, 0, sizeof v);
  v.f_bsize = (unsigned long) R[0]; v.f_frsize = (unsigned long) R[1];
  v.f_blocks = (fsblkcnt_t) R[2]; v.f_bfree = (fsblkcnt_t) R[3]; v.f_bavail = (fsblkcnt_t) R[4];
  v.f_files = (fsfilcnt_t) R[5]; v.f_ffree = (fsfilcnt_t) R[6]; v.f_favail = (fsfilcnt_t) R[7];
  v.f_fsid = (unsigned long) R[8]; v.f_flag = (unsigned long) R[9]; v.f_namemax = (unsigned long) R[10];
  return replied(env, s, sl, fuse_reply_statfs(sl->req, &v));
}

/* replyXattr(h, id, bytes): getxattr value or listxattr's NUL-terminated names,
 * with the size probe: size 0 -> the length; too small -> ERANGE. */
static napi_value n_reply_xattr (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  void *data; size_t len;
  if (sl->op != OP_GETXATTR && sl->op != OP_LISTXATTR) return bad_answer(env, s, sl, "xattr bytes answer getxattr and listxattr only");
  if (get_bytes(env, argv[2], &data, &len)) return bad_answer(env, s, sl, "xattr answers must be Buffers");
  int r;
  if (sl->size == 0) r = fuse_reply_xattr(sl->req, len);
  else if (len > sl->size) r = fuse_reply_err(sl->req, ERANGE);
  else r = fuse_reply_buf(sl->req, data, len);
  return replied(env, s, sl, r);
}

static const char *check_name (void *data, size_t len) {
  if (len == 0 || len > 1024) return "a name is 1..1024 bytes";
  if (memchr(data, 0, len) || memchr(data, '/', len)) return "a name has no NUL and no '/'";
  return NULL;
}

/* dirAdd(h, id, name, ino, mode, nextOffset) -> 1 added, 0 full (not added) */
static napi_value n_dir_add (napi_env env, napi_callback_info info) {
  ARGS(6)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1 << 20);
  if (sl->op != OP_READDIR) return bad_answer(env, s, sl, "plain entries answer readdir only");
  void *data; size_t len; double ino, mode, off;
  if (get_bytes(env, argv[2], &data, &len)) return bad_answer(env, s, sl, "entry.name must be a Buffer");
  const char *why = check_name(data, len);
  if (why) return bad_answer(env, s, sl, why);
  if (get_num(env, argv[3], &ino) || !ok_uint(ino, 9007199254740991.0) || ino == 0) return bad_answer(env, s, sl, "entry.ino must be an integer > 0 (0 hides the entry)");
  if (get_num(env, argv[4], &mode) || !ok_uint(mode, 0xffffffff)) return bad_answer(env, s, sl, "entry.mode must be an integer");
  if (get_num(env, argv[5], &off) || !ok_uint(off, 9007199254740991.0) || off == 0) return bad_answer(env, s, sl, "entry.off (the next entry's offset) must be an integer > 0");
  if (sl->dbuf == NULL && (sl->dbuf = malloc(sl->size ? sl->size : 1)) == NULL) return bad_answer(env, s, sl, "out of memory");
  char name[1025];
  memcpy(name, data, len); name[len] = 0;
  struct stat st;
  memset(&st, 0, sizeof st);
  st.st_ino = (ino_t) ino;
  st.st_mode = (mode_t) mode;
  size_t rem = sl->size - sl->dused;
  size_t need = fuse_add_direntry(sl->req, sl->dbuf + sl->dused, rem, name, &st, (off_t) off);
  if (need > rem) return ret_int(env, 0);
  sl->dused += need;
  return ret_int(env, 1);
}

/* dirPlusAdd(h, id, name, ino, incarnation, generation, entryTimeout, attrTimeout, nextOffset) + attr scratch -> 1 | 0 full */
static napi_value n_dir_plus_add (napi_env env, napi_callback_info info) {
  ARGS(9)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1 << 20);
  if (sl->op != OP_READDIRPLUS) return bad_answer(env, s, sl, "plus entries answer readdirplus only");
  void *data; size_t len; double off;
  if (get_bytes(env, argv[2], &data, &len)) return bad_answer(env, s, sl, "entry.name must be a Buffer");
  const char *why = check_name(data, len);
  if (why) return bad_answer(env, s, sl, why);
  struct fuse_entry_param e;
  why = read_entry(env, s, argv + 3, &e);
  if (why) return bad_answer(env, s, sl, why);
  if (e.ino == 0) return bad_answer(env, s, sl, "a readdirplus entry needs an inode (ino > 0)");
  if (get_num(env, argv[8], &off) || !ok_uint(off, 9007199254740991.0) || off == 0) return bad_answer(env, s, sl, "entry.off (the next entry's offset) must be an integer > 0");
  if (sl->dbuf == NULL && (sl->dbuf = malloc(sl->size ? sl->size : 1)) == NULL) return bad_answer(env, s, sl, "out of memory");
  char name[1025];
  memcpy(name, data, len); name[len] = 0;
  size_t rem = sl->size - sl->dused;
  size_t need = fuse_add_direntry_plus(sl->req, sl->dbuf + sl->dused, rem, name, &e, (off_t) off);
  if (need > rem) return ret_int(env, 0);
  sl->dused += need;
  if (s->ans[R_NOCAP] == 1) cap_learn(s, sl, ll_ino_of(e.ino));
  return ret_int(env, 1);
}

/* dirEnd(h, id): sends the entries added so far (none: end of directory) */
static napi_value n_dir_end (napi_env env, napi_callback_info info) {
  ARGS(2)
  ll_session_t *s; ll_slot_t *sl = reply_slot(env, argv, &s);
  if (sl == NULL) return ret_int(env, 1);
  if (sl->op != OP_READDIR && sl->op != OP_READDIRPLUS) return bad_answer(env, s, sl, "dirEnd answers readdir and readdirplus only");
  return replied(env, s, sl, fuse_reply_buf(sl->req, sl->dbuf, sl->dused));
}

/* ================================================================ mount / unmount */

static const struct fuse_lowlevel_ops ll_all_ops = {
  .init = ll_init, .lookup = ll_lookup, .forget = ll_forget, .forget_multi = ll_forget_multi,
  .getattr = ll_getattr, .setattr = ll_setattr, .readlink = ll_readlink, .mknod = ll_mknod,
  .mkdir = ll_mkdir, .unlink = ll_unlink, .rmdir = ll_rmdir, .symlink = ll_symlink,
  .rename = ll_rename, .link = ll_link, .open = ll_open, .read = ll_read, .write = ll_write,
  .flush = ll_flush, .release = ll_release, .fsync = ll_fsync, .opendir = ll_opendir,
  .readdir = ll_readdir, .releasedir = ll_releasedir, .fsyncdir = ll_fsyncdir, .statfs = ll_statfs,
  .setxattr = ll_setxattr, .getxattr = ll_getxattr, .listxattr = ll_listxattr,
  .removexattr = ll_removexattr, .access = ll_access, .create = ll_create,
  .fallocate = ll_fallocate, .readdirplus = ll_readdirplus, .lseek = ll_lseek,
  .copy_file_range = ll_copy_file_range,
};

static int get_f64 (napi_env env, napi_value v, napi_typedarray_type want, size_t minlen, void **data) {
  bool is; napi_typedarray_type t; size_t n; napi_value ab; size_t off;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return -1;
  if (napi_get_typedarray_info(env, v, &t, &n, data, &ab, &off) != napi_ok || t != want || n < minlen) return -1;
  return 0;
}

static void session_finalize (napi_env env, void *data, void *hint) {
  ll_session_t *s = data;
  if (s->state != ST_DONE) return; /* still mounted: the loop owns it (the wrapper keeps it referenced) */
  free(s->slots);
  free(s->cap_keys);
  while (s->wcache_n > 0) free(s->wcache[--s->wcache_n]);
  free(s->mountpoint);
  free(s);
}

/*
 * mount(mountpoint, argv: string[], implemented: number[] (op -> 0/1),
 *       config: number[] [wantOn, wantOff, maxWrite, maxReadahead, maxBackground, congestion, noSecurityCapability, capabilityCache, borrowWrites],
 *       dispatch(op, id, b1, b2, b3), events(kind, a, b, c),
 *       args: Float64Array(16), times: BigInt64Array(3), ans: Float64Array(16), ansTimes: BigInt64Array(3))
 * -> session (external). Throws an Error carrying libfuse's messages when the
 * options are refused or the mount fails.
 */
static napi_value n_mount (napi_env env, napi_callback_info info) {
  ARGS(10)
  size_t mlen;
  if (napi_get_value_string_utf8(env, argv[0], NULL, 0, &mlen) != napi_ok) { napi_throw_type_error(env, "EINVAL", "mountpoint must be a string"); return NULL; }
  ll_session_t *s = calloc(1, sizeof(ll_session_t));
  s->mountpoint = malloc(mlen + 1);
  napi_get_value_string_utf8(env, argv[0], s->mountpoint, mlen + 1, &mlen);
  s->env = env;
  s->free_head = SLOT_NONE;
  s->fd = -1;

  uint32_t nargs = 0;
  napi_get_array_length(env, argv[1], &nargs);
  char **cargv = calloc(nargs + 2, sizeof(char *));
  cargv[0] = strdup("rewindfs");
  for (uint32_t i = 0; i < nargs; i++) {
    napi_value el; size_t l;
    napi_get_element(env, argv[1], i, &el);
    if (napi_get_value_string_utf8(env, el, NULL, 0, &l) != napi_ok) l = 0;
    cargv[i + 1] = malloc(l + 1);
    napi_get_value_string_utf8(env, el, cargv[i + 1], l + 1, &l);
  }
  uint32_t nimpl = 0;
  napi_get_array_length(env, argv[2], &nimpl);
  struct fuse_lowlevel_ops ops = ll_all_ops;
  for (uint32_t i = 0; i < OP_COUNT; i++) {
    napi_value el; bool b = false;
    if (i < nimpl && napi_get_element(env, argv[2], i, &el) == napi_ok) napi_get_value_bool(env, el, &b);
    s->implemented[i] = b;
  }
#define DROP(op, field) if (!s->implemented[op]) ops.field = NULL;
  DROP(OP_LOOKUP, lookup) DROP(OP_GETATTR, getattr) DROP(OP_SETATTR, setattr) DROP(OP_READLINK, readlink)
  DROP(OP_MKNOD, mknod) DROP(OP_MKDIR, mkdir) DROP(OP_UNLINK, unlink) DROP(OP_RMDIR, rmdir)
  DROP(OP_SYMLINK, symlink) DROP(OP_RENAME, rename) DROP(OP_LINK, link) DROP(OP_OPEN, open)
  DROP(OP_READ, read) DROP(OP_WRITE, write) DROP(OP_FLUSH, flush) DROP(OP_RELEASE, release)
  DROP(OP_FSYNC, fsync) DROP(OP_OPENDIR, opendir) DROP(OP_READDIR, readdir) DROP(OP_RELEASEDIR, releasedir)
  DROP(OP_FSYNCDIR, fsyncdir) DROP(OP_STATFS, statfs) DROP(OP_SETXATTR, setxattr) DROP(OP_GETXATTR, getxattr)
  DROP(OP_LISTXATTR, listxattr) DROP(OP_REMOVEXATTR, removexattr) DROP(OP_ACCESS, access) DROP(OP_CREATE, create)
  DROP(OP_FALLOCATE, fallocate) DROP(OP_READDIRPLUS, readdirplus) DROP(OP_LSEEK, lseek) DROP(OP_COPY_FILE_RANGE, copy_file_range)
#undef DROP
  /* forget stays registered: it has no reply, and JS may not want the counts */
  double cfg[9] = { 0 };
  uint32_t ncfg = 0;
  napi_get_array_length(env, argv[3], &ncfg);
  for (uint32_t i = 0; i < 9 && i < ncfg; i++) { napi_value el; napi_get_element(env, argv[3], i, &el); napi_get_value_double(env, el, &cfg[i]); }
  s->want_on = (uint32_t) cfg[0]; s->want_off = (uint32_t) cfg[1];
  s->max_write = (uint32_t) cfg[2]; s->max_readahead = (uint32_t) cfg[3];
  s->max_background = (uint32_t) cfg[4]; s->congestion_threshold = (uint32_t) cfg[5];
  s->no_security_capability = cfg[6] != 0;
  s->cap_cache = cfg[7] != 0;
  s->borrow_writes = cfg[8] != 0;

  void *p;
  if (get_f64(env, argv[6], napi_float64_array, A_LEN, &p)) goto bad_scratch;
  s->args = p;
  if (get_f64(env, argv[7], napi_bigint64_array, 3, &p)) goto bad_scratch;
  s->times = p;
  if (get_f64(env, argv[8], napi_float64_array, R_LEN, &p)) goto bad_scratch;
  s->ans = p;
  if (get_f64(env, argv[9], napi_bigint64_array, 3, &p)) goto bad_scratch;
  s->ans_times = p;

  char capture[4096];
  capture[0] = 0;
  pthread_mutex_lock(&capture_mut);
  capture_buf = capture; capture_len = 0;
  pthread_mutex_unlock(&capture_mut);
  struct fuse_args fargs = FUSE_ARGS_INIT((int) nargs + 1, cargv);
  s->se = fuse_session_new(&fargs, &ops, sizeof ops, s);
  int mounted = s->se != NULL && fuse_session_mount(s->se, s->mountpoint) == 0;
  pthread_mutex_lock(&capture_mut);
  capture_buf = NULL;
  pthread_mutex_unlock(&capture_mut);
  fuse_opt_free_args(&fargs);
  for (uint32_t i = 0; i <= nargs; i++) free(cargv[i]);
  free(cargv);
  if (!mounted) {
    char msg[4400];
    for (char *c = capture; *c; c++) if (*c == '\n') *c = ' ';
    snprintf(msg, sizeof msg, "%s %s: %s", s->se == NULL ? "libfuse 3 refused the options for" : "cannot mount", s->mountpoint, capture[0] ? capture : "(no message from libfuse)");
    int refused = s->se == NULL;
    if (s->se) fuse_session_destroy(s->se);
    free(s->mountpoint); free(s);
    napi_throw_error(env, refused ? "EINVAL" : "EMOUNT", msg);
    return NULL;
  }
  s->fd = fuse_session_fd(s->se);
  fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);

  napi_value self;
  napi_create_external(env, s, session_finalize, NULL, &self);
  napi_create_reference(env, self, 1, &s->self_ref);
  napi_create_reference(env, argv[4], 1, &s->dispatch_ref);
  napi_create_reference(env, argv[5], 1, &s->events_ref);
  napi_create_reference(env, argv[6], 1, &s->args_ref);
  napi_create_reference(env, argv[7], 1, &s->times_ref);
  napi_create_reference(env, argv[8], 1, &s->ans_ref);
  napi_create_reference(env, argv[9], 1, &s->ans_times_ref);
  napi_value rname;
  napi_create_string_utf8(env, "rewindfs:fuse-ll", NAPI_AUTO_LENGTH, &rname);
  napi_async_init(env, self, rname, &s->actx);

  pthread_mutex_init(&s->q_mut, NULL);
  pthread_mutex_init(&s->n_mut, NULL);
  pthread_cond_init(&s->n_cond, NULL);
  struct uv_loop_s *loop;
  napi_get_uv_event_loop(env, &loop);
  uv_async_init(loop, &s->async, on_async);
  s->async.data = s;
  s->async_inited = 1;
  s->state = ST_MOUNTED;

  if (pthread_create(&s->nthread, NULL, notify_main, s) == 0) { s->n_started = 1; pthread_detach(s->nthread); }
  if (uv_poll_init(loop, &s->poll, s->fd) == 0) {
    s->poll.data = s;
    s->poll_inited = 1;
    uv_poll_start(&s->poll, UV_READABLE, on_readable);
  } else { ll_log("cannot poll /dev/fuse"); atomic_set(&s->loop_done, 1); uv_async_send(&s->async); }
  return self;

bad_scratch:
  for (uint32_t i = 0; i <= nargs; i++) free(cargv[i]);
  free(cargv); free(s->mountpoint); free(s);
  napi_throw_type_error(env, "EINVAL", "mount: bad scratch arrays");
  return NULL;
}

/* unmount(h): starts the teardown; the events callback gets EV_EXIT when done. */
static napi_value n_unmount (napi_env env, napi_callback_info info) {
  ARGS(1)
  ll_session_t *s = get_session(env, argv[0]);
  if (s == NULL) return NULL;
  if (s->state != ST_MOUNTED) return ret_int(env, 0);
  s->state = ST_STOPPING;
  atomic_set(&s->exiting, 1);
  fail_pending(s);
  pthread_mutex_lock(&s->n_mut);
  s->n_stop = 1;
  pthread_cond_signal(&s->n_cond);
  pthread_mutex_unlock(&s->n_mut);
  uv_async_send(&s->async);
  return ret_int(env, 1);
}

/* counters(h) -> { kernel opcode name: requests received } (every opcode seen, plus 'other') */
static napi_value n_counters (napi_env env, napi_callback_info info) {
  ARGS(1)
  ll_session_t *s = get_session(env, argv[0]);
  if (s == NULL) return NULL;
  napi_value o, v;
  napi_create_object(env, &o);
  for (int i = 0; i <= LL_KOP_MAX; i++) {
    uint64_t n = __atomic_load_n(&s->kops[i], __ATOMIC_RELAXED);
    if (i < LL_KOP_MAX && kop_names[i] == NULL && n == 0) continue;
    if (i == LL_KOP_MAX && n == 0) continue;
    napi_create_double(env, (double) n, &v);
    napi_set_named_property(env, o, i < LL_KOP_MAX && kop_names[i] ? kop_names[i] : "other", v);
  }
  return o;
}

/* stats(h) -> { pending, badAnswers, failedReplies, lateReplies, eioTeardown, capabilityAnswers, capabilityKnown } */
static napi_value n_stats (napi_env env, napi_callback_info info) {
  ARGS(1)
  ll_session_t *s = get_session(env, argv[0]);
  if (s == NULL) return NULL;
  napi_value o, v;
  napi_create_object(env, &o);
#define SET(k, x) napi_create_double(env, (double) (x), &v); napi_set_named_property(env, o, k, v);
  SET("pending", s->pending)
  SET("badAnswers", s->bad_answers)
  SET("failedReplies", s->failed_replies)
  SET("lateReplies", s->late_replies)
  SET("eioTeardown", __atomic_load_n(&s->eio_teardown, __ATOMIC_RELAXED))
  SET("capabilityAnswers", s->cap_answers)
  SET("capabilityKnown", s->cap_count)
#undef SET
  return o;
}

/* ================================================================ notify */

static int get_u64node (napi_env env, napi_value ino, napi_value inc, uint64_t *out) {
  double a, b;
  if (get_num(env, ino, &a) || get_num(env, inc, &b)) return -1;
  if (!ok_uint(a, (double) LL_INO_MASK) || a == 0 || !ok_uint(b, (double) LL_INCARNATION_MAX)) return -1;
  *out = ll_nodeid((uint64_t) a, (uint64_t) b);
  return 0;
}

static int get_name_copy (napi_env env, napi_value v, char **out, size_t *len) {
  void *data; size_t n;
  if (get_bytes(env, v, &data, &n) || check_name(data, n)) return -1;
  *out = malloc(n + 1);
  memcpy(*out, data, n);
  (*out)[n] = 0;
  *len = n;
  return 0;
}

static void parse_nitem (napi_env env, napi_value arr, ll_nitem_t *it) {
  napi_value el[6];
  uint32_t len = 0;
  double type = -1, d;
  bool is = false;
  memset(it, 0, sizeof *it);
  it->type = -1;
  if (napi_is_array(env, arr, &is) != napi_ok || !is) return;
  napi_get_array_length(env, arr, &len);
  for (uint32_t i = 0; i < 6; i++) { if (i < len) napi_get_element(env, arr, i, &el[i]); else napi_get_undefined(env, &el[i]); }
  if (len < 1 || get_num(env, el[0], &type)) return;
  switch ((int) type) {
    case 0: case 4: /* [0|4, parentIno, parentInc, name] */
      if (get_u64node(env, el[1], el[2], &it->a) || get_name_copy(env, el[3], &it->name, &it->namelen)) return;
      break;
    case 1: /* [1, ino, inc, off, len] */
      if (get_u64node(env, el[1], el[2], &it->a)) return;
      if (get_num(env, el[3], &d)) return;
      it->off = (int64_t) d;
      if (get_num(env, el[4], &d)) return;
      it->len = (int64_t) d;
      break;
    case 2: /* [2, parentIno, parentInc, childIno, childInc, name] */
      if (get_u64node(env, el[1], el[2], &it->a) || get_u64node(env, el[3], el[4], &it->b) ||
          get_name_copy(env, el[5], &it->name, &it->namelen)) return;
      break;
    case 3: { /* [3, ino, inc, off, data] */
      void *data; size_t n;
      if (get_u64node(env, el[1], el[2], &it->a)) return;
      if (get_num(env, el[3], &d) || !(d >= 0)) return;
      it->off = (int64_t) d;
      if (get_bytes(env, el[4], &data, &n)) return;
      it->data = malloc(n ? n : 1);
      memcpy(it->data, data, n);
      it->len = (int64_t) n;
      break;
    }
    default: return;
  }
  it->type = (int32_t) type;
}

/* notify(h, jobId, items) -> true queued (EV_NOTIFY later) | false (not mounted) */
static napi_value n_notify (napi_env env, napi_callback_info info) {
  ARGS(3)
  ll_session_t *s = get_session(env, argv[0]);
  if (s == NULL) return NULL;
  napi_value ret;
  bool is = false;
  napi_is_array(env, argv[2], &is);
  if (!is) { napi_throw_type_error(env, "EINVAL", "notify: items must be an array"); return NULL; }
  /* a notify batch follows a change behind the kernel (a restore): xattrs may have changed too */
  cap_forget_all(s);
  pthread_mutex_lock(&s->n_mut);
  int ok = s->state == ST_MOUNTED && s->n_started && !s->n_stop;
  pthread_mutex_unlock(&s->n_mut);
  if (!ok) { napi_get_boolean(env, false, &ret); return ret; }
  ll_job_t *job = calloc(1, sizeof(ll_job_t));
  napi_get_value_double(env, argv[1], &job->id);
  napi_get_array_length(env, argv[2], &job->n);
  job->items = calloc(job->n ? job->n : 1, sizeof(ll_nitem_t));
  job->results = calloc(job->n ? job->n : 1, sizeof(int32_t));
  for (uint32_t i = 0; i < job->n; i++) {
    napi_value el;
    napi_get_element(env, argv[2], i, &el);
    parse_nitem(env, el, &job->items[i]);
  }
  pthread_mutex_lock(&s->n_mut);
  if (s->n_tail) s->n_tail->next = job; else s->n_head = job;
  s->n_tail = job;
  pthread_cond_signal(&s->n_cond);
  pthread_mutex_unlock(&s->n_mut);
  napi_get_boolean(env, true, &ret);
  return ret;
}

/* ================================================================ lower-layer xattr syscalls */

/* A path or name argument: a string (UTF-8) or a Buffer (bytes); malloc'd, NUL-terminated; NULL if neither or it holds NUL. */
static char *get_cstr (napi_env env, napi_value v) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok) return NULL;
  if (t == napi_string) {
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
    char *s = malloc(len + 1);
    napi_get_value_string_utf8(env, v, s, len + 1, &len);
    if (strlen(s) != len) { free(s); return NULL; }
    return s;
  }
  void *data; size_t n;
  if (get_bytes(env, v, &data, &n) || memchr(data, 0, n)) return NULL;
  char *s = malloc(n + 1);
  memcpy(s, data, n);
  s[n] = 0;
  return s;
}

/* lxattrs(path, raw) -> raw false: { name: Buffer } | null; raw true: [[nameBuffer, valueBuffer], ...] | null; -errno on failure */
static napi_value n_lxattrs (napi_env env, napi_callback_info info) {
  ARGS(2)
  bool raw = false;
  napi_get_value_bool(env, argv[1], &raw);
  char *path = get_cstr(env, argv[0]);
  if (path == NULL) return ret_int(env, -EINVAL);
  char *names = NULL;
  ssize_t nlen;
  for (;;) {
    nlen = llistxattr(path, NULL, 0);
    if (nlen <= 0) break;
    free(names);
    names = malloc(nlen);
    ssize_t got = llistxattr(path, names, nlen);
    if (got >= 0) { nlen = got; break; }
    if (errno != ERANGE) { nlen = -1; break; } /* ERANGE: the list grew in between, retry */
  }
  if (nlen < 0) { int e = errno; free(names); free(path); return ret_int(env, -e); }
  napi_value out;
  if (nlen == 0) { free(names); free(path); napi_get_null(env, &out); return out; }
  if (raw) napi_create_array(env, &out); else napi_create_object(env, &out);
  char *val = NULL;
  size_t cap = 0;
  uint32_t count = 0;
  for (char *n = names; n < names + nlen; n += strlen(n) + 1) {
    if (*n == '\0') continue;
    ssize_t vlen;
    for (;;) {
      vlen = lgetxattr(path, n, NULL, 0);
      if (vlen < 0) break;
      if ((size_t) vlen > cap || val == NULL) { free(val); cap = vlen > 0 ? vlen : 1; val = malloc(cap); }
      ssize_t got = lgetxattr(path, n, val, cap);
      if (got >= 0) { vlen = got; break; }
      if (errno != ERANGE) { vlen = -1; break; }
    }
    if (vlen < 0) {
      int e = errno;
      if (e == ENODATA) continue; /* removed since the listing */
      free(val); free(names); free(path);
      return ret_int(env, -e);
    }
    napi_value vb = mk_buffer_copy(env, val, vlen);
    if (raw) {
      napi_value pair;
      napi_create_array_with_length(env, 2, &pair);
      napi_set_element(env, pair, 0, mk_buffer_copy(env, n, strlen(n)));
      napi_set_element(env, pair, 1, vb);
      napi_set_element(env, out, count, pair);
    } else {
      napi_set_named_property(env, out, n, vb);
    }
    count++;
  }
  free(val); free(names); free(path);
  if (count == 0) napi_get_null(env, &out);
  return out;
}

/* lsetxattr(path, name, value, flags) -> 0 | -errno */
static napi_value n_lsetxattr (napi_env env, napi_callback_info info) {
  ARGS(4)
  char *path = get_cstr(env, argv[0]), *name = get_cstr(env, argv[1]);
  void *data = NULL; size_t len = 0; double flags = 0;
  int r = 0;
  if (path == NULL || name == NULL || get_bytes(env, argv[2], &data, &len) || get_num(env, argv[3], &flags)) r = -EINVAL;
  else if (lsetxattr(path, name, len > 0 ? data : "", len, (int) flags) != 0) r = -errno;
  free(path); free(name);
  return ret_int(env, r);
}

/* lremovexattr(path, name) -> 0 | -errno */
static napi_value n_lremovexattr (napi_env env, napi_callback_info info) {
  ARGS(2)
  char *path = get_cstr(env, argv[0]), *name = get_cstr(env, argv[1]);
  int r = 0;
  if (path == NULL || name == NULL) r = -EINVAL;
  else if (lremovexattr(path, name) != 0) r = -errno;
  free(path); free(name);
  return ret_int(env, r);
}

/* ================================================================ module */

static void export_fn (napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn);
  napi_set_named_property(env, exports, name, fn);
}

static napi_value init_module (napi_env env, napi_value exports) {
  fuse_set_log_func(ll_fuse_log);
  export_fn(env, exports, "mount", n_mount);
  export_fn(env, exports, "unmount", n_unmount);
  export_fn(env, exports, "counters", n_counters);
  export_fn(env, exports, "stats", n_stats);
  export_fn(env, exports, "notify", n_notify);
  export_fn(env, exports, "replyErr", n_reply_err);
  export_fn(env, exports, "replyEntry", n_reply_entry);
  export_fn(env, exports, "replyCreate", n_reply_create);
  export_fn(env, exports, "replyAttr", n_reply_attr);
  export_fn(env, exports, "replyOpen", n_reply_open);
  export_fn(env, exports, "replyBuf", n_reply_buf);
  export_fn(env, exports, "replyReadlink", n_reply_readlink);
  export_fn(env, exports, "replyCount", n_reply_count);
  export_fn(env, exports, "replyLseek", n_reply_lseek);
  export_fn(env, exports, "replyStatfs", n_reply_statfs);
  export_fn(env, exports, "replyXattr", n_reply_xattr);
  export_fn(env, exports, "dirAdd", n_dir_add);
  export_fn(env, exports, "dirPlusAdd", n_dir_plus_add);
  export_fn(env, exports, "dirEnd", n_dir_end);
  export_fn(env, exports, "lxattrs", n_lxattrs);
  export_fn(env, exports, "lsetxattr", n_lsetxattr);
  export_fn(env, exports, "lremovexattr", n_lremovexattr);
  napi_value v, names;
  napi_create_uint32(env, LL_INO_BITS, &v); napi_set_named_property(env, exports, "INO_BITS", v);
  napi_create_uint32(env, LL_INCARNATION_BITS, &v); napi_set_named_property(env, exports, "INCARNATION_BITS", v);
  napi_create_array_with_length(env, OP_COUNT, &names);
  for (uint32_t i = 0; i < OP_COUNT; i++) { napi_create_string_utf8(env, op_names[i], NAPI_AUTO_LENGTH, &v); napi_set_element(env, names, i, v); }
  napi_set_named_property(env, exports, "OP_NAMES", names);
  napi_create_uint32(env, fuse_version(), &v); napi_set_named_property(env, exports, "LIBFUSE_VERSION", v);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init_module)

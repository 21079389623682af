#define FUSE_USE_VERSION 29

#include <uv.h>
#include <node_api.h>
#include <napi-macros.h>

#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>

#include <fuse.h>
#include <fuse_opt.h>
#include <fuse_common.h>
#include <fuse_lowlevel.h>

#include <unistd.h>
#include <sys/wait.h>
#include <sys/xattr.h> // rewindfs: lxattrs/lsetxattr/lremovexattr on the backing fs
#include <pthread.h>
#include <errno.h>
#include <time.h>
#include <stdint.h>

/*
 * rewindfs patches (vendored from fuse-native 2.2.6, MIT, Mathias Buus).
 * Every change is marked "rewindfs:" with the reason. Summary:
 *  1. utimens: mtime was passed as atime; now ns BigInts, UTIME_OMIT -> null,
 *     UTIME_NOW -> clock_gettime(CLOCK_REALTIME); flag_utime_omit_ok = 1.
 *  2. stat times carry (sec, nsec) so ns precision reaches the kernel.
 *  3. caller identity (fuse_get_context) copied into the thread locals.
 *  4. create gets the open flags.
 *  5. flag_nullpath_ok = 1; NULL paths reach JS as null.
 *  7. kernel cache invalidation on a dedicated pthread (see bottom part).
 *  8. plain synchronous xattr syscalls on the backing filesystem (never the
 *     mount): fuse_native_lxattrs, fuse_native_lsetxattr, fuse_native_lremovexattr.
 *  9. ENOENT -> ESTALE for requests on a node libfuse no longer has a path
 *     for (a rename replaced it, an unlink removed it) so the kernel looks
 *     the path up again instead of failing open/stat; a LOOKUP and a RENAME
 *     of the same name reach libfuse one after the other (see fn_stale_*).
 */


// rewindfs (issue 18): file names are bytes. A name or path crosses into
// JavaScript decoded losslessly the way Python's PEP 383 "surrogateescape"
// does: valid UTF-8 as usual (napi_create_string_utf8, unchanged), each byte
// of a sequence that is not valid UTF-8 as the lone surrogate U+DC80 + (byte
// - 0x80); a string from JavaScript goes back to exactly those bytes. Without
// this, napi's UTF-8 conversion turned every invalid byte into U+FFFD and two
// names differing only there became one (a lost file). The same mapping as
// proto/names.ts.

// Length of the valid UTF-8 sequence at b[i] (Unicode Table 3-7), 0 when none starts there.
static size_t fn_utf8_at (const unsigned char *b, size_t n, size_t i) {
  unsigned char c = b[i];
  if (c < 0x80) return 1;
  size_t left = n - i;
#define FN_CONT(k, lo, hi) ((k) < left && b[i + (k)] >= (lo) && b[i + (k)] <= (hi))
  if (c >= 0xc2 && c <= 0xdf) return FN_CONT(1, 0x80, 0xbf) ? 2 : 0;
  if (c == 0xe0) return FN_CONT(1, 0xa0, 0xbf) && FN_CONT(2, 0x80, 0xbf) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return FN_CONT(1, 0x80, 0xbf) && FN_CONT(2, 0x80, 0xbf) ? 3 : 0;
  if (c == 0xed) return FN_CONT(1, 0x80, 0x9f) && FN_CONT(2, 0x80, 0xbf) ? 3 : 0;
  if (c == 0xf0) return FN_CONT(1, 0x90, 0xbf) && FN_CONT(2, 0x80, 0xbf) && FN_CONT(3, 0x80, 0xbf) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return FN_CONT(1, 0x80, 0xbf) && FN_CONT(2, 0x80, 0xbf) && FN_CONT(3, 0x80, 0xbf) ? 4 : 0;
  if (c == 0xf4) return FN_CONT(1, 0x80, 0x8f) && FN_CONT(2, 0x80, 0xbf) && FN_CONT(3, 0x80, 0xbf) ? 4 : 0;
#undef FN_CONT
  return 0;
}

// The JavaScript string of the NUL-terminated bytes s (lossless, see above).
static napi_status fn_name_to_js (napi_env env, const char *s, napi_value *out) {
  const unsigned char *b = (const unsigned char *) s;
  size_t n = strlen(s), i = 0, k;
  while (i < n && (k = fn_utf8_at(b, n, i)) > 0) i += k;
  if (i == n) return napi_create_string_utf8(env, s, n, out);
  // at most one UTF-16 unit per byte (a 4-byte sequence gives 2)
  char16_t *u = malloc((n + 1) * sizeof(char16_t));
  if (u == NULL) return napi_generic_failure;
  size_t j = 0;
  for (i = 0; i < n; ) {
    k = fn_utf8_at(b, n, i);
    if (k == 0) { u[j++] = (char16_t) (0xdc00 + b[i]); i++; continue; }
    uint32_t cp = k == 1 ? b[i] : k == 2 ? (b[i] & 0x1f) : k == 3 ? (b[i] & 0x0f) : (b[i] & 0x07);
    for (size_t m = 1; m < k; m++) cp = (cp << 6) | (b[i + m] & 0x3f);
    if (cp >= 0x10000) { cp -= 0x10000; u[j++] = (char16_t) (0xd800 + (cp >> 10)); u[j++] = (char16_t) (0xdc00 + (cp & 0x3ff)); }
    else u[j++] = (char16_t) cp;
    i += k;
  }
  napi_status st = napi_create_string_utf16(env, u, j, out);
  free(u);
  return st;
}

// The bytes of a JavaScript string made by fn_name_to_js (malloc'ed, NUL-terminated, length in
// *len): NULL when v is not a string or holds a lone surrogate that stands for no byte.
static char *fn_name_from_js (napi_env env, napi_value v, size_t *len) {
  napi_valuetype t;
  size_t ulen = 0;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) return NULL;
  if (napi_get_value_string_utf16(env, v, NULL, 0, &ulen) != napi_ok) return NULL;
  char16_t *u = malloc((ulen + 1) * sizeof(char16_t));
  char *s = malloc(ulen * 3 + 1);
  if (u == NULL || s == NULL || napi_get_value_string_utf16(env, v, u, ulen + 1, &ulen) != napi_ok) { free(u); free(s); return NULL; }
  size_t j = 0;
  for (size_t i = 0; i < ulen; i++) {
    uint32_t c = u[i];
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < ulen && u[i + 1] >= 0xdc00 && u[i + 1] <= 0xdfff) {
      c = 0x10000 + ((c - 0xd800) << 10) + (u[++i] - 0xdc00);
      s[j++] = (char) (0xf0 | (c >> 18)); s[j++] = (char) (0x80 | ((c >> 12) & 0x3f));
      s[j++] = (char) (0x80 | ((c >> 6) & 0x3f)); s[j++] = (char) (0x80 | (c & 0x3f));
    } else if (c >= 0xdc80 && c <= 0xdcff) s[j++] = (char) (c - 0xdc00);
    else if (c >= 0xd800 && c <= 0xdfff) { free(u); free(s); return NULL; }
    else if (c < 0x80) s[j++] = (char) c;
    else if (c < 0x800) { s[j++] = (char) (0xc0 | (c >> 6)); s[j++] = (char) (0x80 | (c & 0x3f)); }
    else { s[j++] = (char) (0xe0 | (c >> 12)); s[j++] = (char) (0x80 | ((c >> 6) & 0x3f)); s[j++] = (char) (0x80 | (c & 0x3f)); }
  }
  s[j] = '\0';
  free(u);
  if (len != NULL) *len = j;
  return s;
}

static int IS_ARRAY_BUFFER_DETACH_SUPPORTED = 0;

napi_status napi_detach_arraybuffer(napi_env env, napi_value buf);

#define FUSE_NATIVE_CALLBACK(fn, blk)\
  napi_env env = ft->env;\
  napi_handle_scope scope;\
  napi_open_handle_scope(env, &scope);\
  napi_value ctx;\
  napi_get_reference_value(env, ft->ctx, &ctx);\
  napi_value callback;\
  napi_get_reference_value(env, fn, &callback);\
  blk\
  napi_close_handle_scope(env, scope);

// rewindfs: with flag_nullpath_ok libfuse may hand us a NULL path (open file
// unlinked under hard_remove); napi_create_string_utf8(NULL) would leave the
// argument undefined, so deliver an explicit null instead.
#define FN_PATH_ARGV(pos)\
  if (l->path != NULL) fn_name_to_js(env, l->path, &(argv[pos]));\
  else napi_get_null(env, &(argv[pos]));

// rewindfs: capture the caller identity on the libfuse worker thread (the
// fuse_context is thread-local there, not on the JS thread); JS reads it from
// the first 16 bytes of the thread-locals buffer (see fuse.context()).
#define FN_CAPTURE_CONTEXT(l)\
  {\
    struct fuse_context *fctx__ = fuse_get_context();\
    l->ctx[0] = fctx__->uid;\
    l->ctx[1] = fctx__->gid;\
    l->ctx[2] = (uint32_t) fctx__->pid;\
    l->ctx[3] = fctx__->umask;\
  }

// rewindfs: per-opcode request counters (issue 10): one relaxed atomic
// increment per request on the libfuse worker thread, read by JS with
// fuse_native_request_counts(). Process-wide (a daemon serves one mount),
// counted since the addon was loaded, indexed by the op_* numbers below.
#define FN_OPS 35
static uint64_t fn_request_counts[FN_OPS];
#define FN_COUNT(op) __atomic_fetch_add(&fn_request_counts[op], 1, __ATOMIC_RELAXED)

#define FUSE_NATIVE_HANDLER(name, blk)\
  fuse_thread_locals_t *l = get_thread_locals();\
  FN_COUNT(op_##name);\
  FN_CAPTURE_CONTEXT(l)\
  l->op = op_##name;\
  l->op_fn = fuse_native_dispatch_##name;\
  blk\
  uv_async_send(&(l->async));\
  uv_sem_wait(&(l->sem));\
  return l->res;

#define FUSE_METHOD(name, callbackArgs, signalArgs, signature, callBlk, callbackBlk, signalBlk)\
  static void fuse_native_dispatch_##name (uv_async_t* handle, fuse_thread_locals_t* l, fuse_thread_t* ft) {\
    uint32_t op = op_##name;\
    FUSE_NATIVE_CALLBACK(ft->handlers[op], {\
      napi_value argv[callbackArgs + 2];\
      napi_get_reference_value(env, l->self, &(argv[0]));\
      napi_create_uint32(env, l->op, &(argv[1]));\
      callbackBlk\
      NAPI_MAKE_CALLBACK(env, NULL, ctx, callback, callbackArgs + 2, argv, NULL)\
    })\
  }\
  NAPI_METHOD(fuse_native_signal_##name) {\
    NAPI_ARGV(signalArgs + 2)\
    NAPI_ARGV_BUFFER_CAST(fuse_thread_locals_t *, l, 0);\
    NAPI_ARGV_INT32(res, 1);\
    signalBlk\
    l->res = res;\
    uv_sem_post(&(l->sem));\
    return NULL;\
  }\
  static int fuse_native_##name signature {\
    FUSE_NATIVE_HANDLER(name, callBlk)\
  }

#define FUSE_METHOD_VOID(name, callbackArgs, signalArgs, signature, callBlk, callbackBlk)\
  FUSE_METHOD(name, callbackArgs, signalArgs, signature, callBlk, callbackBlk, {})

#define FUSE_UINT64_TO_INTS_ARGV(n, pos)\
  uint32_t low##pos = n % 4294967296;\
  uint32_t high##pos = (n - low##pos) / 4294967296;\
  napi_create_uint32(env, low##pos, &(argv[pos]));\
  napi_create_uint32(env, high##pos, &(argv[pos + 1]));


// Opcodes

static const uint32_t op_init = 0;
static const uint32_t op_error = 1;
static const uint32_t op_access = 2;
static const uint32_t op_statfs = 3;
static const uint32_t op_fgetattr = 4;
static const uint32_t op_getattr = 5;
static const uint32_t op_flush = 6;
static const uint32_t op_fsync = 7;
static const uint32_t op_fsyncdir = 8;
static const uint32_t op_readdir = 9;
static const uint32_t op_truncate = 10;
static const uint32_t op_ftruncate = 11;
static const uint32_t op_utimens = 12;
static const uint32_t op_readlink = 13;
static const uint32_t op_chown = 14;
static const uint32_t op_chmod = 15;
static const uint32_t op_mknod = 16;
static const uint32_t op_setxattr = 17;
static const uint32_t op_getxattr = 18;
static const uint32_t op_listxattr = 19;
static const uint32_t op_removexattr = 20;
static const uint32_t op_open = 21;
static const uint32_t op_opendir = 22;
static const uint32_t op_read = 23;
static const uint32_t op_write = 24;
static const uint32_t op_release = 25;
static const uint32_t op_releasedir = 26;
static const uint32_t op_create = 27;
static const uint32_t op_unlink = 28;
static const uint32_t op_rename = 29;
static const uint32_t op_link = 30;
static const uint32_t op_symlink = 31;
static const uint32_t op_mkdir = 32;
static const uint32_t op_rmdir = 33;

// Data structures

struct fn_job;

typedef struct {
  napi_env env;
  pthread_t thread;
  pthread_attr_t attr;
  napi_ref ctx;
  napi_ref malloc;

  // Operation handlers
  napi_ref handlers[35];

  struct fuse *fuse;
  struct fuse_chan *ch;
  char mnt[1024];
  char mntopts[1024];
  int mounted;

  uv_async_t async;
  uv_mutex_t mut;
  uv_sem_t sem;

  // rewindfs: invalidation state. inval_lock guards ft->fuse for the notify
  // thread: alive is 1 between fuse_new and the end of fuse_loop_mt, cleared
  // under the write lock before fuse_unmount/fuse_destroy.
  uv_rwlock_t inval_lock;
  int inval_inited;
  int alive;
  int layout_ok;
  // rewindfs: 1 when the channel answers ESTALE for nodes without a path (patch 9)
  int stale_wrapped;
  // rewindfs: dedicated notify pthread + job queue (never the JS thread, never
  // the libuv pool, which async handlers need while a notify blocks).
  pthread_t notify_thread;
  pthread_mutex_t q_mut;
  pthread_cond_t q_cond;
  struct fn_job *q_head;
  struct fn_job *q_tail;
  int q_stop;
  int notify_started;
  napi_threadsafe_function tsfn;
} fuse_thread_t;

typedef struct {
  // rewindfs: MUST stay the first member: uid, gid, pid, umask of the request
  // currently served by this thread (read by JS at byte offset 0).
  uint32_t ctx[4];

  napi_ref self;

  // Opcode
  uint32_t op;
  void *op_fn;

  // Payloads
  const char *path;
  const char *dest;
  char *linkname;
  struct fuse_file_info *info;
  const void *buf;
  off_t offset;
  size_t len;
  mode_t mode;
  dev_t dev;
  uid_t uid;
  gid_t gid;
  // rewindfs: ns since the epoch, and whether the time is UTIME_OMIT
  int64_t atime;
  int64_t mtime;
  int atime_omit;
  int mtime_omit;
  int32_t res;

  // Extended attributes
  const char *name;
  const char *value;
  char *list;
  size_t size;
  uint32_t position;
  int flags;

  // Stat + Statfs
  struct stat *stat;
  struct statvfs *statvfs;

  // Readdir
  fuse_fill_dir_t readdir_filler;

  // Internal bookkeeping
  fuse_thread_t *fuse;
  uv_sem_t sem;
  uv_async_t async;

} fuse_thread_locals_t;

static pthread_key_t thread_locals_key;
static fuse_thread_locals_t* get_thread_locals();

// Helpers
// TODO: Extract into a separate file.

static uint64_t uint32s_to_uint64 (uint32_t **ints) {
  uint64_t low = *((*ints)++);
  uint64_t high = *((*ints)++);
  return high * 4294967296 + low;
}

// rewindfs: times travel as (sec low, sec high [two's complement int64], nsec)
// instead of milliseconds, so nanosecond stat times reach the kernel.
static void uint32s_to_timespec (struct timespec* ts, uint32_t** ints) {
  uint64_t sec = uint32s_to_uint64(ints);
  uint32_t nsec = *((*ints)++);
  ts->tv_sec = (time_t) (int64_t) sec;
  ts->tv_nsec = nsec < 1000000000 ? nsec : 999999999;
}

// rewindfs: utimens helper. UTIME_NOW becomes the current CLOCK_REALTIME in ns
// (JS cannot tell otherwise), UTIME_OMIT is flagged so JS receives null.
static void fn_utime_to_ns (const struct timespec* ts, int64_t *ns, int *omit) {
  *omit = 0;
  if (ts->tv_nsec == UTIME_OMIT) {
    *omit = 1;
    *ns = 0;
    return;
  }
  struct timespec now;
  if (ts->tv_nsec == UTIME_NOW) {
    clock_gettime(CLOCK_REALTIME, &now);
    ts = &now;
  }
  *ns = (int64_t) ts->tv_sec * 1000000000LL + (int64_t) ts->tv_nsec;
}

static void populate_stat (uint32_t *ints, struct stat* stat) {
  stat->st_mode = *ints++;
  stat->st_uid = *ints++;
  stat->st_gid = *ints++;
  stat->st_size = uint32s_to_uint64(&ints);
  stat->st_dev = *ints++;
  stat->st_nlink = *ints++;
  stat->st_ino = *ints++;
  stat->st_rdev = *ints++;
  stat->st_blksize = *ints++;
  stat->st_blocks = uint32s_to_uint64(&ints);
#ifdef __APPLE__
  uint32s_to_timespec(&stat->st_atimespec, &ints);
  uint32s_to_timespec(&stat->st_mtimespec, &ints);
  uint32s_to_timespec(&stat->st_ctimespec, &ints);
#else
  uint32s_to_timespec(&stat->st_atim, &ints);
  uint32s_to_timespec(&stat->st_mtim, &ints);
  uint32s_to_timespec(&stat->st_ctim, &ints);
#endif
}

static void populate_statvfs (uint32_t *ints, struct statvfs* statvfs) {
  statvfs->f_bsize = *ints++;
  statvfs->f_frsize = *ints++;
  statvfs->f_blocks = *ints++;
  statvfs->f_bfree = *ints++;
  statvfs->f_bavail = *ints++;
  statvfs->f_files = *ints++;
  statvfs->f_ffree = *ints++;
  statvfs->f_favail = *ints++;
  statvfs->f_fsid = *ints++;
  statvfs->f_flag = *ints++;
  statvfs->f_namemax = *ints++;
}

// Methods

FUSE_METHOD(statfs, 1, 1, (const char * path, struct statvfs *statvfs), {
  l->path = path;
  l->statvfs = statvfs;
}, {
  FN_PATH_ARGV(2)
}, {
  NAPI_ARGV_BUFFER_CAST(uint32_t*, ints, 2)
  populate_statvfs(ints, l->statvfs);
})

FUSE_METHOD(getattr, 1, 1, (const char *path, struct stat *stat), {
  l->path = path;
  l->stat = stat;
}, {
  FN_PATH_ARGV(2)
}, {
  NAPI_ARGV_BUFFER_CAST(uint32_t*, ints, 2)
  populate_stat(ints, l->stat);
})

FUSE_METHOD(fgetattr, 2, 1, (const char *path, struct stat *stat, struct fuse_file_info *info), {
  l->path = path;
  l->stat = stat;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[3]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
  }
}, {
  NAPI_ARGV_BUFFER_CAST(uint32_t*, ints, 2)
  populate_stat(ints, l->stat);
})

FUSE_METHOD_VOID(access, 2, 0, (const char *path, int mode), {
  l->path = path;
  l->mode = mode;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
})

FUSE_METHOD(open, 2, 1, (const char *path, struct fuse_file_info *info), {
  l->path = path;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->flags, &(argv[3]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
  }
}, {
  NAPI_ARGV_INT32(fd, 2)
  if (fd != 0) {
    l->info->fh = fd;
  }
})

FUSE_METHOD(opendir, 3, 1, (const char *path, struct fuse_file_info *info), {
  l->path = path;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[3]));
    napi_create_uint32(env, l->info->flags, &(argv[4]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
    napi_create_uint32(env, 0, &(argv[4]));
  }
}, {
  NAPI_ARGV_INT32(fd, 2)
  if (fd != 0) {
    l->info->fh = fd;
  }
})

// rewindfs: pass the open flags (O_EXCL, O_APPEND, O_WRONLY...) as a 3rd argument
FUSE_METHOD(create, 3, 1, (const char *path, mode_t mode, struct fuse_file_info *info), {
  l->path = path;
  l->mode = mode;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
  napi_create_uint32(env, l->info != NULL ? (uint32_t) l->info->flags : 0, &(argv[4]));
}, {
  NAPI_ARGV_INT32(fd, 2)
  if (fd != 0) {
    l->info->fh = fd;
  }
})

// rewindfs: upstream passed l->atime twice (mtime was lost) and truncated to ms.
// Now: (path, atime, mtime) as BigInt ns since the epoch, null for UTIME_OMIT.
FUSE_METHOD_VOID(utimens, 3, 0, (const char *path, const struct timespec tv[2]), {
  l->path = path;
  if (tv == NULL) {
    struct timespec now[2];
    now[0].tv_sec = now[1].tv_sec = 0;
    now[0].tv_nsec = now[1].tv_nsec = UTIME_NOW;
    fn_utime_to_ns(&now[0], &l->atime, &l->atime_omit);
    fn_utime_to_ns(&now[1], &l->mtime, &l->mtime_omit);
  } else {
    fn_utime_to_ns(&tv[0], &l->atime, &l->atime_omit);
    fn_utime_to_ns(&tv[1], &l->mtime, &l->mtime_omit);
  }
}, {
  FN_PATH_ARGV(2)
  if (l->atime_omit) napi_get_null(env, &(argv[3]));
  else napi_create_bigint_int64(env, l->atime, &(argv[3]));
  if (l->mtime_omit) napi_get_null(env, &(argv[4]));
  else napi_create_bigint_int64(env, l->mtime, &(argv[4]));
})

FUSE_METHOD_VOID(release, 2, 0, (const char *path, struct fuse_file_info *info), {
  l->path = path;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[3]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
  }
})

FUSE_METHOD_VOID(releasedir, 2, 0, (const char *path, struct fuse_file_info *info), {
  l->path = path;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[3]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
  }
})

FUSE_METHOD(read, 6, 2, (const char *path, char *buf, size_t len, off_t offset, struct fuse_file_info *info), {
  l->path = path;
  l->buf = buf;
  l->len = len;
  l->offset = offset;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->info->fh, &(argv[3]));
  napi_create_external_buffer(env, l->len, (char *) l->buf, NULL, NULL, &(argv[4]));
  napi_create_uint32(env, l->len, &(argv[5]));
  FUSE_UINT64_TO_INTS_ARGV(l->offset, 6)
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[3]) == napi_ok);
})

FUSE_METHOD(write, 6, 2, (const char *path, const char *buf, size_t len, off_t offset, struct fuse_file_info *info), {
  l->path = path;
  l->buf = buf;
  l->len = len;
  l->offset = offset;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->info->fh, &(argv[3]));
  napi_create_external_buffer(env, l->len, (char *) l->buf, NULL, NULL, &(argv[4]));
  napi_create_uint32(env, l->len, &(argv[5]));
  FUSE_UINT64_TO_INTS_ARGV(l->offset, 6)
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[3]) == napi_ok);
})

FUSE_METHOD(readdir, 1, 2, (const char *path, void *buf, fuse_fill_dir_t filler, off_t offset, struct fuse_file_info *info), {
  l->buf = buf;
  l->path = path;
  l->offset = offset;
  l->info = info;
  l->readdir_filler = filler;
}, {
  FN_PATH_ARGV(2)
}, {
  uint32_t stats_length;
  uint32_t names_length;
  napi_get_array_length(env, argv[3], &stats_length);
  napi_get_array_length(env, argv[2], &names_length);

  napi_value raw_names = argv[2];
  napi_value raw_stats = argv[3];

  if (names_length != stats_length) {
    NAPI_FOR_EACH(raw_names, raw_name) {
      char *name = fn_name_from_js(env, raw_name, NULL);
      if (name == NULL) continue; // not a name (the adapter never sends one)
      int err = l->readdir_filler((char *) l->buf, name, NULL, 0);
      free(name);
      if (err == 1) {
        break;
      }
    }
  } else {
    NAPI_FOR_EACH(raw_names, raw_name) {
      char *name = fn_name_from_js(env, raw_name, NULL);
      if (name == NULL) continue; // not a name (the adapter never sends one)
      napi_value raw_stat;
      napi_get_element(env, raw_stats, i, &raw_stat);

      NAPI_BUFFER_CAST(uint32_t*, stats_array, raw_stat);
      struct stat st;
      populate_stat(stats_array, &st);

      // TODO: It turns out readdirplus likely won't work with FUSE 29...
      // Metadata caching between readdir/getattr will be enabled when we upgrade fuse-shared-library
      int err = l->readdir_filler((char *) l->buf, name, (struct stat *) &st, 0);
      free(name);
      if (err == 1) {
        break;
      }
    }
  }
})

#ifdef __APPLE__

FUSE_METHOD(setxattr, 5, 1, (const char *path, const char *name, const char *value, size_t size, int flags, uint32_t position), {
  l->path = path;
  l->name = name;
  l->value = value;
  l->size = size;
  l->flags = flags;
  l->position = position;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->name, &(argv[3]));
  napi_create_external_buffer(env, l->size, (char *) l->value, NULL, NULL, &(argv[4]));
  napi_create_uint32(env, l->position, &(argv[5]));
  napi_create_uint32(env, l->flags, &(argv[6]));
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[2]) == napi_ok);
})

FUSE_METHOD(getxattr, 4, 1, (const char *path, const char *name, char *value, size_t size, uint32_t position), {
  l->path = path;
  l->name = name;
  l->value = value;
  l->size = size;
  l->position = position;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->name, &(argv[3]));
  napi_create_external_buffer(env, l->size, (char *) l->value, NULL, NULL, &(argv[4]));
  napi_create_uint32(env, l->position, &(argv[5]));
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[2]) == napi_ok);
})

#else

FUSE_METHOD(setxattr, 5, 1, (const char *path, const char *name, const char *value, size_t size, int flags), {
  l->path = path;
  l->name = name;
  l->value = value;
  l->size = size;
  l->flags = flags;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->name, &(argv[3]));
  napi_create_external_buffer(env, l->size, (char *) l->value, NULL, NULL, &(argv[4]));
  napi_create_uint32(env, 0, &(argv[5])); // normalize apis between mac and linux
  napi_create_uint32(env, l->flags, &(argv[6]));
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[2]) == napi_ok);
})

FUSE_METHOD(getxattr, 4, 1, (const char *path, const char *name, char *value, size_t size), {
  l->path = path;
  l->name = name;
  l->value = value;
  l->size = size;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->name, &(argv[3]));
  napi_create_external_buffer(env, l->size, (char *) l->value, NULL, NULL, &(argv[4]));
  napi_create_uint32(env, 0, &(argv[5]));
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[2]) == napi_ok);
})

#endif

FUSE_METHOD(listxattr, 2, 1, (const char *path, char *list, size_t size), {
  l->path = path;
  l->list = list;
  l->size = size;
}, {
  FN_PATH_ARGV(2)
  napi_create_external_buffer(env, l->size, l->list, NULL, NULL, &(argv[3]));
}, {
  if (IS_ARRAY_BUFFER_DETACH_SUPPORTED == 1) assert(napi_detach_arraybuffer(env, argv[2]) == napi_ok);
})

FUSE_METHOD_VOID(removexattr, 2, 0, (const char *path, const char *name), {
  l->path = path;
  l->name = name;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->name, &(argv[3]));
})

FUSE_METHOD_VOID(flush, 2, 0, (const char *path, struct fuse_file_info *info), {
  l->path = path;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[3]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
  }
})

FUSE_METHOD_VOID(fsync, 3, 0, (const char *path, int datasync, struct fuse_file_info *info), {
  l->path = path;
  l->mode = datasync;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[4]));
  } else {
    napi_create_uint32(env, 0, &(argv[4]));
  }
})

FUSE_METHOD_VOID(fsyncdir, 3, 0, (const char *path, int datasync, struct fuse_file_info *info), {
  l->path = path;
  l->mode = datasync;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[4]));
  } else {
    napi_create_uint32(env, 0, &(argv[4]));
  }
})


FUSE_METHOD_VOID(truncate, 3, 0, (const char *path, off_t size), {
  l->path = path;
  l->offset = size;
}, {
  FN_PATH_ARGV(2)
  FUSE_UINT64_TO_INTS_ARGV(l->offset, 3)
})

FUSE_METHOD_VOID(ftruncate, 4, 0, (const char *path, off_t size, struct fuse_file_info *info), {
  l->path = path;
  l->offset = size;
  l->info = info;
}, {
  FN_PATH_ARGV(2)
  if (l->info != NULL) {
    napi_create_uint32(env, l->info->fh, &(argv[3]));
  } else {
    napi_create_uint32(env, 0, &(argv[3]));
  }
  FUSE_UINT64_TO_INTS_ARGV(l->offset, 4)
})

FUSE_METHOD(readlink, 1, 1, (const char *path, char *linkname, size_t len), {
  l->path = path;
  l->linkname = linkname;
  l->len = len;
}, {
  FN_PATH_ARGV(2)
}, {
  char *linkname = fn_name_from_js(env, argv[2], NULL);
  if (linkname == NULL) l->linkname[0] = '\0'; // not a target (the adapter never sends one)
  else { strncpy(l->linkname, linkname, l->len); free(linkname); }
})

FUSE_METHOD_VOID(chown, 3, 0, (const char *path, uid_t uid, gid_t gid), {
  l->path = path;
  l->uid = uid;
  l->gid = gid;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->uid, &(argv[3]));
  napi_create_uint32(env, l->gid, &(argv[4]));
})

FUSE_METHOD_VOID(chmod, 2, 0, (const char *path, mode_t mode), {
  l->path = path;
  l->mode = mode;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
})

FUSE_METHOD_VOID(mknod, 3, 0, (const char *path, mode_t mode, dev_t dev), {
  l->path = path;
  l->mode = mode;
  l->dev = dev;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
  napi_create_uint32(env, l->dev, &(argv[4]));
})

FUSE_METHOD_VOID(unlink, 1, 0, (const char *path), {
  l->path = path;
}, {
  FN_PATH_ARGV(2)
})

FUSE_METHOD_VOID(rename, 2, 0, (const char *path, const char *dest), {
  l->path = path;
  l->dest = dest;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->dest, &(argv[3]));
})

FUSE_METHOD_VOID(link, 2, 0, (const char *path, const char *dest), {
  l->path = path;
  l->dest = dest;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->dest, &(argv[3]));
})

FUSE_METHOD_VOID(symlink, 2, 0, (const char *path, const char *dest), {
  l->path = path;
  l->dest = dest;
}, {
  FN_PATH_ARGV(2)
  fn_name_to_js(env, l->dest, &(argv[3]));
})

FUSE_METHOD_VOID(mkdir, 2, 0, (const char *path, mode_t mode), {
  l->path = path;
  l->mode = mode;
}, {
  FN_PATH_ARGV(2)
  napi_create_uint32(env, l->mode, &(argv[3]));
})

FUSE_METHOD_VOID(rmdir, 1, 0, (const char *path), {
  l->path = path;
}, {
  FN_PATH_ARGV(2)
})

static void fuse_native_dispatch_init (uv_async_t* handle, fuse_thread_locals_t* l, fuse_thread_t* ft) {\
  FUSE_NATIVE_CALLBACK(ft->handlers[op_init], {
    napi_value argv[2];

    napi_get_reference_value(env, l->self, &(argv[0]));
    napi_create_uint32(env, l->op, &(argv[1]));

    NAPI_MAKE_CALLBACK(env, NULL, ctx, callback, 2, argv, NULL);
  })
}

NAPI_METHOD(fuse_native_signal_init) {
  NAPI_ARGV(2)
  NAPI_ARGV_BUFFER_CAST(fuse_thread_locals_t *, l, 0);
  NAPI_ARGV_INT32(res, 1);
  l->res = res;
  uv_sem_post(&(l->sem));
  return NULL;
}

static void * fuse_native_init (struct fuse_conn_info *conn) {
  fuse_thread_locals_t *l = get_thread_locals();
  FN_COUNT(op_init);
  FN_CAPTURE_CONTEXT(l)

  l->op = op_init;
  l->op_fn = fuse_native_dispatch_init;

  uv_async_send(&(l->async));
  uv_sem_wait(&(l->sem));

  return l->fuse;
}

// Top-level dispatcher

static void fuse_native_dispatch (uv_async_t* handle) {
  fuse_thread_locals_t *l = (fuse_thread_locals_t *) handle->data;
  fuse_thread_t *ft = l->fuse;
  void (*fn)(uv_async_t *, fuse_thread_locals_t *, fuse_thread_t *) = l->op_fn;

  fn(handle, l, ft);
}

static void fuse_native_async_init (uv_async_t* handle) {
  fuse_thread_t *ft = (fuse_thread_t *) handle->data;
  fuse_thread_locals_t *l;

  FUSE_NATIVE_CALLBACK(ft->malloc, {
    napi_value argv[1];
    napi_create_uint32(ft->env, (uint32_t) sizeof(fuse_thread_locals_t), &(argv[0]));

    napi_value buf;
    NAPI_MAKE_CALLBACK(ft->env, NULL, ctx, callback, 1, argv, &buf);

    size_t l_len;

    napi_get_buffer_info(env, buf, (void **) &l, &l_len);
    napi_create_reference(env, buf, 1, &(l->self));
  })


  int err = uv_async_init(uv_default_loop(), &(l->async), (uv_async_cb) fuse_native_dispatch);
  assert(err >= 0);

  uv_unref((uv_handle_t *) &(l->async));

  uv_sem_init(&(l->sem), 0);
  l->async.data = l;
  ft->async.data = l;
  l->fuse = ft;

  uv_sem_post(&(ft->sem));
}

static fuse_thread_locals_t* get_thread_locals () {
  struct fuse_context *ctx = fuse_get_context();
  fuse_thread_t *ft = (fuse_thread_t *) ctx->private_data;

  void *data = pthread_getspecific(thread_locals_key);

  if (data != NULL) {
    return (fuse_thread_locals_t *) data;
  }

  // Need to lock the mutation of l->async.
  uv_mutex_lock(&(ft->mut));
  ft->async.data = ft;

  // Notify the main thread to uv_async_init l->async.
  uv_async_send(&(ft->async));
  uv_sem_wait(&(ft->sem));

  fuse_thread_locals_t *l = (fuse_thread_locals_t*) ft->async.data;

  pthread_setspecific(thread_locals_key, (void *) l);
  uv_mutex_unlock(&(ft->mut));

  return l;
}

static void* start_fuse_thread (void *data) {
  fuse_thread_t *ft = (fuse_thread_t *) data;
  fuse_loop_mt(ft->fuse);

  // rewindfs: no notification may touch the session once teardown starts.
  uv_rwlock_wrlock(&(ft->inval_lock));
  ft->alive = 0;
  uv_rwlock_wrunlock(&(ft->inval_lock));

  fuse_unmount(ft->mnt, ft->ch);
  fuse_session_remove_chan(ft->ch);
  fuse_destroy(ft->fuse);

  return NULL;
}

// ---------------------------------------------------------------------------
// rewindfs: kernel cache invalidation (see rewindfs research
// fuse-invalidation.md §1-3). The high-level libfuse 2.9 API hides the channel
// and the node ids; we get the channel with fuse_session_next_chan and read the
// node ids from a mirror of libfuse 2.9.9's private `struct fuse` / `struct
// node` prefix, verified at mount time (fn_check_layout). If the check fails,
// path-based items return -ENOSYS, id-based items still work.
// ---------------------------------------------------------------------------

struct fn_node;

struct fn_node_table {
  struct fn_node **array;
  size_t use;
  size_t size;
  size_t split;
};

struct fn_list_head {
  struct fn_list_head *next;
  struct fn_list_head *prev;
};

// Mirror of the prefix of libfuse 2.9.9 lib/fuse.c `struct fuse`.
struct fn_fuse_prefix {
  struct fuse_session *se;
  struct fn_node_table name_table;
  struct fn_node_table id_table;
  struct fn_list_head lru_table;
  fuse_ino_t ctr;
  unsigned int generation;
  unsigned int hidectr;
  pthread_mutex_t lock;
};

// Mirror of the prefix of libfuse 2.9.9 lib/fuse.c `struct node`.
struct fn_node {
  struct fn_node *name_next;
  struct fn_node *id_next;
  fuse_ino_t nodeid;
  unsigned int generation;
  int refctr;
  struct fn_node *parent;
  char *name;
  uint64_t nlookup;
};

// Copies of libfuse 2.9.9 id_hash / name_hash / get_node_nocheck / lookup_node.
static size_t fn_id_hash (struct fn_fuse_prefix *f, fuse_ino_t ino) {
  uint64_t hash = ((uint32_t) ino * 2654435761U) % f->id_table.size;
  uint64_t oldhash = hash % (f->id_table.size / 2);
  if (oldhash >= f->id_table.split) return oldhash;
  return hash;
}

static size_t fn_name_hash (struct fn_fuse_prefix *f, fuse_ino_t parent, const char *name) {
  uint64_t hash = parent;
  uint64_t oldhash;
  for (; *name; name++) hash = hash * 31 + (unsigned char) *name;
  hash %= f->name_table.size;
  oldhash = hash % (f->name_table.size / 2);
  if (oldhash >= f->name_table.split) return oldhash;
  return hash;
}

static struct fn_node * fn_get_node (struct fn_fuse_prefix *f, fuse_ino_t nodeid) {
  struct fn_node *node;
  for (node = f->id_table.array[fn_id_hash(f, nodeid)]; node != NULL; node = node->id_next) {
    if (node->nodeid == nodeid) return node;
  }
  return NULL;
}

static struct fn_node * fn_lookup_node (struct fn_fuse_prefix *f, fuse_ino_t parent, const char *name) {
  struct fn_node *node;
  for (node = f->name_table.array[fn_name_hash(f, parent, name)]; node != NULL; node = node->name_next) {
    if (node->parent != NULL && node->parent->nodeid == parent && node->name != NULL && strcmp(node->name, name) == 0) return node;
  }
  return NULL;
}

// Called once at mount, before the loop thread starts (no concurrency yet).
static int fn_check_layout (fuse_thread_t *ft) {
  if (fuse_version() != 29) return 0;
  struct fn_fuse_prefix *f = (struct fn_fuse_prefix *) ft->fuse;
  if (f == NULL || f->se != fuse_get_session(ft->fuse)) return 0;
  if (f->id_table.array == NULL || f->name_table.array == NULL) return 0;
  if (f->id_table.size < 2 || f->name_table.size < 2) return 0;
  if (f->id_table.split > f->id_table.size || f->name_table.split > f->name_table.size) return 0;
  pthread_mutex_lock(&(f->lock));
  struct fn_node *root = fn_get_node(f, FUSE_ROOT_ID);
  int ok = root != NULL && root->nodeid == FUSE_ROOT_ID && root->parent == NULL &&
           root->name != NULL && strcmp(root->name, "/") == 0;
  pthread_mutex_unlock(&(f->lock));
  return ok;
}

// Walks libfuse's name table from the root along path (absolute), stopping
// before `stop` (a pointer into path) when given. Returns the node or NULL.
// Caller holds f->lock.
static struct fn_node * fn_walk_locked (struct fn_fuse_prefix *f, const char *p, const char *stop) {
  char comp[1024];
  struct fn_node *node = fn_get_node(f, FUSE_ROOT_ID);
  while (node != NULL) {
    while (*p == '/') p++;
    if (*p == '\0') break;
    if (stop != NULL && p >= stop) break;
    const char *e = p;
    while (*e && *e != '/') e++;
    size_t n = e - p;
    if (n >= sizeof(comp)) return NULL;
    memcpy(comp, p, n);
    comp[n] = '\0';
    node = fn_lookup_node(f, node->nodeid, comp);
    p = e;
  }
  return node;
}

// Resolve an absolute path to a libfuse node id, holding libfuse's own f->lock
// (libfuse never holds it while waiting for a handler, so this cannot block on
// JS). Returns the node id, 0 if libfuse has no node (nothing cached), or
// -EINVAL for a malformed path. With want_parent, resolves the parent and
// stores the final component in *base (pointer into path).
// Caller holds inval_lock (read) with alive && layout_ok.
static int64_t fn_resolve (fuse_thread_t *ft, const char *path, int want_parent, const char **base) {
  if (path == NULL || path[0] != '/') return -EINVAL;
  struct fn_fuse_prefix *f = (struct fn_fuse_prefix *) ft->fuse;
  char comp[1024];
  const char *p = path;
  const char *last = NULL;
  size_t last_len = 0;

  if (want_parent) {
    // find the last component
    const char *end = path + strlen(path);
    while (end > path && end[-1] == '/') end--;
    if (end == path) return -EINVAL; // "/" has no parent
    const char *s = end;
    while (s > path && s[-1] != '/') s--;
    last = s;
    last_len = end - s;
    if (last_len >= sizeof(comp)) return -ENAMETOOLONG;
    if (base != NULL) *base = last;
  }

  pthread_mutex_lock(&(f->lock));
  struct fn_node *node = fn_walk_locked(f, p, want_parent ? last : NULL);
  int64_t id = node != NULL ? (int64_t) node->nodeid : 0;
  pthread_mutex_unlock(&(f->lock));
  return id;
}

// rewindfs: item [5, path]. A restore that gives a name another file (or
// none) leaves libfuse's node for that name in place while a handle is open
// on it; the next lookup of the name would answer the same node id, and the
// kernel would merge the new file into the inode the old handle uses (its
// size and pages). A new generation on the node makes the kernel, at that
// lookup, mark its old inode bad ("nodeid was reused, any I/O on the old
// inode should fail", fuse_iget) and make a fresh one. libfuse itself only
// copies node->generation into its replies. Returns 0, 1 when libfuse has no
// node for the path, or -EINVAL for a malformed path.
// Caller holds inval_lock (read) with alive && layout_ok.
static int fn_renew (fuse_thread_t *ft, const char *path) {
  if (path == NULL || path[0] != '/' || path[1] == '\0') return -EINVAL;
  struct fn_fuse_prefix *f = (struct fn_fuse_prefix *) ft->fuse;
  pthread_mutex_lock(&(f->lock));
  struct fn_node *node = fn_walk_locked(f, path, NULL);
  if (node != NULL) node->generation++;
  pthread_mutex_unlock(&(f->lock));
  return node != NULL ? 0 : 1;
}

// rewindfs: item [6]. libfuse forgets the name of a file unlinked (or
// replaced by a rename) while a handle stays open on it, so no path reaches
// that node any more; a restore that changes such a file must still drop the
// kernel's attributes and pages of it. Invalidates (attributes and all pages)
// every node libfuse holds without a name. Returns how many: O(nodes) under
// f->lock, the notifications after it is released.
// Caller holds inval_lock (read) with alive && layout_ok.
static int fn_inval_nameless (fuse_thread_t *ft, struct fuse_chan *ch) {
  struct fn_fuse_prefix *f = (struct fn_fuse_prefix *) ft->fuse;
  size_t cap = 16, n = 0;
  fuse_ino_t *ids = malloc(cap * sizeof(fuse_ino_t));
  if (ids == NULL) return -ENOMEM;
  pthread_mutex_lock(&(f->lock));
  for (size_t h = 0; h < f->id_table.size; h++) {
    for (struct fn_node *node = f->id_table.array[h]; node != NULL; node = node->id_next) {
      if (node->name != NULL || node->nodeid == FUSE_ROOT_ID || node->nlookup == 0) continue;
      if (n == cap) {
        fuse_ino_t *more = realloc(ids, 2 * cap * sizeof(fuse_ino_t));
        if (more == NULL) break;
        ids = more;
        cap *= 2;
      }
      ids[n++] = node->nodeid;
    }
  }
  pthread_mutex_unlock(&(f->lock));
  for (size_t i = 0; i < n; i++) fuse_lowlevel_notify_inval_inode(ch, ids[i], 0, 0);
  free(ids);
  return (int) n;
}

typedef struct {
  int32_t type;   // 0..6, or -1 for a malformed item (result -EINVAL)
  int64_t a;      // parent / nodeid / off
  int64_t b;      // child / off / len
  int64_t c;      // len
  char *str;      // name or path (malloc'd)
} fn_item_t;

typedef struct fn_job {
  struct fn_job *next;
  fn_item_t *items;
  uint32_t n;
  int32_t *results;
  double ms;
  napi_ref cb;
} fn_job_t;

// Runs on the notify pthread only.
static void fn_run_items (fuse_thread_t *ft, fn_job_t *job) {
  uv_rwlock_rdlock(&(ft->inval_lock));
  if (!ft->alive || ft->fuse == NULL) {
    for (uint32_t i = 0; i < job->n; i++) job->results[i] = -ENOTCONN;
    uv_rwlock_rdunlock(&(ft->inval_lock));
    return;
  }
  struct fuse_chan *ch = fuse_session_next_chan(fuse_get_session(ft->fuse), NULL);
  for (uint32_t i = 0; i < job->n; i++) {
    fn_item_t *it = &(job->items[i]);
    int res = -EINVAL;
    const char *base = NULL;
    int64_t id;
    switch (it->type) {
      case 0: // [0, parent, name]
        res = fuse_lowlevel_notify_inval_entry(ch, (fuse_ino_t) it->a, it->str, strlen(it->str));
        break;
      case 1: // [1, nodeid, off, len]
        res = fuse_lowlevel_notify_inval_inode(ch, (fuse_ino_t) it->a, (off_t) it->b, (off_t) it->c);
        break;
      case 2: // [2, parent, child, name]
        res = fuse_lowlevel_notify_delete(ch, (fuse_ino_t) it->a, (fuse_ino_t) it->b, it->str, strlen(it->str));
        break;
      case 3: // [3, path]: inval_entry(parent(path), basename(path))
        if (!ft->layout_ok) { res = -ENOSYS; break; }
        id = fn_resolve(ft, it->str, 1, &base);
        if (id < 0) { res = (int) id; break; }
        if (id == 0) { res = 1; break; }
        {
          size_t blen = 0;
          while (base[blen] && base[blen] != '/') blen++;
          res = fuse_lowlevel_notify_inval_entry(ch, (fuse_ino_t) id, base, blen);
        }
        break;
      case 4: // [4, path, off, len]: inval_inode(node(path), off, len)
        if (!ft->layout_ok) { res = -ENOSYS; break; }
        id = fn_resolve(ft, it->str, 0, NULL);
        if (id < 0) { res = (int) id; break; }
        if (id == 0) { res = 1; break; }
        res = fuse_lowlevel_notify_inval_inode(ch, (fuse_ino_t) id, (off_t) it->a, (off_t) it->b);
        break;
      case 5: // [5, path]: new generation for node(path)
        if (!ft->layout_ok) { res = -ENOSYS; break; }
        res = fn_renew(ft, it->str);
        break;
      case 6: // [6]: inval_inode of every node without a name
        if (!ft->layout_ok) { res = -ENOSYS; break; }
        res = fn_inval_nameless(ft, ch);
        break;
      default:
        res = -EINVAL;
    }
    job->results[i] = res;
  }
  uv_rwlock_rdunlock(&(ft->inval_lock));
}

static void fn_free_job (fn_job_t *job) {
  for (uint32_t i = 0; i < job->n; i++) free(job->items[i].str);
  free(job->items);
  free(job->results);
  free(job);
}

static double fn_now_ms () {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void * fn_notify_thread (void *data) {
  fuse_thread_t *ft = (fuse_thread_t *) data;
  for (;;) {
    pthread_mutex_lock(&(ft->q_mut));
    while (ft->q_head == NULL && !ft->q_stop) pthread_cond_wait(&(ft->q_cond), &(ft->q_mut));
    fn_job_t *job = ft->q_head;
    if (job == NULL) { // stopped and drained
      pthread_mutex_unlock(&(ft->q_mut));
      break;
    }
    ft->q_head = job->next;
    if (ft->q_head == NULL) ft->q_tail = NULL;
    pthread_mutex_unlock(&(ft->q_mut));

    double t0 = fn_now_ms();
    fn_run_items(ft, job);
    job->ms = fn_now_ms() - t0;
    if (napi_call_threadsafe_function(ft->tsfn, job, napi_tsfn_blocking) != napi_ok) {
      // env is going away; the callback can no longer run
      fn_free_job(job);
    }
  }
  napi_release_threadsafe_function(ft->tsfn, napi_tsfn_release);
  return NULL;
}

// JS thread: deliver (results[], ms) to the batch callback.
static void fn_call_js (napi_env env, napi_value js_cb, void *context, void *data) {
  fn_job_t *job = (fn_job_t *) data;
  fuse_thread_t *ft = (fuse_thread_t *) context;
  if (env == NULL) { // tsfn finalised with pending jobs
    fn_free_job(job);
    return;
  }
  napi_value results, ms, cb, global, ret;
  napi_create_array_with_length(env, job->n, &results);
  for (uint32_t i = 0; i < job->n; i++) {
    napi_value v;
    napi_create_int32(env, job->results[i], &v);
    napi_set_element(env, results, i, v);
  }
  napi_create_double(env, job->ms, &ms);
  napi_get_reference_value(env, job->cb, &cb);
  napi_get_global(env, &global);
  napi_delete_reference(env, job->cb);
  fn_free_job(job);
  // Do not keep the loop alive when no batch is pending.
  pthread_mutex_lock(&(ft->q_mut));
  int idle = ft->q_head == NULL;
  pthread_mutex_unlock(&(ft->q_mut));
  if (idle) napi_unref_threadsafe_function(env, ft->tsfn);
  napi_value argv[2] = { results, ms };
  napi_call_function(env, global, cb, 2, argv, &ret);
}

static void fn_finalize_tsfn (napi_env env, void *finalize_data, void *finalize_hint) {
  // nothing: the fuse_thread_t buffer is owned by JS
}

static int fn_get_i64 (napi_env env, napi_value v, int64_t *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok) return -1;
  if (t == napi_number) {
    double d;
    napi_get_value_double(env, v, &d);
    if (d != d) return -1;
    *out = (int64_t) d;
    return 0;
  }
  if (t == napi_bigint) {
    bool lossless;
    return napi_get_value_bigint_int64(env, v, out, &lossless) == napi_ok ? 0 : -1;
  }
  return -1;
}

static char * fn_get_str (napi_env env, napi_value v) {
  napi_valuetype t;
  size_t len;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) return NULL;
  char *s = fn_name_from_js(env, v, &len);
  if (s != NULL && len > 4096) { free(s); return NULL; }
  return s;
}

static void fn_parse_item (napi_env env, napi_value arr, fn_item_t *it) {
  bool is_arr = false;
  uint32_t len = 0;
  napi_value el[4];
  int64_t type = -1;
  it->type = -1;
  it->a = it->b = it->c = 0;
  it->str = NULL;
  if (napi_is_array(env, arr, &is_arr) != napi_ok || !is_arr) return;
  napi_get_array_length(env, arr, &len);
  for (uint32_t i = 0; i < 4; i++) {
    if (i < len) napi_get_element(env, arr, i, &el[i]);
    else napi_get_undefined(env, &el[i]);
  }
  if (len < 1 || fn_get_i64(env, el[0], &type) != 0) return;
  switch (type) {
    case 0:
      if (fn_get_i64(env, el[1], &it->a) != 0 || (it->str = fn_get_str(env, el[2])) == NULL) break;
      if (it->str[0] == '\0' || strchr(it->str, '/') != NULL) break;
      it->type = 0;
      break;
    case 1:
      if (fn_get_i64(env, el[1], &it->a) != 0) break;
      if (len > 2 && fn_get_i64(env, el[2], &it->b) != 0) break;
      if (len > 3 && fn_get_i64(env, el[3], &it->c) != 0) break;
      it->type = 1;
      break;
    case 2:
      if (fn_get_i64(env, el[1], &it->a) != 0 || fn_get_i64(env, el[2], &it->b) != 0) break;
      if ((it->str = fn_get_str(env, el[3])) == NULL) break;
      if (it->str[0] == '\0' || strchr(it->str, '/') != NULL) break;
      it->type = 2;
      break;
    case 3:
      if ((it->str = fn_get_str(env, el[1])) == NULL || it->str[0] != '/') break;
      it->type = 3;
      break;
    case 4:
      if ((it->str = fn_get_str(env, el[1])) == NULL || it->str[0] != '/') break;
      if (len > 2 && fn_get_i64(env, el[2], &it->a) != 0) break;
      if (len > 3 && fn_get_i64(env, el[3], &it->b) != 0) break;
      it->type = 4;
      break;
    case 5:
      if ((it->str = fn_get_str(env, el[1])) == NULL || it->str[0] != '/') break;
      it->type = 5;
      break;
    case 6:
      it->type = 6;
      break;
  }
}

// fuse_native_invalidate(thread, items, cb(results, ms)) -> bool queued.
// Parses on the JS thread, runs on the notify pthread. Returns false when the
// notify thread is not running (not mounted / unmounting); JS then reports
// -ENOTCONN for every item.
NAPI_METHOD(fuse_native_invalidate) {
  NAPI_ARGV(3)
  NAPI_ARGV_BUFFER_CAST(fuse_thread_t *, ft, 0);
  napi_value items = argv[1];
  bool is_arr = false;
  uint32_t n = 0;
  napi_value ret;

  napi_is_array(env, items, &is_arr);
  if (!is_arr) {
    napi_throw_type_error(env, "EINVAL", "items must be an array");
    return NULL;
  }
  napi_get_array_length(env, items, &n);

  pthread_mutex_lock(&(ft->q_mut));
  int ok = ft->notify_started && !ft->q_stop;
  pthread_mutex_unlock(&(ft->q_mut));
  if (!ok) {
    napi_get_boolean(env, false, &ret);
    return ret;
  }

  fn_job_t *job = calloc(1, sizeof(fn_job_t));
  job->n = n;
  job->items = calloc(n ? n : 1, sizeof(fn_item_t));
  job->results = calloc(n ? n : 1, sizeof(int32_t));
  for (uint32_t i = 0; i < n; i++) {
    napi_value el;
    napi_get_element(env, items, i, &el);
    fn_parse_item(env, el, &(job->items[i]));
  }
  napi_create_reference(env, argv[2], 1, &(job->cb));

  napi_ref_threadsafe_function(env, ft->tsfn);
  pthread_mutex_lock(&(ft->q_mut));
  if (ft->q_tail) ft->q_tail->next = job;
  else ft->q_head = job;
  ft->q_tail = job;
  pthread_cond_signal(&(ft->q_cond));
  pthread_mutex_unlock(&(ft->q_mut));

  napi_get_boolean(env, true, &ret);
  return ret;
}

// fuse_native_nodeid(thread, path) -> node id (>0), 0 when libfuse has no node
// for the path (nothing cached), -ENOSYS on layout mismatch, -ENOTCONN when not
// mounted, -EINVAL for a relative path. Only takes libfuse's f->lock, which is
// never held across a handler, so it is safe on the JS thread.
NAPI_METHOD(fuse_native_nodeid) {
  NAPI_ARGV(2)
  NAPI_ARGV_BUFFER_CAST(fuse_thread_t *, ft, 0);
  int64_t id;
  napi_value ret;
  char path[4096];
  char *pathm = fn_name_from_js(env, argv[1], NULL); // the path's exact bytes (issue 18)
  if (pathm == NULL || strlen(pathm) >= sizeof(path)) { free(pathm); napi_create_int64(env, -EINVAL, &ret); return ret; }
  strcpy(path, pathm);
  free(pathm);
  if (!ft->inval_inited) {
    id = -ENOTCONN;
  } else {
    uv_rwlock_rdlock(&(ft->inval_lock));
    if (!ft->alive || ft->fuse == NULL) id = -ENOTCONN;
    else if (!ft->layout_ok) id = -ENOSYS;
    else id = fn_resolve(ft, path, 0, NULL);
    uv_rwlock_rdunlock(&(ft->inval_lock));
  }
  napi_create_int64(env, id, &ret);
  return ret;
}

// fuse_native_list_nodes(thread) -> [[nodeid, parentId, name, nlookup], ...]
// (snapshot of libfuse's node table; parentId 0 for the root / unlinked nodes).
NAPI_METHOD(fuse_native_list_nodes) {
  NAPI_ARGV(1)
  NAPI_ARGV_BUFFER_CAST(fuse_thread_t *, ft, 0);
  napi_value arr;
  napi_create_array(env, &arr);
  if (!ft->inval_inited) return arr;
  uv_rwlock_rdlock(&(ft->inval_lock));
  if (ft->alive && ft->fuse != NULL && ft->layout_ok) {
    struct fn_fuse_prefix *f = (struct fn_fuse_prefix *) ft->fuse;
    uint32_t k = 0;
    pthread_mutex_lock(&(f->lock));
    for (size_t h = 0; h < f->id_table.size; h++) {
      for (struct fn_node *node = f->id_table.array[h]; node != NULL; node = node->id_next) {
        napi_value row, v;
        napi_create_array_with_length(env, 4, &row);
        napi_create_int64(env, (int64_t) node->nodeid, &v);
        napi_set_element(env, row, 0, v);
        napi_create_int64(env, node->parent ? (int64_t) node->parent->nodeid : 0, &v);
        napi_set_element(env, row, 1, v);
        if (node->name) fn_name_to_js(env, node->name, &v);
        else napi_get_null(env, &v);
        napi_set_element(env, row, 2, v);
        napi_create_int64(env, (int64_t) node->nlookup, &v);
        napi_set_element(env, row, 3, v);
        napi_set_element(env, arr, k++, row);
      }
    }
    pthread_mutex_unlock(&(f->lock));
  }
  uv_rwlock_rdunlock(&(ft->inval_lock));
  return arr;
}

NAPI_METHOD(fuse_native_layout_ok) {
  NAPI_ARGV(1)
  NAPI_ARGV_BUFFER_CAST(fuse_thread_t *, ft, 0);
  napi_value ret;
  napi_get_boolean(env, ft->inval_inited && ft->layout_ok, &ret);
  return ret;
}

// Called by fuse_native_mount after fuse_new succeeded, before the loop thread.
static int fn_inval_start (napi_env env, fuse_thread_t *ft) {
  if (!ft->inval_inited) {
    uv_rwlock_init(&(ft->inval_lock));
    pthread_mutex_init(&(ft->q_mut), NULL);
    pthread_cond_init(&(ft->q_cond), NULL);
    ft->inval_inited = 1;
  }
  ft->alive = 1;
  ft->layout_ok = fn_check_layout(ft);
  ft->q_head = ft->q_tail = NULL;
  ft->q_stop = 0;

  napi_value name;
  napi_create_string_utf8(env, "fuse-native-invalidate", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, fn_finalize_tsfn, ft, fn_call_js, &(ft->tsfn)) != napi_ok) return -1;
  napi_unref_threadsafe_function(env, ft->tsfn);
  if (pthread_create(&(ft->notify_thread), NULL, fn_notify_thread, ft) != 0) return -1;
  pthread_detach(ft->notify_thread);
  ft->notify_started = 1;
  return 0;
}

// Called by fuse_native_unmount: the notify thread drains the queue (items
// then report -ENOTCONN once the loop has exited) and exits.
static void fn_inval_stop (fuse_thread_t *ft) {
  if (!ft->inval_inited) return;
  pthread_mutex_lock(&(ft->q_mut));
  ft->q_stop = 1;
  pthread_cond_signal(&(ft->q_cond));
  pthread_mutex_unlock(&(ft->q_mut));
}

// ---------------------------------------------------------------------------
// rewindfs: stale nodes answer ESTALE, not ENOENT.
//
// A reader that resolved "doc.txt" from the dentry cache just before another
// process renamed a temporary file over it sends OPEN (or GETATTR for the
// permission check) for the node of the REPLACED file. A native filesystem
// opens that inode (it is still alive); libfuse 2.9's high-level API has
// already dropped the node's name (rename_node / unlink_node) and answers
// ENOENT from get_path() without calling us, so open(2)/stat(2) of a name that
// never stopped existing fails. ESTALE is the kernel's signal for "this cached
// lookup is no longer valid": path walks (do_filp_open, vfs_statx, ...) retry
// once with LOOKUP_REVAL, which re-looks the name up and reaches the new file.
//
// libfuse gives no hook between get_path() and the reply, so the kernel
// channel is wrapped: receive() remembers the unique ids of requests that
// name an existing node (opcodes below; not LOOKUP/CREATE/MKDIR/..., whose
// ENOENT is a real answer about a name), send() turns their -ENOENT reply
// into -ESTALE. A restore that removed a path the kernel still holds ends up
// the same way (re-lookup, then ENOENT from LOOKUP).
//
// The same wrapper orders LOOKUP against RENAME of the same name (see
// fn_stale_receive): the kernel's re-lookups (d_revalidate, no directory
// lock) made libfuse's LOOKUP race a RENAME and pair the node of one file with
// the attributes of another. `struct fuse_chan` is libfuse 2.9.9's private
// lib/fuse_session.c layout with `op` first; the wrap is applied only when
// fuse_chan_fd/bufsize/data agree with the mirror.
// ---------------------------------------------------------------------------

struct fn_chan_prefix {
  struct fuse_chan_ops op;
  struct fuse_session *se;
  int fd;
  size_t bufsize;
  void *data;
  int compat;
};

// Linux's struct fuse_in_header / fuse_out_header (stable kernel ABI).
struct fn_in_header { uint32_t len; uint32_t opcode; uint64_t unique; uint64_t nodeid; uint32_t uid; uint32_t gid; uint32_t pid; uint32_t padding; };
struct fn_out_header { uint32_t len; int32_t error; uint64_t unique; };

// In-flight requests the wrapper follows, from receive() to their reply.
#define FN_FLIGHT_SLOTS 1024
#define FN_KIND_NODE 1    // names an existing node: -ENOENT becomes -ESTALE
#define FN_KIND_LOOKUP 2  // LOOKUP(parent, name): key[0]
#define FN_KIND_RENAME 3  // RENAME(olddir, oldname, newdir, newname): key[0], key[1]
struct fn_flight {
  struct fuse_chan *ch; // NULL: free slot
  uint64_t unique;
  uint64_t seq;
  int kind;
  uint64_t key[2];
};
static struct fn_flight fn_flights[FN_FLIGHT_SLOTS];
static int fn_flight_high = 0; // slots [0, high) may be in use
static uint64_t fn_flight_seq = 0;
static pthread_mutex_t fn_stale_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fn_flight_done = PTHREAD_COND_INITIALIZER;
static struct fuse_chan_ops fn_stale_orig;
static int fn_stale_have_orig = 0;
// longest wait of a LOOKUP/RENAME for an overlapping one (a safety valve, never expected)
#define FN_ORDER_WAIT_NS 2000000000LL

// GETATTR, SETATTR, READLINK, OPEN, SETXATTR, GETXATTR, LISTXATTR,
// REMOVEXATTR, OPENDIR, ACCESS: the request's node is its target.
static int fn_stale_opcode (uint32_t op) {
  return op == 3 || op == 4 || op == 5 || op == 14 || (op >= 21 && op <= 24) || op == 27 || op == 34;
}

// FNV-1a of (directory node id, name): equal names in one directory, equal keys
static uint64_t fn_name_key (uint64_t dir, const char *name, size_t len) {
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < 8; i++) { h ^= (dir >> (8 * i)) & 0xff; h *= 1099511628211ULL; }
  for (size_t i = 0; i < len; i++) { h ^= (unsigned char) name[i]; h *= 1099511628211ULL; }
  return h;
}

// A LOOKUP and a RENAME of the same name overlap: returns 1 when `e` must wait for `o`.
static int fn_flight_blocks (const struct fn_flight *e, const struct fn_flight *o) {
  if (o->ch != e->ch || o->seq >= e->seq) return 0;
  if (!((e->kind == FN_KIND_LOOKUP && o->kind == FN_KIND_RENAME) || (e->kind == FN_KIND_RENAME && o->kind == FN_KIND_LOOKUP))) return 0;
  int ek = e->kind == FN_KIND_RENAME ? 2 : 1;
  int ok = o->kind == FN_KIND_RENAME ? 2 : 1;
  for (int i = 0; i < ek; i++) for (int j = 0; j < ok; j++) if (e->key[i] == o->key[j]) return 1;
  return 0;
}

// Parses the request in buf (res bytes): kind and keys; 0 when not followed.
static int fn_flight_parse (const char *buf, int res, struct fn_flight *e) {
  const struct fn_in_header *in = (const struct fn_in_header *) buf;
  const char *body = buf + sizeof(struct fn_in_header);
  size_t blen = (size_t) res - sizeof(struct fn_in_header);
  if (fn_stale_opcode(in->opcode)) { e->kind = FN_KIND_NODE; return 1; }
  if (in->opcode == 1) { // LOOKUP: name\0
    size_t n = strnlen(body, blen);
    if (n == blen) return 0;
    e->kind = FN_KIND_LOOKUP;
    e->key[0] = fn_name_key(in->nodeid, body, n);
    return 1;
  }
  if (in->opcode == 12 || in->opcode == 45) { // RENAME: {newdir}; RENAME2: {newdir, flags, padding}; oldname\0newname\0
    size_t hdr = in->opcode == 12 ? 8 : 16;
    if (blen < hdr + 2) return 0;
    uint64_t newdir;
    memcpy(&newdir, body, 8);
    const char *oldname = body + hdr;
    size_t rest = blen - hdr;
    size_t on = strnlen(oldname, rest);
    if (on == rest) return 0;
    const char *newname = oldname + on + 1;
    size_t nn = strnlen(newname, rest - on - 1);
    if (nn == rest - on - 1) return 0;
    e->kind = FN_KIND_RENAME;
    e->key[0] = fn_name_key(in->nodeid, oldname, on);
    e->key[1] = fn_name_key(newdir, newname, nn);
    return 1;
  }
  return 0;
}

static int fn_stale_receive (struct fuse_chan **chp, char *buf, size_t size) {
  struct fuse_chan *ch = *chp;
  int res = fn_stale_orig.receive(chp, buf, size);
  if (res < (int) sizeof(struct fn_in_header)) return res;
  struct fn_flight e = { .ch = ch, .unique = ((struct fn_in_header *) buf)->unique };
  if (!fn_flight_parse(buf, res, &e)) return res;
  pthread_mutex_lock(&fn_stale_lock);
  int slot = -1;
  for (int i = 0; i < FN_FLIGHT_SLOTS; i++) {
    if (fn_flights[i].ch == NULL) { slot = i; break; }
  }
  // all slots busy: this request keeps libfuse's plain behaviour
  if (slot >= 0) {
    e.seq = ++fn_flight_seq;
    fn_flights[slot] = e;
    if (slot >= fn_flight_high) fn_flight_high = slot + 1;
    if (e.kind != FN_KIND_NODE) {
      // libfuse's LOOKUP asks the file system for the path's attributes and
      // only then finds the node of (parent, name); it locks the parent's
      // path, not that node, so a RENAME over the name can run in between
      // and the kernel gets one file's node with another file's attributes
      // (size, ino): a reader then sees the file cut short. Hand such a pair
      // to libfuse one after the other, in arrival order.
      struct timespec deadline;
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_sec += FN_ORDER_WAIT_NS / 1000000000LL;
      for (;;) {
        int blocked = 0;
        for (int i = 0; i < fn_flight_high && !blocked; i++) {
          if (i != slot && fn_flight_blocks(&fn_flights[slot], &fn_flights[i])) blocked = 1;
        }
        if (!blocked) break;
        if (pthread_cond_timedwait(&fn_flight_done, &fn_stale_lock, &deadline) == ETIMEDOUT) break;
      }
    }
  }
  pthread_mutex_unlock(&fn_stale_lock);
  return res;
}

static int fn_stale_send (struct fuse_chan *ch, const struct iovec iov[], size_t count) {
  if (count > 0 && iov[0].iov_len >= sizeof(struct fn_out_header)) {
    struct fn_out_header *out = (struct fn_out_header *) iov[0].iov_base;
    if (out->unique != 0) {
      pthread_mutex_lock(&fn_stale_lock);
      for (int i = 0; i < fn_flight_high; i++) {
        struct fn_flight *f = &fn_flights[i];
        if (f->ch == ch && f->unique == out->unique) {
          if (f->kind == FN_KIND_NODE && out->error == -ENOENT) out->error = -ESTALE;
          if (f->kind != FN_KIND_NODE) pthread_cond_broadcast(&fn_flight_done);
          f->ch = NULL;
          while (fn_flight_high > 0 && fn_flights[fn_flight_high - 1].ch == NULL) fn_flight_high--;
          break;
        }
      }
      pthread_mutex_unlock(&fn_stale_lock);
    }
  }
  return fn_stale_orig.send(ch, iov, count);
}

// Called by fuse_native_mount right after fuse_mount, before any request.
// Returns 1 when the channel is wrapped.
static int fn_stale_wrap (struct fuse_chan *ch) {
  struct fn_chan_prefix *c = (struct fn_chan_prefix *) ch;
  if (fuse_version() != 29 || c == NULL) return 0;
  if (c->fd != fuse_chan_fd(ch) || c->bufsize != fuse_chan_bufsize(ch) || c->data != fuse_chan_data(ch)) return 0;
  if (c->op.receive == NULL || c->op.send == NULL || c->op.receive == fn_stale_receive) return c->op.receive == fn_stale_receive;
  pthread_mutex_lock(&fn_stale_lock);
  // every kernel channel has the same ops (fuse_kern_chan.c); keep the first
  int ok = !fn_stale_have_orig || (fn_stale_orig.receive == c->op.receive && fn_stale_orig.send == c->op.send);
  if (ok && !fn_stale_have_orig) { fn_stale_orig = c->op; fn_stale_have_orig = 1; }
  // slots of an earlier channel at the same address are stale
  for (int i = 0; i < FN_FLIGHT_SLOTS; i++) if (fn_flights[i].ch == ch) fn_flights[i].ch = NULL;
  pthread_mutex_unlock(&fn_stale_lock);
  if (!ok) return 0;
  c->op.receive = fn_stale_receive;
  c->op.send = fn_stale_send;
  return 1;
}

NAPI_METHOD(fuse_native_mount) {
  NAPI_ARGV(7)

  NAPI_ARGV_UTF8(mnt, 1024, 0);
  NAPI_ARGV_UTF8(mntopts, 1024, 1);
  NAPI_ARGV_BUFFER_CAST(fuse_thread_t *, ft, 2);
  napi_create_reference(env, argv[3], 1, &(ft->ctx));
  napi_create_reference(env, argv[4], 1, &(ft->malloc));
  napi_value handlers = argv[5];
  NAPI_ARGV_BUFFER_CAST(uint32_t *, implemented, 6)

  for (int i = 0; i < 35; i++) {
    ft->handlers[i] = NULL;
  }

  NAPI_FOR_EACH(handlers, handler) {
    napi_create_reference(env, handler, 1, &ft->handlers[i]);
  }

  ft->env = env;

  struct fuse_operations ops = { };
  if (implemented[op_access]) ops.access = fuse_native_access;
  if (implemented[op_truncate]) ops.truncate = fuse_native_truncate;
  if (implemented[op_ftruncate]) ops.ftruncate = fuse_native_ftruncate;
  if (implemented[op_getattr]) ops.getattr = fuse_native_getattr;
  if (implemented[op_fgetattr]) ops.fgetattr = fuse_native_fgetattr;
  if (implemented[op_flush]) ops.flush = fuse_native_flush;
  if (implemented[op_fsync]) ops.fsync = fuse_native_fsync;
  if (implemented[op_fsyncdir]) ops.fsyncdir = fuse_native_fsyncdir;
  if (implemented[op_readdir]) ops.readdir = fuse_native_readdir;
  if (implemented[op_readlink]) ops.readlink = fuse_native_readlink;
  if (implemented[op_chown]) ops.chown = fuse_native_chown;
  if (implemented[op_chmod]) ops.chmod = fuse_native_chmod;
  if (implemented[op_mknod]) ops.mknod = fuse_native_mknod;
  if (implemented[op_setxattr]) ops.setxattr = fuse_native_setxattr;
  if (implemented[op_getxattr]) ops.getxattr = fuse_native_getxattr;
  if (implemented[op_listxattr]) ops.listxattr = fuse_native_listxattr;
  if (implemented[op_removexattr]) ops.removexattr = fuse_native_removexattr;
  if (implemented[op_statfs]) ops.statfs = fuse_native_statfs;
  if (implemented[op_open]) ops.open = fuse_native_open;
  if (implemented[op_opendir]) ops.opendir = fuse_native_opendir;
  if (implemented[op_read]) ops.read = fuse_native_read;
  if (implemented[op_write]) ops.write = fuse_native_write;
  if (implemented[op_release]) ops.release = fuse_native_release;
  if (implemented[op_releasedir]) ops.releasedir = fuse_native_releasedir;
  if (implemented[op_create]) ops.create = fuse_native_create;
  if (implemented[op_utimens]) ops.utimens = fuse_native_utimens;
  if (implemented[op_unlink]) ops.unlink = fuse_native_unlink;
  if (implemented[op_rename]) ops.rename = fuse_native_rename;
  if (implemented[op_link]) ops.link = fuse_native_link;
  if (implemented[op_symlink]) ops.symlink = fuse_native_symlink;
  if (implemented[op_mkdir]) ops.mkdir = fuse_native_mkdir;
  if (implemented[op_rmdir]) ops.rmdir = fuse_native_rmdir;
  if (implemented[op_init]) ops.init = fuse_native_init;

  // rewindfs: let libfuse call utimens for a single time (touch -m/-a,
  // UTIME_OMIT, UTIME_NOW) instead of silently dropping it.
  ops.flag_utime_omit_ok = 1;
  // rewindfs: with hard_remove an unlinked open file has no path; allow libfuse
  // to call read/write/release/flush/fsync/ftruncate/fgetattr with NULL.
  ops.flag_nullpath_ok = 1;

  int _argc = (strcmp(mntopts, "-o") <= 0) ? 1 : 2;
  char *_argv[] = {
    (char *) "fuse_bindings_dummy",
    (char *) mntopts
  };

  struct fuse_args args = FUSE_ARGS_INIT(_argc, _argv);
  struct fuse_chan *ch = fuse_mount(mnt, &args);

  if (ch == NULL) {
    napi_throw_error(env, "fuse failed", "fuse failed");
    return NULL;
  }

  // rewindfs: stale nodes answer ESTALE (patch 9)
  ft->stale_wrapped = fn_stale_wrap(ch);

  struct fuse *fuse = fuse_new(ch, &args, &ops, sizeof(struct fuse_operations), ft);

  uv_mutex_init(&(ft->mut));
  uv_sem_init(&(ft->sem), 0);

  strncpy(ft->mnt, mnt, 1024);
  strncpy(ft->mntopts, mntopts, 1024);
  ft->fuse = fuse;
  ft->ch = ch;
  ft->mounted++;

  int err = uv_async_init(uv_default_loop(), &(ft->async), (uv_async_cb) fuse_native_async_init);

  if (fuse == NULL || err < 0) {
    napi_throw_error(env, "fuse failed", "fuse failed");
    return NULL;
  }

  // rewindfs: invalidation guard, layout check and notify thread
  if (fn_inval_start(env, ft) != 0) {
    napi_throw_error(env, "fuse failed", "fuse failed: cannot start the invalidation thread");
    return NULL;
  }

  pthread_attr_init(&(ft->attr));
  pthread_create(&(ft->thread), &(ft->attr), start_fuse_thread, ft);

  return NULL;
}

NAPI_METHOD(fuse_native_unmount) {
  NAPI_ARGV(2)
  NAPI_ARGV_UTF8(mnt, 1024, 0);
  NAPI_ARGV_BUFFER_CAST(fuse_thread_t *, ft, 1);

  if (ft != NULL && ft->mounted) {
    // TODO: Investigate why the FUSE thread is not always killed after fusermount.
    // pthread_join(ft->thread, NULL);
  }

  // TODO: fix the async holding the loop
  uv_unref((uv_handle_t *) &(ft->async));
  ft->mounted--;

  // rewindfs: stop the notify thread once its queue is drained
  fn_inval_stop(ft);

  return NULL;
}

// rewindfs: synchronous xattr syscalls on the backing filesystem, for the
// lower layer (import) and for export/write-back. They run on the JS thread
// and must never be pointed at the mount itself (that would deadlock the
// loop serving it). No symlinks are followed (l* calls). On failure they
// return -errno as a number; index.cjs turns that into an Error with .code.

// Reads argv[i] as a malloc'ed UTF-8 string (paths may exceed any fixed
// buffer); NULL when it is not a string.
static char *fn_xattr_utf8 (napi_env env, napi_value v) {
  return fn_name_from_js(env, v, NULL); // a path's exact bytes (issue 18)
}

static napi_value fn_xattr_int (napi_env env, int n) {
  napi_value r;
  napi_create_int32(env, n, &r);
  return r;
}

// lxattrs(path) -> { name: Buffer } | null (no xattrs) | -errno
NAPI_METHOD(fuse_native_lxattrs) {
  NAPI_ARGV(1)
  char *path = fn_xattr_utf8(env, argv[0]);
  if (path == NULL) return fn_xattr_int(env, -EINVAL);
  char *names = NULL;
  ssize_t nlen;
  for (;;) {
    nlen = llistxattr(path, NULL, 0);
    if (nlen <= 0) break;
    free(names);
    names = malloc(nlen);
    if (names == NULL) { free(path); return fn_xattr_int(env, -ENOMEM); }
    ssize_t got = llistxattr(path, names, nlen);
    if (got >= 0) { nlen = got; break; }
    if (errno != ERANGE) { nlen = -1; break; } // the list grew in between: retry
  }
  if (nlen < 0) {
    int e = errno;
    free(names); free(path);
    return fn_xattr_int(env, -e);
  }
  napi_value out;
  if (nlen == 0) {
    free(names); free(path);
    napi_get_null(env, &out);
    return out;
  }
  napi_create_object(env, &out);
  char *val = NULL;
  size_t cap = 0;
  int count = 0;
  for (char *n = names; n < names + nlen; n += strlen(n) + 1) {
    if (*n == '\0') continue;
    ssize_t vlen;
    for (;;) {
      vlen = lgetxattr(path, n, NULL, 0);
      if (vlen < 0) break;
      if ((size_t) vlen > cap || val == NULL) {
        free(val);
        cap = vlen > 0 ? vlen : 1;
        val = malloc(cap);
        if (val == NULL) { free(names); free(path); return fn_xattr_int(env, -ENOMEM); }
      }
      ssize_t got = lgetxattr(path, n, val, cap);
      if (got >= 0) { vlen = got; break; }
      if (errno != ERANGE) { vlen = -1; break; }
    }
    if (vlen < 0) {
      int e = errno;
      if (e == ENODATA) continue; // removed since the listing
      free(val); free(names); free(path);
      return fn_xattr_int(env, -e);
    }
    napi_value buf;
    void *data;
    napi_create_buffer_copy(env, vlen, val, &data, &buf);
    napi_set_named_property(env, out, n, buf);
    count++;
  }
  free(val); free(names); free(path);
  if (count == 0) napi_get_null(env, &out);
  return out;
}

// lsetxattr(path, name, value: Buffer, flags) -> 0 | -errno
NAPI_METHOD(fuse_native_lsetxattr) {
  NAPI_ARGV(4)
  char *path = fn_xattr_utf8(env, argv[0]);
  char *name = fn_xattr_utf8(env, argv[1]);
  void *data = NULL;
  size_t len = 0;
  int32_t flags = 0;
  int r = 0;
  if (path == NULL || name == NULL || napi_get_buffer_info(env, argv[2], &data, &len) != napi_ok ||
      napi_get_value_int32(env, argv[3], &flags) != napi_ok) r = -EINVAL;
  else if (lsetxattr(path, name, len > 0 ? data : "", len, flags) != 0) r = -errno;
  free(path); free(name);
  return fn_xattr_int(env, r);
}

// lremovexattr(path, name) -> 0 | -errno
NAPI_METHOD(fuse_native_lremovexattr) {
  NAPI_ARGV(2)
  char *path = fn_xattr_utf8(env, argv[0]);
  char *name = fn_xattr_utf8(env, argv[1]);
  int r = 0;
  if (path == NULL || name == NULL) r = -EINVAL;
  else if (lremovexattr(path, name) != 0) r = -errno;
  free(path); free(name);
  return fn_xattr_int(env, r);
}

// rewindfs: the request counters as an array of numbers indexed by opcode
// (exact up to 2^53 requests).
NAPI_METHOD(fuse_native_request_counts) {
  napi_value arr;
  napi_create_array_with_length(env, FN_OPS, &arr);
  for (uint32_t i = 0; i < FN_OPS; i++) {
    napi_value v;
    napi_create_double(env, (double) __atomic_load_n(&fn_request_counts[i], __ATOMIC_RELAXED), &v);
    napi_set_element(env, arr, i, v);
  }
  return arr;
}

NAPI_INIT() {
  const napi_node_version* version;
  assert(napi_get_node_version(env, &version) == napi_ok);

  if (version->major > 12 || (version->major == 12 && version->minor >= 16)) {
    IS_ARRAY_BUFFER_DETACH_SUPPORTED = 1;
  }

  pthread_key_create(&(thread_locals_key), NULL); // TODO: add destructor

  NAPI_EXPORT_SIZEOF(fuse_thread_t)

  NAPI_EXPORT_FUNCTION(fuse_native_mount)
  NAPI_EXPORT_FUNCTION(fuse_native_unmount)

  // rewindfs: invalidation API
  NAPI_EXPORT_FUNCTION(fuse_native_invalidate)
  NAPI_EXPORT_FUNCTION(fuse_native_nodeid)
  NAPI_EXPORT_FUNCTION(fuse_native_list_nodes)
  NAPI_EXPORT_FUNCTION(fuse_native_layout_ok)
  NAPI_EXPORT_FUNCTION(fuse_native_request_counts)

  // rewindfs: xattr syscalls on the backing filesystem
  NAPI_EXPORT_FUNCTION(fuse_native_lxattrs)
  NAPI_EXPORT_FUNCTION(fuse_native_lsetxattr)
  NAPI_EXPORT_FUNCTION(fuse_native_lremovexattr)

  NAPI_EXPORT_FUNCTION(fuse_native_signal_getattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_init)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_access)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_statfs)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_fgetattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_getattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_flush)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_fsync)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_fsyncdir)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_readdir)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_truncate)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_ftruncate)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_utimens)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_readlink)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_chown)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_chmod)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_mknod)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_setxattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_getxattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_listxattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_removexattr)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_open)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_opendir)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_read)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_write)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_release)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_releasedir)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_create)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_unlink)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_rename)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_link)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_symlink)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_mkdir)
  NAPI_EXPORT_FUNCTION(fuse_native_signal_rmdir)

  NAPI_EXPORT_UINT32(op_getattr)
  NAPI_EXPORT_UINT32(op_init)
  NAPI_EXPORT_UINT32(op_error)
  NAPI_EXPORT_UINT32(op_access)
  NAPI_EXPORT_UINT32(op_statfs)
  NAPI_EXPORT_UINT32(op_fgetattr)
  NAPI_EXPORT_UINT32(op_getattr)
  NAPI_EXPORT_UINT32(op_flush)
  NAPI_EXPORT_UINT32(op_fsync)
  NAPI_EXPORT_UINT32(op_fsyncdir)
  NAPI_EXPORT_UINT32(op_readdir)
  NAPI_EXPORT_UINT32(op_truncate)
  NAPI_EXPORT_UINT32(op_ftruncate)
  NAPI_EXPORT_UINT32(op_utimens)
  NAPI_EXPORT_UINT32(op_readlink)
  NAPI_EXPORT_UINT32(op_chown)
  NAPI_EXPORT_UINT32(op_chmod)
  NAPI_EXPORT_UINT32(op_mknod)
  NAPI_EXPORT_UINT32(op_setxattr)
  NAPI_EXPORT_UINT32(op_getxattr)
  NAPI_EXPORT_UINT32(op_listxattr)
  NAPI_EXPORT_UINT32(op_removexattr)
  NAPI_EXPORT_UINT32(op_open)
  NAPI_EXPORT_UINT32(op_opendir)
  NAPI_EXPORT_UINT32(op_read)
  NAPI_EXPORT_UINT32(op_write)
  NAPI_EXPORT_UINT32(op_release)
  NAPI_EXPORT_UINT32(op_releasedir)
  NAPI_EXPORT_UINT32(op_create)
  NAPI_EXPORT_UINT32(op_unlink)
  NAPI_EXPORT_UINT32(op_rename)
  NAPI_EXPORT_UINT32(op_link)
  NAPI_EXPORT_UINT32(op_symlink)
  NAPI_EXPORT_UINT32(op_mkdir)
  NAPI_EXPORT_UINT32(op_rmdir)
}

/*
 * rewindfs-hook: the PreToolUse hook client for Claude Code and Codex.
 *
 *   rewindfs-hook HARNESS [--home DIR] [--fallback NODE SCRIPT]
 *
 * Reads the hook payload (JSON) on stdin, finds the daemon of the rewindfs
 * workspace that contains the payload's `cwd` the way every client does
 * (proto/PROTOCOL.md section 1 "Finding the daemon": the connection file
 * R/<sha256 key>.json in the runtime directories, which names the token copy
 * and the hook socket R/<key>.hook, both given to the user who mounted, also
 * through sudo), else through the registry of the rewindfs home that mounted
 * it (<home>/mounts/NAME.json, daemon/paths.ts; then <store>/token and
 * <store>/hook.sock), and asks the daemon, over the hook socket (section
 * 7), to mark a checkpoint before the tool call. A workspace found only
 * through the offline record R/<key>.offline, which its daemon leaves when
 * it stops, has no daemon to ask (the user who mounted through sudo has no
 * registry entry for it). The cwd is taken by its real path (a symbolic
 * link in a workspace to a directory outside it is outside):
 *
 *   -> "mark TOKEN HARNESS PAYLOAD\n"      (PAYLOAD: the JSON, newlines made spaces)
 *   <- "ok ID\n" | "error CODE MESSAGE\n"
 *
 * Exit status (the harnesses' hook convention): 0 lets the tool call run;
 * 2 blocks it, the reason on stderr goes back to the model. A cwd in no
 * workspace: exit 0, silent. Daemon down (or the mark failed): a tool call
 * without a shell command runs, with a note on stderr; a shell command is
 * checked against the store's external-command list by SCRIPT (a Node
 * program, started only then) which exits 2 for a match (fail closed).
 *
 * Not a Node program because Node's start-up alone takes ~60 ms and this
 * runs before every tool call; this takes about a millisecond.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#define MAX_PAYLOAD (64u << 20)
#define MAX_SMALL (1u << 20)

static void die_usage(void) {
  fprintf(stderr, "usage: rewindfs-hook HARNESS [--home DIR] [--fallback NODE SCRIPT]\n");
  exit(0); /* a broken hook command must not block every tool call */
}

/* Reads all of fd (at most max bytes) into a NUL-terminated buffer. */
static char *read_all(int fd, size_t *len, size_t max) {
  size_t cap = 65536, n = 0;
  char *b = malloc(cap + 1);
  if (!b) return NULL;
  for (;;) {
    if (n == cap) {
      if (cap >= max) break;
      cap *= 2;
      char *nb = realloc(b, cap + 1);
      if (!nb) { free(b); return NULL; }
      b = nb;
    }
    ssize_t r = read(fd, b + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  b[n] = 0;
  *len = n;
  return b;
}

static char *read_file(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  char *b = read_all(fd, len, MAX_SMALL);
  close(fd);
  return b;
}

#include "json-reader.h"

/* ---- the workspace of cwd ---- */

static char *home_dir(const char *given) {
  char *b;
  if (given) return strdup(given);
  const char *h = getenv("REWINDFS_HOME");
  if (h && *h) return strdup(h);
  if (geteuid() == 0) return strdup("/var/lib/rewindfs");
  const char *x = getenv("XDG_STATE_HOME");
  if (x && *x) { if (asprintf(&b, "%s/rewindfs", x) < 0) return NULL; return b; }
  const char *u = getenv("HOME");
  if (asprintf(&b, "%s/.local/state/rewindfs", u ? u : "/") < 0) return NULL;
  return b;
}

/* The registered workspace containing cwd (the longest), and its store; 0 when none. Textual, like daemon/paths.ts findWorkspace: nothing under the mount is stat'ed. */
static int find_workspace(const char *home, const char *cwd, char **wsp, char **store) {
  char *dir;
  if (asprintf(&dir, "%s/mounts", home) < 0) return 0;
  DIR *d = opendir(dir);
  size_t best = 0;
  *wsp = *store = NULL;
  if (d) {
    struct dirent *de;
    while ((de = readdir(d))) {
      size_t nl = strlen(de->d_name);
      if (nl < 6 || strcmp(de->d_name + nl - 5, ".json") != 0) continue;
      char *f;
      size_t len;
      if (asprintf(&f, "%s/%s", dir, de->d_name) < 0) continue;
      char *text = read_file(f, &len);
      free(f);
      if (!text) continue;
      char *w = member_str(text, text + len, "workspace"), *s = member_str(text, text + len, "store");
      free(text);
      size_t wl = w ? strlen(w) : 0;
      int inside = w && s && strncmp(cwd, w, wl) == 0 && (cwd[wl] == 0 || cwd[wl] == '/' || (wl == 1 && w[0] == '/'));
      if (inside && wl > best) { free(*wsp); free(*store); *wsp = w; *store = s; best = wl; }
      else { free(w); free(s); }
    }
    closedir(d);
  }
  free(dir);
  return best > 0;
}

/* ---- discovery (proto/discovery.ts, PROTOCOL.md section 1 "Finding the daemon") ---- */

/* The first 32 hex digits of SHA-256 (FIPS 180-4, nettle) of `path`'s bytes, into hex[33]. */
static void discovery_key(const char *path, char hex[33]) {
  struct sha256_ctx c;
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_init(&c);
  sha256_update(&c, strlen(path), (const uint8_t *)path);
  sha256_digest(&c, sizeof d, d);
  for (int i = 0; i < 16; i++) sprintf(hex + 2 * i, "%02x", d[i]);
  hex[32] = 0;
}

/* The runtime directories a client looks in, in order (NULL-terminated, malloc'ed strings). */
static int runtime_dirs(char *out[4]) {
  int n = 0;
  const char *own = getenv("REWINDFS_RUNTIME_DIR"), *x = getenv("XDG_RUNTIME_DIR");
  if (own && *own) { out[n++] = strdup(own); out[n] = NULL; return n; }
  if (x && *x && asprintf(&out[n], "%s/rewindfs", x) >= 0) n++;
  out[n++] = strdup("/run/rewindfs");
  if (asprintf(&out[n], "/tmp/rewindfs-%u", (unsigned)getuid()) >= 0) n++;
  out[n] = NULL;
  return n;
}

/* True when dir is owned by uid or root and nobody else may write to it. */
static int trusted_dir(const char *dir, uid_t uid) {
  struct stat st;
  return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == uid || st.st_uid == 0) && (st.st_mode & 022) == 0;
}

/*
 * The first R/<key(A)><ext>, for A = `a` (absolute, plain) and then each
 * ancestor up to '/', and for each runtime directory R in order, that is a
 * regular file owned by this user or root (or in a directory owned by this
 * user or root that nobody else may write to), can be read, and names A as
 * its "workspace" and a "store": its text (malloc'ed, NUL-terminated, length
 * in *len), *wsp = A, *store and, when `path` is not NULL, *path the file's
 * path (all malloc'ed). NULL when there is none. With `loud`, a file passed
 * over is said on stderr.
 */
static char *runtime_file(const char *a0, const char *ext, int loud, char **wsp, char **store, char **path, size_t *len) {
  char *dirs[5], *a = strdup(a0), *found = NULL;
  if (!a) return NULL;
  size_t al = strlen(a);
  while (al > 1 && a[al - 1] == '/') a[--al] = 0;
  runtime_dirs(dirs);
  uid_t me = getuid();
  for (;;) {
    char key[33];
    discovery_key(a, key);
    for (int i = 0; dirs[i] && !found; i++) {
      char *f;
      struct stat st;
      if (asprintf(&f, "%s/%s%s", dirs[i], key, ext) < 0) continue;
      if (lstat(f, &st) != 0) { free(f); continue; }
      char *text = NULL;
      if (!S_ISREG(st.st_mode)) { if (loud) fprintf(stderr, "rewindfs: the connection file %s of %s is not a regular file; passing it over (remove it)\n", f, a); }
      else if (st.st_uid != me && st.st_uid != 0 && !trusted_dir(dirs[i], me)) { if (loud) fprintf(stderr, "rewindfs: the connection file %s of %s belongs to uid %u, neither this user nor root; passing it over\n", f, a, (unsigned)st.st_uid); }
      else if (!(text = read_file(f, len)) && loud) fprintf(stderr, "rewindfs: cannot read the connection file %s of %s (%s): only the user who mounted it may; no checkpoint from this hook\n", f, a, strerror(errno));
      if (!text) { free(f); continue; }
      char *w = member_str(text, text + *len, "workspace"), *s = member_str(text, text + *len, "store");
      if (w && s && strcmp(w, a) == 0) {
        *wsp = w; *store = s; found = text;
        if (path) *path = f; else free(f);
        continue;
      }
      free(f); free(w); free(s); free(text);
    }
    if (found || strcmp(a, "/") == 0) break;
    char *sl = strrchr(a, '/');
    if (sl == a) a[1] = 0; else *sl = 0;
  }
  for (int i = 0; dirs[i]; i++) free(dirs[i]);
  free(a);
  return found;
}

/*
 * The daemon serving the workspace that contains `where` (absolute), by the
 * discovery rule: its connection file R/<key>.json gives *wsp, *store,
 * *token (the token file) and *hook (the hook socket; the store's when the
 * connection file names none). 1 found, 0 none. A connection file that is
 * refused (not a regular file, someone else's) or cannot be read is said on
 * stderr and passed over.
 */
static int discover(const char *where, char **wsp, char **store, char **token, char **hook) {
  size_t len;
  char *text = runtime_file(where, ".json", 1, wsp, store, NULL, &len);
  if (!text) return 0;
  char *tk = member_str(text, text + len, "token"), *h = member_str(text, text + len, "hook");
  free(text);
  if (!h && asprintf(&h, "%s/hook.sock", *store) < 0) h = NULL;
  if (tk && h) { *token = tk; *hook = h; return 1; }
  free(tk); free(h); free(*wsp); free(*store);
  *wsp = *store = NULL;
  return 0;
}

/*
 * The offline record R/<key>.offline (proto/discovery.ts OfflineRecord) of
 * the workspace that contains `where`: written by its daemon with the
 * connection file and left when it stops, so a workspace whose daemon is
 * down is told from any directory even by a user whose rewindfs home does
 * not know it (one who mounted through sudo). *wsp, *store, *file (the
 * record's path, for the external-command check). 1 found, 0 none.
 */
static int find_offline(const char *where, char **wsp, char **store, char **file) {
  size_t len;
  char *text = runtime_file(where, ".offline", 0, wsp, store, file, &len);
  free(text);
  return text != NULL;
}

/*
 * Where the hook looks for the workspace of `cwd`: its real path (the rule's
 * A = realpath(P)), so that a symbolic link inside a workspace to a
 * directory outside it is outside; `cwd` as written when it does not resolve
 * (a dead mount: ENOTCONN) and is absolute; NULL otherwise. Resolving a cwd
 * inside the mount asks the daemon (FUSE lookups of each component, most
 * answered from the kernel's cache).
 */
static char *where_of(const char *cwd) {
  char *r = realpath(cwd, NULL);
  if (r) return r;
  return cwd[0] == '/' ? strdup(cwd) : NULL;
}

/* ---- the daemon ---- */

/* Sends the mark request over the hook socket `sock` with the token in `tokenf`; returns the reply line (malloc'ed) or NULL with *why set. */
static char *ask_mark(const char *tokenf, const char *sock, const char *harness, char *payload, size_t plen, const char **why) {
  size_t tl;
  char *token = read_file(tokenf, &tl);
  if (!token) { *why = errno == EACCES ? "this user may not read the daemon's token" : "the daemon's token is missing"; return NULL; }
  while (tl > 0 && (token[tl - 1] == '\n' || token[tl - 1] == '\r')) token[--tl] = 0;

  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if ((size_t)snprintf(a.sun_path, sizeof a.sun_path, "%s", sock) >= sizeof a.sun_path) { free(token); *why = "the hook socket's path is too long for a unix socket"; return NULL; }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    *why = errno == EACCES ? "this user may not use the daemon's hook socket" : "the daemon is not running";
    if (fd >= 0) close(fd);
    free(token);
    return NULL;
  }
  struct timeval tv = { 30, 0 };
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (size_t i = 0; i < plen; i++) if (payload[i] == '\n' || payload[i] == '\r') payload[i] = ' ';
  char *head;
  int hl = asprintf(&head, "mark %s %s ", token, harness);
  free(token);
  if (hl < 0) { close(fd); *why = "out of memory"; return NULL; }
  const char *parts[3] = { head, payload, "\n" };
  size_t lens[3] = { (size_t)hl, plen, 1 };
  for (int k = 0; k < 3; k++) {
    size_t off = 0;
    while (off < lens[k]) {
      ssize_t w = send(fd, parts[k] + off, lens[k] - off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) { free(head); close(fd); *why = "the daemon closed the hook socket"; return NULL; }
      off += (size_t)w;
    }
  }
  free(head);
  shutdown(fd, SHUT_WR);
  /* the reply is one line: stop at its newline rather than wait for the daemon's close (a turn of its event loop later) */
  size_t rl = 0, cap = 4096;
  char *reply = malloc(cap + 1);
  while (reply && rl < cap) {
    ssize_t r = read(fd, reply + rl, cap - rl);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    rl += (size_t)r;
    if (memchr(reply + rl - r, '\n', (size_t)r)) break;
  }
  if (reply) reply[rl] = 0;
  close(fd);
  if (!reply || rl == 0) { free(reply); *why = "the daemon did not answer in 30 s"; return NULL; }
  char *nl = strchr(reply, '\n');
  if (nl) *nl = 0;
  return reply;
}

/* Runs NODE SCRIPT --store STORE --workspace WS --why WHY [--offline FILE] with the payload on stdin; its exit status, or -1. */
static int run_fallback(const char *node, const char *script, const char *store, const char *wsp, const char *why, const char *offline, const char *payload, size_t plen) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(p[0], 0);
    if (offline) execl(node, node, script, "--store", store, "--workspace", wsp, "--why", why, "--offline", offline, (char *)NULL);
    else execl(node, node, script, "--store", store, "--workspace", wsp, "--why", why, (char *)NULL);
    _exit(127);
  }
  close(p[0]);
  size_t off = 0;
  signal(SIGPIPE, SIG_IGN);
  while (off < plen) {
    ssize_t w = write(p[1], payload + off, plen - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += (size_t)w;
  }
  close(p[1]);
  int st;
  while (waitpid(pid, &st, 0) < 0) if (errno != EINTR) return -1;
  if (!WIFEXITED(st) || WEXITSTATUS(st) == 127) return -1;
  return WEXITSTATUS(st);
}

int main(int argc, char **argv) {
  if (argc < 2) die_usage();
  const char *harness = argv[1], *home_arg = NULL, *node = NULL, *script = NULL;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--home") == 0 && i + 1 < argc) home_arg = argv[++i];
    else if (strcmp(argv[i], "--fallback") == 0 && i + 2 < argc) { node = argv[++i]; script = argv[++i]; }
    else die_usage();
  }
  size_t plen;
  char *payload = read_all(0, &plen, MAX_PAYLOAD);
  if (!payload) return 0;
  const char *pe = payload + plen;
  char *cwd = member_str(payload, pe, "cwd");
  if (!cwd) { cwd = getcwd(NULL, 0); if (!cwd) return 0; }
  /* is there a shell command? (read before the payload's newlines are changed) */
  const char *ts, *te, *cs, *ce;
  int has_command = member(payload, pe, "tool_input", &ts, &te) && member(ts, te, "command", &cs, &ce);

  char *where = where_of(cwd);
  if (!where) return 0;
  char *wsp = NULL, *store = NULL, *tokenf = NULL, *sock = NULL, *offline = NULL;
  int down = 0;
  if (!discover(where, &wsp, &store, &tokenf, &sock)) {
    /* no daemon published for it: a workspace this home registered (its daemon is down, or an older one) */
    char *home = home_dir(home_arg);
    if (home && find_workspace(home, where, &wsp, &store)) {
      if (asprintf(&tokenf, "%s/token", store) < 0 || asprintf(&sock, "%s/hook.sock", store) < 0) return 0;
    } else if (find_offline(where, &wsp, &store, &offline)) {
      down = 1; /* a workspace whose daemon stopped: nothing to ask */
    } else {
      return 0; /* not a rewindfs workspace */
    }
  }

  const char *why = "the daemon is not running";
  char *reply = NULL;
  if (!down) {
    char *copy = malloc(plen + 1);
    if (!copy) return 0;
    memcpy(copy, payload, plen + 1);
    reply = ask_mark(tokenf, sock, harness, copy, plen, &why);
    free(copy);
    if (reply && strncmp(reply, "ok ", 3) == 0) return 0;
  }
  char *err = NULL;
  if (reply) {
    if (asprintf(&err, "the daemon could not mark a checkpoint (%s)", strncmp(reply, "error ", 6) == 0 ? reply + 6 : reply) < 0) err = NULL;
    why = err ? err : "the daemon could not mark a checkpoint";
  }
  if (!has_command) {
    fprintf(stderr, "rewindfs: %s: %s, so this tool call runs without a checkpoint (run: rewindfs mount %s)\n", wsp, why, wsp);
    return 0;
  }
  if (!node) {
    fprintf(stderr, "rewindfs: %s: %s, and this hook has no way to check the command against the external-command list: refusing it (run: rewindfs mount %s, or reinstall the hook with rewindfs hooks install)\n", wsp, why, wsp);
    return 2;
  }
  if (!offline) { /* the store may be another user's (a mount through sudo): the record's copy of its list */
    char *ow = NULL, *os = NULL;
    if (find_offline(where, &ow, &os, &offline) && strcmp(ow, wsp) != 0) { free(offline); offline = NULL; }
  }
  int rc = run_fallback(node, script, store, wsp, why, offline, payload, plen);
  if (rc < 0) {
    fprintf(stderr, "rewindfs: %s: %s, and the external-command check (%s %s) could not run: refusing the command (run: rewindfs mount %s)\n", wsp, why, node, script, wsp);
    return 2;
  }
  return rc == 0 ? 0 : 2;
}

"""Persistent helper of the differential fuzz test (test/fuzz/fuzz.test.ts).

Answers one JSON request per line on stdin with one JSON reply per line on
stdout, so the test does not spawn a process per operation. It does what
Node's fs cannot: times with nanoseconds (os.utime ns=) and mmap.

Requests (paths absolute):
  {"op": "utime", "path": P, "ns": [atime_ns, mtime_ns] | null, "follow": bool}
      null ns sets both times to now (UTIME_NOW)
  {"op": "mmap_write", "path": P, "off": N, "data": BASE64, "flush": bool}
      maps the file shared, writes data at off % size (clipped to the end of
      the file: mmap cannot grow a file), reads the range back through a
      second descriptor before unmapping (page cache coherence), msyncs when
      flush is true; replies [offset, bytes written, sha256 read back]
  {"op": "mmap_read", "path": P, "off": N, "len": N}
      reads through a shared read-only mapping at off % size; replies
      [offset, bytes read, sha256]
Replies: {"ok": value} or {"err": "ENOENT"} (an OSError's errno name) or
{"exc": "message"} for anything else (a bug of the request, not of the
filesystem).
"""
import base64
import errno
import hashlib
import json
import mmap
import os
import sys


def utime(path, ns, follow):
    if ns is None:
        os.utime(path, follow_symlinks=follow)
    else:
        os.utime(path, ns=(int(ns[0]), int(ns[1])), follow_symlinks=follow)
    return True


def window(fd, off, want):
    """(file offset, length, map offset, map length) of a mapping of up to want bytes at off % size."""
    size = os.fstat(fd).st_size
    if size == 0 or want == 0:
        return None
    pos = off % size
    n = min(want, size - pos)
    mapoff = pos - pos % mmap.ALLOCATIONGRANULARITY
    return pos, n, mapoff, pos - mapoff + n


def mmap_write(path, off, data, flush):
    fd = os.open(path, os.O_RDWR)
    try:
        w = window(fd, off, len(data))
        if w is None:
            return [0, 0, hashlib.sha256(b'').hexdigest()]
        pos, n, mapoff, maplen = w
        m = mmap.mmap(fd, maplen, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=mapoff)
        try:
            m[pos - mapoff:pos - mapoff + n] = data[:n]
            fd2 = os.open(path, os.O_RDONLY)
            try:
                back = os.pread(fd2, n, pos)
            finally:
                os.close(fd2)
            if flush:
                m.flush()
        finally:
            m.close()
        return [pos, n, hashlib.sha256(back).hexdigest()]
    finally:
        os.close(fd)


def mmap_read(path, off, want):
    fd = os.open(path, os.O_RDONLY)
    try:
        w = window(fd, off, want)
        if w is None:
            return [0, 0, hashlib.sha256(b'').hexdigest()]
        pos, n, mapoff, maplen = w
        m = mmap.mmap(fd, maplen, mmap.MAP_SHARED, mmap.PROT_READ, offset=mapoff)
        try:
            got = m[pos - mapoff:pos - mapoff + n]
        finally:
            m.close()
        return [pos, n, hashlib.sha256(got).hexdigest()]
    finally:
        os.close(fd)


def answer(req):
    op = req.get('op')
    if op == 'utime':
        return utime(req['path'], req.get('ns'), bool(req.get('follow', True)))
    if op == 'mmap_write':
        return mmap_write(req['path'], int(req['off']), base64.b64decode(req['data']), bool(req.get('flush')))
    if op == 'mmap_read':
        return mmap_read(req['path'], int(req['off']), int(req['len']))
    raise ValueError('unknown op %r' % (op,))


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = {'ok': answer(json.loads(line))}
        except OSError as e:
            reply = {'err': errno.errorcode.get(e.errno, str(e.errno))}
        except Exception as e:  # a bad request: reported, the helper keeps serving
            reply = {'exc': '%s: %s' % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()


if __name__ == '__main__':
    main()

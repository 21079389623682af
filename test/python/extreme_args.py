"""Extreme arguments at every operation, for test/posix/extreme-args.test.ts.

Run as `extreme_args.py DIR` with DIR inside the mount. Each case calls one
system call with an argument at or past a limit and records the outcome
("ok" or the errno name); the test compares the outcomes with a native
directory and checks that the daemon is still alive afterwards. Prints one
JSON object {case: outcome}. Everything is created under DIR and what should
remain is left for the test's manifest.
"""
import errno
import json
import os
import sys

d = sys.argv[1]
out = {}

def case(name, fn):
    try:
        r = fn()
        out[name] = 'ok' if r is None else r
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
    except (OverflowError, ValueError) as e:
        out[name] = 'python:' + type(e).__name__

p = lambda *a: os.path.join(d, *a)
TiB = 1 << 40

def fd_of(name, flags=os.O_RDWR | os.O_CREAT):
    return os.open(p(name), flags, 0o644)

def trunc(name, s):
    open(p(name), 'a').close()
    os.truncate(p(name), s)

def with_fd(name, fn, flags=os.O_RDWR | os.O_CREAT):
    fd = fd_of(name, flags)
    try:
        return fn(fd)
    finally:
        os.close(fd)

# sizes: truncate and ftruncate up to and past the 16 TiB limit
for label, size in [('0', 0), ('1', 1), ('64k-1', 65535), ('10T', 10 * TiB), ('16T', 16 * TiB), ('16T+1', 16 * TiB + 1),
                    ('999999999999999', 999999999999999), ('2^63-1', (1 << 63) - 1), ('-1', -1)]:
    case('truncate ' + label, lambda s=size, l=label: trunc('t-' + l.replace('^', ''), s))
    case('ftruncate ' + label, lambda s=size: with_fd('ft', lambda fd: os.ftruncate(fd, s)))
    case('size after ftruncate ' + label, lambda: os.stat(p('ft')).st_size)
os.truncate(p('ft'), 0)

# pwrite and pread at offsets around the limit
for label, off in [('0', 0), ('15T', 15 * TiB), ('16T-1', 16 * TiB - 1), ('16T', 16 * TiB), ('999999999999999', 999999999999999), ('2^62', 1 << 62)]:
    case('pwrite ' + label, lambda o=off: with_fd('pw', lambda fd: os.pwrite(fd, b'xy', o)))
    case('pread ' + label, lambda o=off: len(with_fd('pw', lambda fd: os.pread(fd, 4096, o))))
    case('size after pwrite ' + label, lambda: os.stat(p('pw')).st_size)
case('pread past end, length 64M', lambda: len(with_fd('pw', lambda fd: os.pread(fd, 64 << 20, 15 * TiB))))
case('lseek 2^62', lambda: with_fd('pw', lambda fd: os.lseek(fd, 1 << 62, os.SEEK_SET)))
case('blocks of pw (512 B units, at most 1 MiB)', lambda: os.stat(p('pw')).st_blocks <= 2048)
os.unlink(p('pw'))
for label in ['10T', '16T']:
    if os.path.exists(p('t-' + label)):
        case('blocks of t-' + label + ' is 0', lambda l=label: os.stat(p('t-' + l)).st_blocks == 0)
        os.unlink(p('t-' + label))

# name lengths
for n in [1, 254, 255, 256, 1024, 4095, 4096, 5000]:
    case('create name %d' % n, lambda n=n: os.close(os.open(p('n' * n), os.O_CREAT | os.O_WRONLY, 0o644)))
    case('mkdir name %d' % n, lambda n=n: os.mkdir(p('m' * n)))
    case('symlink target %d' % n, lambda n=n: os.symlink('s' * n, p('l%d' % n)))
case('path of 30 nested dirs of 100', lambda: os.makedirs(p(*(['q' * 100] * 30))))
case('rename to name 256', lambda: os.rename(p('n'), p('r' * 256)))

# modes
for m in [0, 0o7777, 0o177777, 0xFFFFFFFF]:
    case('open mode %o' % m, lambda m=m: os.close(os.open(p('mode-%o' % m), os.O_CREAT | os.O_WRONLY, m)))
    case('mkdir mode %o' % m, lambda m=m: os.mkdir(p('dmode-%o' % m), m))
    case('chmod %o' % m, lambda m=m: os.chmod(p('n'), m))
os.chmod(p('n'), 0o644)
case('mknod fifo 0o7777', lambda: os.mkfifo(p('fifo'), 0o7777))
case('utime extreme', lambda: os.utime(p('n'), ns=(0, (1 << 62))))
case('utime negative', lambda: os.utime(p('n'), ns=(-(1 << 40), -1)))
case('chown -2 -2 (no change)', lambda: os.chown(p('n'), -1, -1))
case('chown 2^32-2', lambda: os.chown(p('n'), (1 << 32) - 2, (1 << 32) - 2))

# xattrs
for n in [0, 1, 4096, 65536, 65537, 1 << 20]:
    case('setxattr value %d' % n, lambda n=n: os.setxattr(p('n'), 'user.v%d' % n, b'v' * n))
for n in [1, 200, 255, 256]:
    case('setxattr name %d' % n, lambda n=n: os.setxattr(p('n'), 'user.' + 'x' * (n - 5 if n > 5 else 1), b'1'))
case('listxattr', lambda: len(os.listxattr(p('n'))))
case('getxattr missing', lambda: os.getxattr(p('n'), 'user.none'))

# many open files
fds = []
def open_many():
    for i in range(2000):
        fds.append(os.open(p('many-%d' % (i % 50)), os.O_CREAT | os.O_RDWR, 0o644))
case('open 2000 descriptors', open_many)
for fd in fds:
    os.write(fd, b'z')
    os.close(fd)
case('sizes of many-*', lambda: sum(os.stat(p('many-%d' % i)).st_size for i in range(50)))

# reads and writes with extreme lengths
case('write 16 MiB at once', lambda: with_fd('big', lambda fd: os.write(fd, b'b' * (16 << 20))))
case('read 64 MiB at once', lambda: len(with_fd('big', lambda fd: os.read(fd, 64 << 20))))
case('readlink of a file', lambda: os.readlink(p('big')))
case('listdir', lambda: len(os.listdir(d)))
print(json.dumps(out))

#!/usr/bin/env python3
"""Prints fanotify events on the mount of PATH for SECONDS (probe for issue 17).

Tries a filesystem mark with directory-entry events (FAN_REPORT_DFID_NAME:
create, delete, move, as fatrace does) and falls back to a mount mark with the
classic events (open, access, modify, close-write); says which it got. One
line an event: "<mask names> <path of the event's fd>".
Usage: fanotify-watch.py PATH SECONDS
"""
import ctypes, os, struct, sys, time

libc = ctypes.CDLL(None, use_errno=True)
FAN_CLASS_NOTIF, FAN_REPORT_DFID_NAME = 0, 0x00000C00
FAN_MARK_ADD, FAN_MARK_MOUNT, FAN_MARK_FILESYSTEM = 0x1, 0x10, 0x100
EV = {0x1: 'ACCESS', 0x2: 'MODIFY', 0x4: 'ATTRIB', 0x8: 'CLOSE_WRITE', 0x10: 'CLOSE_NOWRITE', 0x20: 'OPEN',
      0x40: 'MOVED_FROM', 0x80: 'MOVED_TO', 0x100: 'CREATE', 0x200: 'DELETE', 0x400: 'DELETE_SELF', 0x800: 'MOVE_SELF',
      0x40000000: 'ONDIR', 0x08000000: 'EVENT_ON_CHILD'}
AT_FDCWD = -100
libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]


def names(mask):
    return ','.join(n for b, n in EV.items() if mask & b)


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    fd = libc.fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME, os.O_RDONLY)
    mode = None
    if fd >= 0 and libc.fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, 0x100 | 0x200 | 0x40 | 0x80 | 0x400 | 0x2 | 0x4 | 0x8 | 0x40000000, AT_FDCWD, path.encode()) == 0:
        mode = 'filesystem mark, directory-entry events'
    else:
        err = os.strerror(ctypes.get_errno())
        if fd >= 0:
            os.close(fd)
        print(f'# filesystem mark with FAN_REPORT_DFID_NAME refused: {err}', flush=True)
        fd = libc.fanotify_init(FAN_CLASS_NOTIF, os.O_RDONLY)
        if fd < 0 or libc.fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, 0x1 | 0x2 | 0x8 | 0x10 | 0x20, AT_FDCWD, path.encode()) != 0:
            print(f'# mount mark refused: {os.strerror(ctypes.get_errno())}', flush=True)
            return
        mode = 'mount mark, classic events'
    print(f'# {mode}', flush=True)
    os.set_blocking(fd, False)
    end = time.time() + seconds
    while time.time() < end:
        try:
            buf = os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.02)
            continue
        off = 0
        while off + 24 <= len(buf):
            event_len, _vers, _res, _mlen, mask, efd, pid = struct.unpack_from('=IBBHQii', buf, off)
            where = ''
            if efd >= 0:
                try:
                    where = os.readlink(f'/proc/self/fd/{efd}')
                finally:
                    os.close(efd)
            print(f'{names(mask)} {where} pid={pid}', flush=True)
            off += event_len

main()

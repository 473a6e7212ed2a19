"""The FUSE daemon of --storage-rate (throttle.py starts it, one per case):

    python -m pytest_fsbench.system.throttle_fuse BACKING MOUNTPOINT BYTES_PER_SECOND STATS_FILE

It shows the files of BACKING at MOUNTPOINT and paces every read and write through one token
bucket; with the mount's direct_io every I/O of a loop device on such a file reaches it. Its
counters go to STATS_FILE (JSON) every tenth of a second and when it ends, which it does once the
mount is unmounted. mfusepy (ctypes bindings of libfuse 2 or 3, pure Python, maintained) is
imported here only, so fsbench runs without it unless a rate is asked for.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import mfusepy

from .throttle import STATS_SECONDS, TokenBucket

#: the stat fields a getattr answers with (times in nanoseconds: use_ns)
STAT_FIELDS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_blksize")


class Passthrough(mfusepy.Operations):
    use_ns = True

    def __init__(self, root: Path, bucket: TokenBucket) -> None:
        self.root = root
        self.bucket = bucket
        self.counts = {"read_bytes": 0, "written_bytes": 0, "reads": 0, "writes": 0}
        self._lock = threading.Lock()

    def _path(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _count(self, kind: str, size: int) -> None:
        """kind: read or write."""
        with self._lock:
            self.counts["read_bytes" if kind == "read" else "written_bytes"] += size
            self.counts[f"{kind}s"] += 1

    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self._path(path))
        return {**{key: getattr(st, key) for key in STAT_FIELDS}, "st_atime": st.st_atime_ns,
                "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._path(path))]

    def statfs(self, path):
        st = os.statvfs(self._path(path))
        return {key: getattr(st, key) for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail",
                                                   "f_files", "f_ffree", "f_favail", "f_namemax")}

    def create(self, path, mode, flags=None):
        return os.open(self._path(path), os.O_RDWR | os.O_CREAT, mode)

    def open(self, path, flags):
        # the backing file is read and written through Python's unaligned buffers: no O_DIRECT there
        return os.open(self._path(path), flags & ~(os.O_DIRECT | os.O_CREAT | os.O_EXCL))

    def read(self, path, size, offset, fh):
        self.bucket.take(size)
        data = os.pread(fh, size, offset)
        self._count("read", len(data))
        return data

    def write(self, path, data, offset, fh):
        self.bucket.take(len(data))
        written = os.pwrite(fh, data, offset)
        self._count("write", written)
        return written

    def truncate(self, path, length, fh=None):
        os.truncate(self._path(path), length)

    def fsync(self, path, datasync, fh):
        (os.fdatasync if datasync else os.fsync)(fh)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)

    def unlink(self, path):
        os.unlink(self._path(path))

    def mkdir(self, path, mode):
        os.mkdir(self._path(path), mode)

    def rmdir(self, path):
        os.rmdir(self._path(path))

    def rename(self, old, new):
        os.rename(self._path(old), self._path(new))

    def chmod(self, path, mode):
        os.chmod(self._path(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._path(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._path(path), ns=times) if times else os.utime(self._path(path))


def write_stats(ops: Passthrough, rate: int, path: Path) -> None:
    with ops._lock:
        stats = {**ops.counts, "waited_seconds": round(ops.bucket.waited, 3), "rate_bytes": rate,
                 "fuse": f"libfuse {mfusepy.fuse_version_major}.{mfusepy.fuse_version_minor}", "pid": os.getpid()}
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(stats))
    partial.replace(path)


def options() -> dict[str, object]:
    """The mount's options: direct_io (no page cache of the images on the host, every I/O reaches
    the daemon), others' access (the loop device's I/O), and, on libfuse 2, writes of more than a page."""
    found: dict[str, object] = {"foreground": True, "nothreads": False, "direct_io": True, "allow_other": True,
                                "fsname": "fsbench-throttle", "max_read": 131072}
    if mfusepy.fuse_version_major == 2:
        found.update(big_writes=True, max_write=131072)
    return found


def main(argv: list[str]) -> int:
    backing, mountpoint, rate, stats = Path(argv[0]), argv[1], int(argv[2]), Path(argv[3])
    ops = Passthrough(backing, TokenBucket(rate))
    done = threading.Event()

    def keep_writing() -> None:
        while not done.wait(STATS_SECONDS):
            write_stats(ops, rate, stats)

    threading.Thread(target=keep_writing, daemon=True).start()
    try:
        mfusepy.FUSE(ops, mountpoint, **options())
    finally:
        done.set()
        write_stats(ops, rate, stats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A real kernel tree to bisect: Debian's linux-source-6.1 unpacked into a git repository, with two
series of commits on top of it. Not a pytest test.

    .venv/bin/python scripts/kernel_series.py DIR [--source=/usr/src/linux-source-6.1.tar.xz]

DIR (new) becomes a git repository (the source is Debian's linux-source-6.1 package, which
`./fsbench.sh setup` installs for the kernel-build workload):

- `upstream`: Linux as the package ships it, one commit;
- `base`: one commit on top that lets a User-mode Linux kernel of 6.1 boot on a host whose CPU
  saves more register state than UML 6.1 has room for (11008 bytes of XSAVE area with AMX, against
  UML's fixed 2696: every guest process died with "ptrace set fp regs failed, errno = 14", Debian's
  own linux.uml too). Both series start here, so both endpoints boot;
- branch `slowed`: ten commits on base, exactly one of which (the sixth, "ext4: flush the
  device after every buffered write") slows ext4 down: every write(2) to a file ends with a cache
  flush of the filesystem's device, so dd's 1M writes each flush the disk (work.flushes_per_gb
  rises from about 22 to over 1000, and the write is slower); the nine others are harmless
  (comments, documentation, a code refactor, files the bisect's kernel does not build);
- branch `steady`: the same ten commits with the sixth replaced by a harmless one.

Prints each commit (hash, subject) and the time the unpacking and committing took. Then:

    .venv/bin/fsbench bisect --tree=DIR --good=base --bad=slowed -- -k "dd and write" --fs=ext4
    .venv/bin/fsbench bisect --tree=DIR --good=base --bad=steady -- -k "dd and write" --fs=ext4
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_fsbench.system.commands import execute

SOURCE = Path("/usr/src/linux-source-6.1.tar.xz")
AUTHOR = ["-c", "user.name=fsbench series", "-c", "user.email=series@fsbench.invalid"]
#: every commit's date, so the same tarball gives the same hashes on every machine (the docs quote them)
DATE = "2026-01-01T12:00:00+00:00"


@dataclass(frozen=True)
class Edit:
    """One replacement in one file: old must occur exactly once."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Commit:
    subject: str
    body: str
    edits: tuple[Edit, ...]


UML_XSAVE = Commit(
    "um: transfer the host's whole XSAVE area, whatever its size",
    "UML 6.1 keeps 2696 bytes for a process's extended register state and passes that size to\n"
    "PTRACE_SETREGSET, which the host refuses (EFAULT) unless it is exactly the host's XSAVE size:\n"
    "11008 bytes on a CPU with AMX. Every guest process then died at its first switch.\n"
    "Keep room for 12288 bytes, ask the host its size once, and transfer exactly that; the\n"
    "auxiliary copy of the registers in thread_info grows with it, so bisect kernels are built\n"
    "with 32K stacks (CONFIG_KERNEL_STACK_ORDER=3).",
    (Edit("arch/x86/um/user-offsets.c", "\tDEFINE_LONGS(HOST_FP_SIZE, 2696);",
          "\t/* room for the host's whole XSAVE area: 11008 bytes with AMX */\n"
          "\tDEFINE_LONGS(HOST_FP_SIZE, 12288);"),
     Edit("arch/x86/um/os-Linux/registers.c", "int have_xstate_support;\n",
          "int have_xstate_support;\n/*\n * PTRACE_SETREGSET takes exactly the host's XSAVE area, whose size "
          "depends on its CPU\n * (arch_init_registers reads it); FP_SIZE is only the room kept for it.\n */\n"
          "static unsigned long host_fp_size = FP_SIZE * sizeof(unsigned long);\n"),
     Edit("arch/x86/um/os-Linux/registers.c",
          "\tif (have_xstate_support) {\n\t\tiov.iov_base = fp_regs;\n\t\tiov.iov_len = FP_SIZE * sizeof(unsigned "
          "long);\n\t\tif (ptrace(PTRACE_GETREGSET,",
          "\tif (have_xstate_support) {\n\t\tiov.iov_base = fp_regs;\n\t\tiov.iov_len = host_fp_size;\n"
          "\t\tif (ptrace(PTRACE_GETREGSET,"),
     Edit("arch/x86/um/os-Linux/registers.c",
          "\t\tiov.iov_len = FP_SIZE * sizeof(unsigned long);\n\t\tif (ptrace(PTRACE_SETREGSET,",
          "\t\tiov.iov_len = host_fp_size;\n\t\tif (ptrace(PTRACE_SETREGSET,"),
     Edit("arch/x86/um/os-Linux/registers.c",
          "\tif (ptrace(PTRACE_GETREGSET, pid, NT_X86_XSTATE, &iov) == 0)\n\t\thave_xstate_support = 1;\n",
          "\tif (ptrace(PTRACE_GETREGSET, pid, NT_X86_XSTATE, &iov) == 0) {\n\t\thave_xstate_support = 1;\n"
          "\t\thost_fp_size = iov.iov_len;\n\t}\n"),
     Edit("arch/um/Kconfig", "\tdefault 2 if 64BIT\n", "\tdefault 3 if 64BIT\n")),
)

SLOWING = Commit(
    "ext4: flush the device after every buffered write",
    "Make sure the device's volatile cache holds nothing of a buffered write once write(2)\n"
    "returns. (This is the series' one slowing commit: a cache flush per write(2).)",
    (Edit("fs/ext4/file.c", "\tif (unlikely(ret <= 0))\n\t\treturn ret;\n\treturn generic_write_sync(iocb, ret);\n}",
          "\tif (unlikely(ret <= 0))\n\t\treturn ret;\n\tret = generic_write_sync(iocb, ret);\n"
          "\t/* the device's cache holds what was just written: flush it */\n\tif (ret > 0)\n"
          "\t\tblkdev_issue_flush(inode->i_sb->s_bdev);\n\treturn ret;\n}"),),
)

HARMLESS_INSTEAD = Commit(
    "ext4: say why a buffered write needs no flush of its own",
    "",
    (Edit("fs/ext4/file.c", "\tif (unlikely(ret <= 0))\n\t\treturn ret;\n\treturn generic_write_sync(iocb, ret);\n}",
          "\tif (unlikely(ret <= 0))\n\t\treturn ret;\n\t/* O_SYNC and O_DSYNC writes flush here; others at writeback */\n"
          "\treturn generic_write_sync(iocb, ret);\n}"),),
)

HARMLESS = (
    Commit("ext4: name the commit interval's unit where the journal is set up", "",
           (Edit("fs/jbd2/journal.c", "\tjournal->j_commit_interval = (HZ * JBD2_DEFAULT_MAX_COMMIT_AGE);\n",
                 "\t/* in jiffies: the default age is in seconds */\n"
                 "\tjournal->j_commit_interval = (HZ * JBD2_DEFAULT_MAX_COMMIT_AGE);\n"),)),
    Commit("Documentation: ext4: commit=0 means the default", "",
           (Edit("Documentation/admin-guide/ext4.rst", "the same effect as leaving it at the default (5 seconds).",
                 "the same effect as leaving it at the default (5 seconds, JBD2_DEFAULT_MAX_COMMIT_AGE)."),)),
    Commit("ext4: keep the write path's dispatch in one local", "",
           (Edit("fs/ext4/file.c", "\tif (iocb->ki_flags & IOCB_DIRECT)\n\t\treturn ext4_dio_write_iter(iocb, from);"
                 "\n\telse\n\t\treturn ext4_buffered_write_iter(iocb, from);\n}",
                 "\tbool direct = iocb->ki_flags & IOCB_DIRECT;\n\n\tif (direct)\n"
                 "\t\treturn ext4_dio_write_iter(iocb, from);\n\treturn ext4_buffered_write_iter(iocb, from);\n}"),)),
    Commit("xfs: say what sync_fs waits for", "",
           (Edit("fs/xfs/xfs_super.c", "\tint\t\t\twait)\n{\n\tstruct xfs_mount\t*mp = XFS_M(sb);\n",
                 "\tint\t\t\twait)\t/* wait: for the log too */\n{\n\tstruct xfs_mount\t*mp = XFS_M(sb);\n"),)),
    Commit("MAINTAINERS: ext4: the wiki's address over https", "",
           (Edit("MAINTAINERS", "W:	http://ext4.wiki.kernel.org", "W:	https://ext4.wiki.kernel.org"),)),
    # the sixth commit goes here: SLOWING in `slowed`, HARMLESS_INSTEAD in `steady`
    Commit("ext4: say in sync_fs's declaration what wait means", "",
           (Edit("fs/ext4/super.c", "static int ext4_sync_fs(struct super_block *sb, int wait);\n",
                 "static int ext4_sync_fs(struct super_block *sb, int wait);\t/* wait: for the commit */\n"),)),
    Commit("jbd2: the batch time's unit, beside it", "",
           (Edit("fs/jbd2/journal.c", "\tjournal->j_max_batch_time = 15000; /* 15ms */\n",
                 "\tjournal->j_max_batch_time = 15000; /* 15ms, in microseconds */\n"),)),
    Commit("Documentation: ext4: large commit intervals", "",
           (Edit("Documentation/admin-guide/ext4.rst", "Setting it\n        to very large values will improve "
                 "performance.", "Setting it\n        to very large values will improve performance (fewer journal "
                 "commits)."),)),
    Commit("ext4: a comment on why the write waits for direct I/O", "",
           (Edit("fs/ext4/file.c", "\t * range. Wait for in-flight DIO to finish before dirtying pages.\n",
                 "\t * range. Wait for in-flight DIO to finish before dirtying pages\n"
                 "\t * (a direct write past them would otherwise be overwritten).\n"),)),
)
#: where the slowing commit stands in the series (1-based)
SLOWING_AT = 6


def git(tree: Path, *args: str, timeout: float = 1800.0) -> str:
    dated = ["env", f"GIT_AUTHOR_DATE={DATE}", f"GIT_COMMITTER_DATE={DATE}"]
    return execute([*dated, "git", "-C", str(tree), *AUTHOR, *args], timeout=timeout).stdout.strip()


def apply(tree: Path, commit: Commit) -> str:
    """Make the commit's edits and commit them; its hash."""
    for edit in commit.edits:
        path = tree / edit.path
        text = path.read_text()
        if text.count(edit.old) != 1:
            raise SystemExit(f"{edit.path}: the text to replace occurs {text.count(edit.old)} times, not once: "
                             f"{edit.old[:60]!r}")
        path.write_text(text.replace(edit.old, edit.new))
    git(tree, "add", "-f", *sorted({edit.path for edit in commit.edits}))
    git(tree, "commit", "-q", "-m", commit.subject + (f"\n\n{commit.body}" if commit.body else ""))
    return git(tree, "rev-parse", "HEAD")


def series(with_slowing: bool) -> list[Commit]:
    sixth = SLOWING if with_slowing else HARMLESS_INSTEAD
    return [*HARMLESS[:SLOWING_AT - 1], sixth, *HARMLESS[SLOWING_AT - 1:]]


def release(tree: Path) -> str:
    fields = dict(line.split(" = ", 1) for line in (tree / "Makefile").read_text().splitlines()[:6] if " = " in line)
    return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}"


def make(tree: Path, source: Path) -> None:
    if tree.exists() and any(tree.iterdir()):
        raise SystemExit(f"{tree} exists and is not empty; name a new directory")
    tree.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    execute(["tar", "-xJf", str(source), "-C", str(tree), "--strip-components=1"], timeout=1800)
    unpacked = time.monotonic()
    git(tree, "init", "-q", "-b", "upstream")
    git(tree, "add", "-A", "-f")  # Debian's .gitignore ignores every top-level path (its packaging's)
    git(tree, "commit", "-q", "-m", f"Linux {release(tree)} as Debian's linux-source-6.1 ships it")
    committed = time.monotonic()
    print(f"unpacked {source.name} in {unpacked - start:.0f} s; committed it in {committed - unpacked:.0f} s")
    base = apply(tree, UML_XSAVE)
    git(tree, "tag", "base")
    print(f"base    {base[:12]} {UML_XSAVE.subject}")
    for branch, slowing in (("slowed", True), ("steady", False)):
        git(tree, "checkout", "-q", "-b", branch, "base")
        for number, commit in enumerate(series(slowing), start=1):
            sha = apply(tree, commit)
            mark = "  <- slows ext4 down" if commit is SLOWING else ""
            print(f"{branch:7} {sha[:12]} {number:2}. {commit.subject}{mark}")
    git(tree, "checkout", "-q", "upstream")
    print(f"done in {time.monotonic() - start:.0f} s: bisect base..slowed (one slowing commit) and base..steady "
          "(none)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="the repository to make (a new directory)")
    parser.add_argument("--source", type=Path, default=SOURCE, help=f"the Linux source tarball (default {SOURCE})")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        raise SystemExit(f"--source={args.source}: no such file; install Debian's linux-source-6.1 "
                         "(./fsbench.sh setup does) or name a Linux source tarball")
    make(args.directory.absolute(), args.source)
    return 0


if __name__ == "__main__":
    sys.exit(main())

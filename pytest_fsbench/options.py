"""What an option is (Option: flag, parser, default, help, kind) and the parsers options share;
the table of every option is settings.OPTIONS. The pytest plugin and the `fsbench` command add
options from that table and parse their values with these functions, so a value is checked the
same way everywhere and arrives typed.

A parser takes the text and returns the typed value, or raises ValueError with the reason (the
option's name and value are put in front of it) or UsageError with a whole message.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError
from .sizes import existing_ancestor

#: option kinds: one value; a flag; a repeatable value; a value that may be left out (const)
VALUE, FLAG, APPEND, OPTIONAL = "value", "flag", "append", "optional"


@dataclass(frozen=True)
class Option:
    flag: str
    parse: Callable[[str], Any]
    default: str | None
    help: str
    kind: str = VALUE
    ini: bool = True  # also a pytest ini setting, named like dest
    metavar: str | None = None
    const: str | None = None  # OPTIONAL: the value when the flag is given alone
    path: bool = False  # the value names a file or directory
    shown_default: str | None = None  # the default as the help text states it

    @property
    def dest(self) -> str:
        return "fsbench_" + self.flag.lstrip("-").replace("-", "_")

    def value(self, text: str) -> Any:
        """The typed value of text; UsageError naming the option and the value. An empty value
        is never "off": leaving the option out is (issue 23: --devices= used loop images)."""
        if not text.strip():
            raise UsageError(f"{self.flag}={text!r}: give a value or leave the option out")
        home = unexpanded_home(text) if self.path or self.flag == "--kernel" else None
        if home:
            raise UsageError(f"{self.flag}={text}: {home}")
        try:
            return self.parse(text)
        except UsageError:
            raise
        except ValueError as exc:
            raise UsageError(f"{self.flag}={text!r}: {exc}") from None

    def values(self, texts: Iterable[str]) -> tuple:
        return tuple(self.value(t) for t in texts)

    def help_text(self) -> str:
        shown = self.shown_default if self.shown_default is not None else self.default
        suffix = f" (default: {shown})" if shown not in (None, "") and self.kind != FLAG else ""
        return self.help + suffix


def given_twice(args: Iterable[str], flags: Iterable[str]) -> str | None:
    """The message for the first of flags (options taking one value) given more than once on the
    command line, whose parser would silently keep the last (issue 23: --runs=2 --runs=3)."""
    args, flags = list(args), set(flags)
    seen: dict[str, list[str]] = {}
    for i, arg in enumerate(args):
        if arg == "--":
            break
        flag, eq, text = arg.partition("=")
        if flag not in flags:
            continue
        if not eq:
            following = args[i + 1] if i + 1 < len(args) else ""
            text = repr(following) if following == "-" or following and not following.startswith("-") else "alone"
        else:
            text = repr(text)
        seen.setdefault(flag, []).append(text)
        if len(seen[flag]) > 1:
            return f"{flag} is given twice ({', then '.join(seen[flag])}); it takes one value, so give it once"
    return None


def add_to_argparse(parser: argparse.ArgumentParser | argparse._ArgumentGroup, option: Option) -> None:
    """Add option to an argparse parser (the `fsbench` command); parse the value afterwards with
    option.value, never with argparse's type=, so the messages are the plugin's."""
    kwargs: dict[str, Any] = {"dest": option.dest, "help": option.help_text().replace("%", "%%")}
    metavar = option.metavar or option.flag.lstrip("-").replace("-", "_").upper()
    if option.kind == FLAG:
        parser.add_argument(option.flag, action="store_true", **kwargs)
    elif option.kind == APPEND:
        parser.add_argument(option.flag, action="append", default=[], metavar=metavar, **kwargs)
    elif option.kind == OPTIONAL:
        parser.add_argument(option.flag, nargs="?", const=option.const, default=option.default,
                            metavar=metavar, **kwargs)
    else:
        parser.add_argument(option.flag, default=option.default, metavar=metavar, **kwargs)


# --- parsers shared by several options ------------------------------------------------------------


#: the most runs (or other counts) an option takes: more would run until killed
MAX_COUNT = 100_000


def whole(text: str) -> int:
    if not text.strip().isdigit():
        raise ValueError("give a whole number")
    if int(text) > MAX_COUNT:
        raise ValueError(f"give a whole number of at most {MAX_COUNT}")
    return int(text)


def positive(text: str) -> int:
    value = whole(text)
    if value < 1:
        raise ValueError("give a whole number of 1 or more")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("give a number of seconds, e.g. 600") from None
    if not value > 0 or value == float("inf"):
        raise ValueError("give a number of seconds above 0, e.g. 600")
    return value


_PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%?\s*")


def percent_below_100(text: str) -> float:
    match = _PERCENT.fullmatch(text)
    if not match or not 0 < float(match.group(1)) < 100:
        raise ValueError("give a percentage above 0 and below 100, e.g. 5%")
    return float(match.group(1))


def alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 0.5:
        raise ValueError("give a significance level above 0 and below 0.5, e.g. 0.05")
    return value


def name(text: str) -> str:
    if not text.strip() or text != text.strip():
        raise ValueError("give a name without leading or trailing spaces")
    return text


#: the longest name of one file, and of a whole path, Linux takes (NAME_MAX, PATH_MAX)
NAME_MAX, PATH_MAX = 255, 4095


def special_kind(where: Path | str) -> str | None:
    """What a path that exists is when it is no regular file, directory or /dev/null ("a FIFO (a
    named pipe)", "a socket", "a block device", "a character device"); None otherwise. Writing to a
    FIFO blocks until something reads it, a block device would be overwritten (issue 44: an output
    at one hung, or wrote onto a loop device)."""
    try:
        mode = os.stat(where).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or os.path.samefile(where, os.devnull):
        return None
    return ("a FIFO (a named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a character device" if stat.S_ISCHR(mode)
            else "no regular file")


def unexpanded_home(text: str) -> str | None:
    """Why a path's '~' was taken as a name (None when it has none): the shell expands it only at
    a word's start, not after '=' (issue 44: --image-dir=~/x made a directory named '~')."""
    if "://" in text:
        return None
    for part in re.split(r"[,:=]", text):
        if part.startswith("~"):
            home = part.split("/")[0]
            written = os.path.expanduser(home)
            hint = f"write {written} instead of {home}" if written != home else "write the home directory out"
            return (f"the shell did not expand {home!r} (it does not after '='), and fsbench takes a path as "
                    f"written; {hint}")
    return None


def path(text: str) -> Path:
    if not text.strip():
        raise ValueError("give a path")
    home = unexpanded_home(text)
    if home:
        raise ValueError(home)
    if len(os.fsencode(text)) > PATH_MAX or any(len(os.fsencode(part)) > NAME_MAX for part in Path(text).parts):
        # issue 34: File name too long, as an INTERNALERROR
        raise ValueError(f"a name in it is longer than the {NAME_MAX} bytes a file name may have; give a shorter one")
    return Path(text)


def file_to_write(text: str) -> Path:
    """A file fsbench will write at the end: not a directory, in an existing writable directory.
    It is opened for writing now (a new one made and removed again, an existing one left as it
    is), since only that tells, e.g. in /proc or on a full or immutable file (issue 23:
    --report=/proc/r.html failed after the whole session)."""
    where = path(text)
    if where.is_dir():
        raise ValueError("is a directory; name the file to write")
    kind = special_kind(where)
    if kind:
        raise ValueError(f"is {kind}, not a file; name a regular file")
    if not where.exists() and where.absolute().parent == Path("/dev"):  # found by issue 44's sweep: -o /dev/sda,
        raise ValueError("is no device here, and /dev holds devices, not files; name a file elsewhere")  # no disk, made one
    parent = where.parent if str(where.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"the directory {parent} does not exist; make it or name another file")
    try:
        existed = where.exists()
        with open(where, "ab" if existed else "xb"):
            pass
        if not existed:
            where.unlink()
    except OSError as exc:
        raise ValueError(f"cannot be written ({exc.strerror}); name a file in a writable directory") from None
    return where


def write_whole(where: Path, data: str | bytes) -> None:
    """Write an output whole or not at all: into a new file beside it, renamed over it once
    written, so a signal or a full disk never leaves half of it (found by issue 44's sweep: Ctrl-C
    while a report was written). /dev/null is written as it is."""
    if where.exists() and os.path.samefile(where, os.devnull):
        where.write_bytes(data if isinstance(data, bytes) else data.encode())
        return
    partial = where.with_name(f".{where.name}.{os.getpid()}.partial")
    try:
        if isinstance(data, bytes):
            partial.write_bytes(data)
        else:
            partial.write_text(data)
        os.replace(partial, where)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


#: the first bytes of every SQLite database (a result store, or any other's): never replaced by an output
SQLITE_HEADER = b"SQLite format 3\x00"
#: the files SQLite keeps beside a database while it is in use
JOURNALS = ("-wal", "-shm", "-journal")
#: how far into a file its fsbench mark is looked for (each output carries it near its top)
MARK_WITHIN = 8192


def output_mark(kind: str) -> str:
    """The words every file fsbench writes as an output of kind (report, export, figure) carries
    near its top, so that a file found at an output's path later is known for one of fsbench's
    (issue 34: `fsbench report 1 --store=S -o S` replaced a team's store with the page)."""
    return f"written by fsbench as its {kind}"


def _is_sqlite(where: Path) -> bool:
    try:
        with open(where, "rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _same_file(where: Path, other: Path) -> bool:
    try:
        return where.samefile(other)
    except OSError:  # one of them is not there (yet)
        return where.resolve() == other.resolve()


def check_replaceable(where: Path, kind: str, stores: Iterable[Path | str] = (), force: bool | None = False) -> None:
    """ValueError unless fsbench may write its kind of output at where: never a result store
    (stores: the ones in use, with their journals) or any SQLite database; an existing file only
    when fsbench wrote it as that kind of output (its mark is in it), an empty one, or with force
    (None: the command has no --force)."""
    for store in stores:
        if isinstance(store, Path) and any(_same_file(where, store.with_name(store.name + suffix))
                                           for suffix in ("", *JOURNALS)):
            raise ValueError(f"is the result store {store} (or its journal); name another file")
    for suffix in JOURNALS:
        if where.name.endswith(suffix) and _is_sqlite(where.with_name(where.name[:-len(suffix)])):
            raise ValueError(f"is the journal of the SQLite database {where.name[:-len(suffix)]}; name another file")
    if not where.is_file():
        return
    try:
        with open(where, "rb") as file:
            head = file.read(MARK_WITHIN)
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror}), so it is not replaced; name another file") from None
    if head.startswith(SQLITE_HEADER):
        raise ValueError("is an SQLite database (a result store?), which fsbench never replaces; name another file")
    if head and output_mark(kind).encode() not in head and not force:
        replace = "" if force is None else ", or pass --force to replace it"
        raise ValueError(f"exists and is no {kind} fsbench wrote; name a new file{replace}")


def directory_for_files(text: str) -> Path:
    """A directory fsbench may create files in: an existing writable directory, or one it can make
    (nothing is made here)."""
    where = path(text)
    if where.exists() and not where.is_dir():
        raise ValueError("is not a directory; name a directory (it is made if missing)")
    if where.is_symlink() and not where.exists():  # making it would fail: the link is in the way
        raise ValueError(f"is a link to {os.readlink(where)}, which does not exist; make that directory, or name "
                         "another")
    existing = existing_ancestor(where)
    if not existing.is_dir():
        raise ValueError(f"{existing} is not a directory; name a directory")
    try:
        if not os.access(existing, os.W_OK | os.X_OK):
            raise PermissionError
        tempfile.TemporaryFile(dir=existing).close()  # root may write where access() says so, /proc not
    except OSError:
        raise ValueError(f"{existing} is not writable here (read-only or no permission); name another "
                         "directory") from None
    return where

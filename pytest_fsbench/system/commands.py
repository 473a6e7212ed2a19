"""The one place that executes external commands.

Every command is an argv list (never a shell string), runs with LC_ALL=C so parsers see stable
number formats, is logged with its duration, exit status and output tail, and either returns its
result or raises CommandError. Other modules receive an `Executor` (`execute`, or a recorder) so tests can record commands
instead of executing them.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Protocol

from ..errors import CommandError

log = logging.getLogger("fsbench.system")

DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        """stdout and stderr together, as a person reading a terminal would see them."""
        return self.stdout + self.stderr


class Executor(Protocol):
    def __call__(
        self,
        argv: list[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        check: bool = True,
        input: str | None = None,
    ) -> Completed: ...


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    return env


def execute(
    argv: list[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
    input: str | None = None,
) -> Completed:
    """Run argv; raise CommandError on failure (if check), timeout, or a missing program."""
    argv = [str(a) for a in argv]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            env=_env(),
        )
    except FileNotFoundError as exc:
        raise CommandError(argv, None, "", f"program not found: {exc.filename}") from exc
    except subprocess.TimeoutExpired as exc:
        out = _text(exc.stdout) + _text(exc.stderr)
        log.warning("timeout after %.0fs: %s", timeout, " ".join(argv))
        raise CommandError(argv, None, out, f"timed out after {timeout:g}s") from exc
    seconds = time.monotonic() - start
    done = Completed(tuple(argv), proc.returncode, proc.stdout, proc.stderr, seconds)
    log.info("%s -> %d in %.2fs", " ".join(argv), proc.returncode, seconds)
    if done.output.strip():
        log.debug("output tail: %s", done.output.strip()[-2000:])
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, done.output)
    return done


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data


def execute_logged(argv: list[str], log_file: os.PathLike[str] | str, *, timeout: float = DEFAULT_TIMEOUT,
                   check: bool = True, tail: int = 40) -> Completed:
    """Run argv with its output (stdout and stderr together, as they come) appended to log_file,
    for commands whose output is long (a kernel's build); the result's stdout is the output's last
    tail lines. CommandError as execute raises it, with those lines."""
    argv = [str(a) for a in argv]
    start = time.monotonic()
    with open(log_file, "ab") as log_handle:
        log_handle.write(f"$ {' '.join(argv)}\n".encode())
        log_handle.flush()
        try:
            proc = subprocess.run(argv, stdout=log_handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout, env=_env())
        except FileNotFoundError as exc:
            raise CommandError(argv, None, "", f"program not found: {exc.filename}") from exc
        except subprocess.TimeoutExpired as exc:
            raise CommandError(argv, None, _tail(log_file, tail), f"timed out after {timeout:g}s") from exc
    seconds = time.monotonic() - start
    done = Completed(tuple(argv), proc.returncode, _tail(log_file, tail), "", seconds)
    log.info("%s -> %d in %.2fs (output in %s)", " ".join(argv), proc.returncode, seconds, log_file)
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, done.stdout)
    return done


def _tail(path: os.PathLike[str] | str, lines: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - 200 * lines))
        return "\n".join(handle.read().decode(errors="replace").splitlines()[-lines:]) + "\n"

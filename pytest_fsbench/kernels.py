"""The kernels a case can run under: the host's own, or a User-mode Linux guest kernel (Debian's
`linux.uml`, or one a developer built with `make ARCH=um`). Pure parsing of --kernel."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError

HOST = "host"
#: Debian's user-mode-linux package: the kernel, and its modules under UML_MODULES/<version>
DEBIAN_UML = Path("/usr/bin/linux.uml")
UML_MODULES = Path("/usr/lib/uml/modules")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class Kernel:
    """A kernel cases run under; label names it in case ids (uml-ext4-raid10)."""

    label: str
    path: Path | None = None  # the UML kernel program; None: the host's kernel

    @property
    def guest(self) -> bool:
        return self.path is not None

    def missing(self) -> str | None:
        """Why this kernel cannot run here (None when it can)."""
        if self.path is None or (self.path.is_file() and os.access(self.path, os.X_OK)):
            return None
        if self.path == DEBIAN_UML:
            return f"the User-mode Linux kernel {DEBIAN_UML} is not installed (Debian package user-mode-linux)"
        return f"the UML kernel {self.path} is not an executable file"


def _uml_path(text: str, value: str) -> tuple[str | None, Path]:
    name, eq, path = value.partition("=")
    if not eq:
        name, path = None, value
    elif not _NAME.fullmatch(name):
        raise UsageError(f"--kernel={text!r}: the name {name!r} must be letters, digits, '.', '_', '+' or '-'")
    kernel = Path(path)
    if not kernel.is_absolute():
        raise UsageError(f"--kernel={text!r}: give the UML kernel's absolute path, e.g. uml:/src/linux/linux")
    if not kernel.is_file() or not os.access(kernel, os.X_OK):
        raise UsageError(f"--kernel={text!r}: {kernel} is not an executable file; build it with "
                         "'make ARCH=um' and name the 'linux' program it makes")
    return name, kernel


def _label_of(name: str | None, path: Path) -> str:
    if name is None:
        name = path.parent.name if path.name in ("linux", "vmlinux") else path.name
        name = re.sub(r"[^A-Za-z0-9._+-]", "_", name) or "kernel"
    return f"uml-{name}"


def parse_kernels(text: str) -> tuple[Kernel, ...]:
    """'host', 'uml' (Debian's UML kernel), 'uml:PATH' or 'uml:NAME=PATH', comma-separated."""
    kernels: list[Kernel] = []
    for part in (p.strip() for p in text.split(",")):
        if part == HOST:
            kernel = Kernel(HOST)
        elif part == "uml":
            kernel = Kernel("uml", DEBIAN_UML)
        elif part.startswith("uml:") and part[4:]:
            name, path = _uml_path(text, part[4:])
            kernel = Kernel(_label_of(name, path), path)
        else:
            raise UsageError(f"--kernel={text!r}: unknown kernel {part!r}; choose host, uml (Debian's "
                             "User-mode Linux), uml:PATH or uml:NAME=PATH (a UML kernel you built)")
        if any(k.label == kernel.label for k in kernels):
            raise UsageError(f"--kernel={text!r}: two kernels are both named {kernel.label!r}; name them apart "
                             "with uml:NAME=PATH")
        kernels.append(kernel)
    return tuple(kernels)

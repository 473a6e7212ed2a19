"""The kernels a case can run under: the host's own, a User-mode Linux guest kernel (Debian's
`linux.uml`, or one a developer built with `make ARCH=um`), or a kernel booted in a QEMU virtual
machine (Debian's packaged kernel, or a bzImage a developer built). Parsing of --kernel.

Several kernels make a kernel A/B (every case under each); `host+uml` instead chooses one kernel
per case: the host's where the case can run there, else the guest's (a *fallback* kernel)."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..options import special_kind
from ..sizes import parse_size
from ..system.host import DEBIAN_UML

HOST = "host"
#: a guest kernel's RAM, its page cache included (a UML guest's and a virtual machine's)
GUEST_MEMORY = "2G"


def ram_of(kernel: str, memory: int | None, host_ram: int) -> int:
    """The memory a measured run may use, page cache included, what 2xRAM file sizes are made of:
    --memory's limit; else the RAM of the kernel the case runs under, a guest's own (GUEST_MEMORY:
    a 2xRAM file in a 2G guest is 4G, not twice the host's RAM, which the guest's page cache
    never had), or the host's."""
    if memory:
        return memory
    return host_ram if kernel == HOST else parse_size(GUEST_MEMORY)
#: Debian's user-mode-linux package: the kernel, and its modules under UML_MODULES/<version>
UML_MODULES = Path("/usr/lib/uml/modules")
#: Debian's packaged kernels (linux-image-amd64), booted in a virtual machine by --kernel=vm
BOOT = Path("/boot")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class Kernel:
    """A kernel cases run under; label names it in case ids (uml-ext4-raid10)."""

    label: str
    path: Path | None = None  # the UML kernel program or the VM's bzImage (or tree); None: the host's
    fallback: bool = False  # host+uml: runs only the cases the host's kernel cannot, never an A/B
    vm: bool = False  # booted in a QEMU virtual machine (vm.py), not as a UML program

    @property
    def guest(self) -> bool:
        return self.path is not None

    @property
    def kind(self) -> str:
        """host, uml or vm: what runs the kernel."""
        return "host" if self.path is None else "vm" if self.vm else "uml"

    def missing(self) -> str | None:
        """Why this kernel cannot run here (None when it can)."""
        if self.vm:
            return self._vm_missing()
        if self.path is None or (self.path.is_file() and os.access(self.path, os.X_OK)):
            return None
        if self.path == DEBIAN_UML:
            return f"the User-mode Linux kernel {DEBIAN_UML} is not installed (Debian package user-mode-linux)"
        return f"the UML kernel {self.path} is not an executable file"

    def _vm_missing(self) -> str | None:
        assert self.path is not None
        if self.path.is_file() or self.path.is_dir():
            return None
        if self.path.parent == BOOT:
            return (f"no Debian kernel image in {BOOT} (Debian package linux-image-amd64; ./fsbench.sh setup "
                    "--kernel=vm installs it)")
        return f"the kernel image {self.path} is not there"


def debian_kernel(boot: Path = BOOT, modules: Path = Path("/lib/modules")) -> Path:
    """The newest Debian kernel image in boot that has its modules installed (the vmlinuz
    placeholder when there is none: Kernel.missing says what to install)."""
    found = [image for image in boot.glob("vmlinuz-*") if (modules / image.name[len("vmlinuz-"):]).is_dir()]
    return max(found, key=lambda image: _version_key(image.name), default=boot / "vmlinuz")


def _version_key(name: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"[.-]", name))


def bzimage_release(data: bytes) -> str | None:
    """The kernel release a bzImage carries (its setup header's kernel_version string), or None
    when data is not a bzImage."""
    if len(data) < 0x210 or data[0x202:0x206] != b"HdrS":
        return None
    offset = int.from_bytes(data[0x20E:0x210], "little") + 0x200
    text = data[offset:offset + 256].split(b"\0", 1)[0].decode(errors="replace")
    return text.split()[0] if text.split() else None


def _named(text: str, value: str) -> tuple[str | None, Path]:
    """NAME=PATH or PATH of a --kernel entry (the name checked)."""
    name, eq, path = value.partition("=")
    if not eq:
        return None, Path(value)
    if not _NAME.fullmatch(name):
        raise UsageError(f"--kernel={text!r}: the name {name!r} must be letters, digits, '.', '_', '+' or '-'")
    return name, Path(path)


def _kind(path: Path) -> str:
    """What an existing path that is neither a file nor a directory is (issue 44: a device or a
    FIFO was said not to exist)."""
    if path.is_symlink() and not path.exists():
        return "a broken symbolic link"
    return special_kind(path) or ("a character device" if path.exists() else "no file")


def _uml_path(text: str, value: str) -> tuple[str | None, Path]:
    name, kernel = _named(text, value)
    if not kernel.is_absolute():
        raise UsageError(f"--kernel={text!r}: give the UML kernel's absolute path, e.g. uml:/src/linux/linux")
    if not kernel.is_file() or not os.access(kernel, os.X_OK):
        what = ("does not exist" if not os.path.lexists(kernel) else f"is {_kind(kernel)}, not an executable file"
                if not kernel.is_file() else "is not an executable file")
        raise UsageError(f"--kernel={text!r}: {kernel} {what}; build it with 'make ARCH=um' and name the 'linux' "
                         "program it makes")
    problem = not_a_uml_kernel(kernel)
    if problem:
        raise UsageError(f"--kernel={text!r}: {kernel} {problem}; build one with 'make ARCH=um' and name the "
                         "'linux' program it makes")
    return name, kernel


#: what every User-mode Linux kernel carries (its --help and boot banner print it)
UML_BANNER = b"User Mode Linux"


def not_a_uml_kernel(path: Path) -> str | None:
    """Why an executable file is no User-mode Linux kernel (None when it is one): not an ELF
    program, or one without UML's banner (e.g. /bin/true, or a bzImage). Read, never run."""
    chunk, tail = 1 << 20, b""
    with open(path, "rb") as handle:
        head = handle.read(4)
        if head != b"\x7fELF":
            return "is not an ELF program, so no User-mode Linux kernel"
        while data := handle.read(chunk):
            if UML_BANNER in tail + data:
                return None
            tail = data[-len(UML_BANNER):]
    return f"is a program but no User-mode Linux kernel (no {UML_BANNER.decode()!r} banner in it)"


#: where `make` leaves a kernel tree's bootable image
BUILT_IMAGE = Path("arch/x86/boot/bzImage")


def _vm_path(text: str, value: str) -> tuple[str | None, Path]:
    name, kernel = _named(text, value)
    if not kernel.is_absolute():
        raise UsageError(f"--kernel={text!r}: give the kernel's absolute path, e.g. "
                         "vm:/src/linux/arch/x86/boot/bzImage or vm:/src/linux (its build tree)")
    if kernel.is_file() and bzimage_release(kernel.read_bytes()[:0x10000]) is None:
        raise UsageError(f"--kernel={text!r}: {kernel} is not a bzImage; name the arch/x86/boot/bzImage "
                         "'make' builds, or the kernel's build tree")
    if not kernel.is_file() and not kernel.is_dir():
        what = "does not exist" if not os.path.lexists(kernel) else f"is {_kind(kernel)}, not a kernel"
        raise UsageError(f"--kernel={text!r}: {kernel} {what}; name a bzImage or a kernel build tree")
    if kernel.is_dir() and not (kernel / BUILT_IMAGE).is_file():  # issue 34: QEMU's "Is a directory", as a traceback
        raise UsageError(f"--kernel={text!r}: {kernel} is a directory but no built kernel tree (no {BUILT_IMAGE} in "
                         "it); run make there first, or name a bzImage")
    return name, kernel


def _label_of(name: str | None, path: Path, prefix: str = "uml") -> str:
    if name is None:
        if path.name == "bzImage" and len(path.parents) > 3 and path.parent.parent.parent.name == "arch":
            name = path.parents[3].name  # the tree of .../arch/x86/boot/bzImage
        else:
            name = path.parent.name if path.name in ("linux", "vmlinux") else path.name
        name = re.sub(r"[^A-Za-z0-9._+-]", "_", name) or "kernel"
    return f"{prefix}-{name}"


def _kernel(text: str, part: str) -> Kernel:
    """One kernel of the list: host, uml, uml:PATH, uml:NAME=PATH, vm, vm:PATH or vm:NAME=PATH."""
    if part == HOST:
        return Kernel(HOST)
    if part == "uml":
        return Kernel("uml", DEBIAN_UML)
    if part.startswith("uml:") and part[4:]:
        name, path = _uml_path(text, part[4:])
        return Kernel(_label_of(name, path), path)
    if part == "vm":
        return Kernel("vm", debian_kernel(), vm=True)
    if part.startswith("vm:") and part[3:]:
        name, path = _vm_path(text, part[3:])
        return Kernel(_label_of(name, path, "vm"), path, vm=True)
    raise UsageError(f"--kernel={text!r}: unknown kernel {part!r}; choose host, uml (Debian's User-mode Linux), "
                     "uml:PATH or uml:NAME=PATH (a UML kernel you built), vm (Debian's kernel in a virtual "
                     "machine), vm:PATH or vm:NAME=PATH (a bzImage you built), or host+uml (each case under the "
                     "host's kernel where it can run there, else under uml)")


def _fallback(text: str, parts: list[str]) -> tuple[Kernel, ...]:
    """host+GUEST: the host's kernel, and GUEST for the cases the host's kernel cannot run."""
    given = next(part for part in parts if part.startswith(f"{HOST}+"))
    if len(parts) > 1:
        raise UsageError(f"--kernel={text!r}: {given} chooses one kernel per case, so give it alone; list "
                         "kernels (host,uml) to compare them instead")
    rest = given[len(HOST) + 1:]
    if not rest.startswith(("uml", "vm")):
        raise UsageError(f"--kernel={text!r}: after host+ name a guest kernel: host+uml, host+uml:PATH, "
                         "host+uml:NAME=PATH, host+vm or host+vm:PATH")
    return Kernel(HOST), dataclasses.replace(_kernel(text, rest), fallback=True)


def parse_kernels(text: str) -> tuple[Kernel, ...]:
    """'host', 'uml' (Debian's UML kernel), 'uml:PATH' or 'uml:NAME=PATH', 'vm' (Debian's kernel in
    a virtual machine), 'vm:PATH' or 'vm:NAME=PATH', comma-separated (an A/B when several); or
    'host+uml' (host+uml:PATH, host+vm ...) alone: the host's kernel and a fallback."""
    parts = [p.strip() for p in text.split(",")]
    if any(p.startswith(f"{HOST}+") for p in parts):
        return _fallback(text, parts)
    kernels: list[Kernel] = []
    for part in parts:
        kernel = _kernel(text, part)
        if any(k.label == kernel.label for k in kernels):
            raise UsageError(f"--kernel={text!r}: two kernels are both named {kernel.label!r}; name them apart "
                             f"with {kernel.kind}:NAME=PATH")
        kernels.append(kernel)
    return tuple(kernels)


def check_kernel_mix(kernels: tuple[Kernel, ...], accelerator: str) -> None:
    """A kernel A/B of a virtual machine's kernel against the host's or a UML kernel is refused
    when QEMU emulates the CPU (accelerator tcg): its numbers are not comparable with theirs."""
    ab = [kernel for kernel in kernels if not kernel.fallback]
    vms, others = [k.label for k in ab if k.vm], [k.label for k in ab if not k.vm]
    if accelerator == "tcg" and vms and others:
        raise UsageError(f"--kernel={','.join(k.label for k in ab)}: {', '.join(vms)} run under QEMU's CPU emulation "
                         f"here (TCG: no usable KVM), so their numbers cannot be compared with {', '.join(others)}'s; "
                         "compare vm kernels with each other (--kernel=vm,vm:NAME=PATH)")


def compared(kernels: tuple[Kernel, ...]) -> tuple[str, ...]:
    """The labels of the kernels every case runs under (two or more: a kernel A/B)."""
    return tuple(kernel.label for kernel in kernels if not kernel.fallback)


def fallback(kernels: tuple[Kernel, ...]) -> Kernel | None:
    """The guest kernel of host+uml, which runs the cases the host's kernel cannot."""
    return next((kernel for kernel in kernels if kernel.fallback), None)

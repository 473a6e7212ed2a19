"""`fsbench doctor`: which fs x layout cases can run on this machine and why not, what each
filesystem's implementation here cannot do, the workloads' tools, the result store and the image
directory a session would use, and what each guest kernel can run (its filesystems' layouts, and
its workloads). Pure text from facts; the command (cli.py) gathers them."""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .case import LAYOUT_DEVICES, CaseSpec
from .store.databases import NoStoreYet, check_store_place, is_new_store
from .errors import FsbenchError, UsageError
from .filesystems import FILESYSTEMS, driver
from .filesystems import base as fs_base
from .filesystems.base import guest_remedy
from .kernels.guest import GuestFacts
from .system.host import Host
from .kernels.kernel import Kernel
from .options import directory_for_files
from .pts.workload import ONLY_ON_HOST
from .sizes import human_size
from .store.results import Store
from .system.commands import Executor
from .workloads import WORKLOAD_MODULES, missing_tools
from .sizes import existing_ancestor

#: the widest page rows are wrapped to (a continuation lines up under its row's text); the command
#: gives the terminal's width, up to this (issue 43: 35 lines over 80 columns at COLUMNS=80)
WIDTH = 120


def row(label: str, text: str, column: int, width: int = WIDTH) -> list[str]:
    """label, then text from column on, wrapped so every line of it starts at that column."""
    wrapped = textwrap.wrap(text, max(20, width - column), break_on_hyphens=False) or [""]
    return [label.ljust(column) + wrapped[0], *(" " * column + line for line in wrapped[1:])]


def wrapped(line: str, width: int = WIDTH) -> list[str]:
    """A line of its own (the store, the image directory), its continuation indented by two more
    than the line."""
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(line, width, break_on_hyphens=False, subsequent_indent=indent) or [""]


@dataclass(frozen=True)
class CaseCheck:
    """Whether one fs x layout case can run under the host's kernel: needs are what a guest
    kernel brings (md, a kernel filesystem), others every other reason."""

    spec: CaseSpec
    needs: tuple[str, ...]
    others: tuple[str, ...]
    why: tuple[str, ...]  # the needs' own words, the case's names taken out

    @property
    def ok(self) -> bool:
        return not self.needs and not self.others

    @property
    def word(self) -> str:
        if self.ok:
            return "ok"
        return "; ".join([*(["needs " + ", ".join(self.needs)] if self.needs else []), *self.others])


def case_checks(host: Host) -> list[CaseCheck]:
    """Every fs x layout case, and what stops it under this kernel."""
    checks = []
    for fs in FILESYSTEMS:
        fs_driver = driver(fs, host)
        for layout in LAYOUT_DEVICES:
            spec = CaseSpec(fs, layout)
            lacks = fs_driver.kernel_lacks(spec, host)
            others = [reason for reason in fs_driver.unavailable(spec, host)
                      if not lacks or not reason.startswith(lacks[0][0])]
            checks.append(CaseCheck(spec, tuple(need.split()[0] for _, need in lacks), tuple(others),
                                    tuple(text.replace(f"{fs} {layout} ", "") for text, _ in lacks)))
    return checks


def fs_summary(checks: list[CaseCheck]) -> str:
    """One filesystem's layouts grouped by their word: "single ok; raid0, raid1 need md"."""
    words: dict[str, list[str]] = {}
    for check in checks:
        words.setdefault(check.word, []).append(check.spec.layout)
    if len(words) == 1:
        return f"{next(iter(words))} (every layout)"
    return "; ".join(f"{', '.join(layouts)}: {word}" for word, layouts in words.items())


def host_lines(host: Host, width: int = WIDTH) -> list[str]:
    """One row per filesystem, its layouts grouped by what stops them; each reason a guest kernel
    removes said once; then what an implementation here lacks."""
    checks = case_checks(host)
    column = len("needs reiserfs  ")
    lines = [f"kernel {host.kernel}; ZFS implementation: {host.zfs_impl or 'none'}; root: {host.is_root}"]
    for fs in FILESYSTEMS:
        lines += row(fs, fs_summary([c for c in checks if c.spec.fs == fs]), column, width)
    whys = {need: why for c in checks for need, why in zip(c.needs, c.why)}
    for need, why in whys.items():
        remedy = guest_remedy(CaseSpec("ext4", "single"), [need])  # a host case's remedy, the same for all
        lines += row(f"needs {need}", f"{why}; {remedy}", column, width)
    for fs in FILESYSTEMS:
        for limit in driver(fs, host).limits(host):
            lines += row(f"{fs} options", limit, column, width)
    return lines


def summary_line(host: Host) -> str:
    """The last line: how many cases can run here, and what runs the rest."""
    checks = case_checks(host)
    ok = sum(check.ok for check in checks)
    line = f"{ok} of {len(checks)} cases can run here"
    guest = [c for c in checks if c.needs and not c.others]
    if guest:
        needs = sorted({need for c in guest for need in c.needs}, key=lambda need: (need != "md", need))
        runs = "--kernel=host+uml runs them in a guest kernel" if fs_base.uml_installed() else \
            "install user-mode-linux (Debian package), then --kernel=host+uml runs them in a guest kernel"
        named = f"{', '.join(needs[:-1])} or {needs[-1]}" if len(needs) > 1 else needs[0]
        line += f"; {len(guest)} need {named}: {runs}"
    other = len(checks) - ok - len(guest)
    return line + (f"; {other} cannot, for the reasons above" if other else "")


def workload_rows(indent: str, width: int = WIDTH, guest: bool = False) -> list[str]:
    """One row per workload: ok, or why its cases skip. A guest kernel runs the host's programs
    (it shares the host's root), so its rows differ only by what runs on the host's kernel only."""
    names = {module: module.__name__.rsplit(".", 1)[1] for module in WORKLOAD_MODULES}
    column = len(indent) + max(map(len, names.values())) + 2
    lines = []
    for module, name in names.items():
        reasons = missing_tools(param.fixture for param in getattr(module, "PARAMS", ()))
        lines += row(f"{indent}{name}", "ok" if not reasons else "skip: " + "; ".join(reasons), column, width)
    if guest:
        lines += row(f"{indent}pts", f"skip: a PTS profile {ONLY_ON_HOST}", column, width)
    return lines


def workload_lines(width: int = WIDTH) -> list[str]:
    return ["workloads:", *workload_rows("  ", width)]


def option_lines(host: Host, width: int = WIDTH) -> list[str]:
    """Each filesystem's --fs-opt keys; the keys several filesystems share, alike, said once for
    all of them (issue 43: mkfs and mount were explained seven times)."""
    options = {fs: {key: f"{key} ({spec.help})" for key, spec in driver(fs, host).options.items()}
               for fs in FILESYSTEMS}
    shared: dict[str, list[str]] = {}
    for fs, said in options.items():
        for text in said.values():
            shared.setdefault(text, []).append(fs)
    common = {text: tuple(found) for text, found in shared.items() if len(found) > 1}
    column = max(map(len, FILESYSTEMS)) + 5
    lines = ["options (--fs-opt FS:KEY=VALUE):"]
    for group in dict.fromkeys(common.values()):
        lines += wrapped(f"  {', '.join(group)}: " + "; ".join(t for t, g in common.items() if g == group), width)
    for fs, said in options.items():
        own = [text for text in said.values() if text not in common]
        if own:
            lines += row(f"  {fs}:", "; ".join(own), column, width)
    return lines


def doctor_lines(host: Host, width: int = WIDTH) -> list[str]:
    """What this machine can run: cases, the implementations' limits, workloads, options."""
    return host_lines(host, width) + workload_lines(width) + option_lines(host, width)


def guest_lines(kernel: Kernel, facts: GuestFacts | None, reason: str | None, width: int = WIDTH,
                accel: str | None = None) -> list[str]:
    """What a guest kernel can run: per filesystem, its layouts, or why none (as a session's
    case under that kernel would be skipped); accel: a virtual machine's (kvm or tcg)."""
    if facts is None:
        return row(f"kernel {kernel.label}:", f"unavailable: {reason}", len(kernel.label) + 9, width)
    if kernel.vm:
        what = (f"a virtual machine, {'EMULATED (TCG)' if accel == 'tcg' else 'KVM'}, "
                f"{'OpenZFS ' + facts.openzfs if facts.openzfs else 'no OpenZFS'}")
    else:
        what = "a User-mode Linux guest"
    lines = wrapped(f"kernel {kernel.label} ({kernel.path}, release {facts.release}, {what}; modules "
                    f"{', '.join(facts.modules) or 'none'}):", width)
    column = max(map(len, FILESYSTEMS)) + 4
    for fs in FILESYSTEMS:
        fs_driver = driver(fs, facts.host)
        reasons = {layout: fs_driver.unavailable(CaseSpec(fs, layout, kernel=kernel.label), facts.host)
                   for layout in LAYOUT_DEVICES}
        ok = [layout for layout, why in reasons.items() if not why]
        first = next((why[0] for why in reasons.values() if why), "")
        lines += row(f"  {fs}", ", ".join(ok) if ok else "skip: " + first, column, width)
    return lines + ["  workloads:", *workload_rows("    ", width, guest=True)]


def store_line(location: Path | str, shown: str) -> tuple[str, bool]:
    """(the line, whether a session can use it) for the result store a session would write:
    how many sessions it holds, or that a session makes it, or why it cannot be used."""
    try:
        exists = not isinstance(location, Path) or location.exists()
        if not exists:
            check_store_place(location)
            return f"store: {shown}: not made yet; the first session makes it there", True
        if isinstance(location, Path) and is_new_store(location):
            check_store_place(location)
            return f"store: {shown}: a new store (no tables yet); the first session makes its tables there", True
        try:
            store = Store(location, create=False)
        except NoStoreYet:  # a server's database without fsbench's tables (issue 44: an AttributeError)
            return f"store: {shown}: a new store (no tables yet); the first session makes its tables there", True
        try:
            count, read_only = len(store.sessions()), store.db.read_only
        finally:
            store.close()
        if read_only:
            return (f"store: {shown}: {count} sessions, and it cannot be written here (read-only or no "
                    "permission): sessions can read it, not run into it"), False
        check_store_place(location)
        return f"store: {shown}: {count} session{'s' * (count != 1)}; sessions write into it", True
    except (UsageError, FsbenchError) as exc:
        return f"store: {shown}: cannot be used: {exc}", False


def image_dir_line(text: str, execute: Executor) -> tuple[str, bool]:
    """(the line, whether a session can use it) for the directory of the loop images: its
    filesystem and free space, or why it cannot hold them."""
    try:
        where = directory_for_files(text)
    except ValueError as exc:
        return f"image dir: {text}: cannot be used: {exc}", False
    existing = existing_ancestor(where)
    fstype = execute(["findmnt", "-n", "-o", "FSTYPE", "--target", str(existing)], check=False).stdout.strip()
    made = "" if where.exists() else " (made when a session starts)"
    return (f"image dir: {where}{made}: {human_size(shutil.disk_usage(existing).free)} free on "
            f"{fstype or 'an unknown filesystem'}; sparse images take only what a case writes"), True

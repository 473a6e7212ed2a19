"""Parse and validate fsbench's options into CaseSpecs. Every bad value raises UsageError with one
line saying what is wrong and what to do, before anything is created."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable

from .case import LAYOUT_DEVICES, CaseSpec
from .errors import UsageError
from .filesystems import DRIVERS, FILESYSTEMS, driver
from .system.host import Host
from .kernels.kernel import Kernel
from .sizes import parse_size


def parse_list(text: str, allowed: Iterable[str], noun: str, option: str) -> tuple[str, ...]:
    """A comma list of known names, in the order given, without duplicates."""
    allowed = tuple(allowed)
    names = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise UsageError(f"{option}={text!r}: give a comma-separated list of one or more of {', '.join(allowed)}")
    for name in names:
        if name not in allowed:
            raise UsageError(f"{option}: unknown {noun} {name!r}; choose from {', '.join(allowed)}")
    check_no_repeats(names, f"{option}={text}")
    return tuple(names)


def check_no_repeats(values: Iterable[str], given: str) -> None:
    """Every list option names each value once: a repeat is a usage error, never silently
    dropped or made into a second case."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise UsageError(f"{given}: {value!r} is listed twice; name each value once")
        seen.add(value)


def parse_filesystems(text: str) -> tuple[str, ...]:
    return parse_list(text, FILESYSTEMS, "filesystem", "--fs")


def parse_layouts(text: str) -> tuple[str, ...]:
    return parse_list(text, LAYOUT_DEVICES, "layout", "--layout")


def parse_fs_opt(text: str, option: str = "--fs-opt") -> tuple[str, str, str]:
    """'btrfs:compress=zstd' -> ('btrfs', 'compress', 'zstd'), validated against the driver;
    option: the option it was given to, which the messages name (--fs-opt or --paired)."""
    fs, sep, rest = text.partition(":")
    key, eq, value = rest.partition("=")
    fs, key, value = fs.strip(), key.strip(), value.strip()
    if not sep or not eq or not fs or not key or not value:
        raise UsageError(f"{option} {text!r}: expected FS:KEY=VALUE, e.g. btrfs:compress=zstd or zfs:recordsize=64K")
    if fs not in DRIVERS:
        raise UsageError(f"{option} {text!r}: unknown filesystem {fs!r}; choose from {', '.join(FILESYSTEMS)}")
    try:
        DRIVERS[fs]().check_option(key, value)
    except ValueError as exc:
        raise UsageError(f"{option} {text!r}: {exc}") from None
    return fs, key, DRIVERS[fs]().canonical_value(key, value)


def option_variants(fs: str, opts: list[tuple[str, str, str]]) -> list[tuple[tuple[str, str], ...]]:
    """The option sets of one filesystem: a key given several times makes one variant per value."""
    by_key: dict[str, list[str]] = {}
    for opt_fs, key, value in opts:
        if opt_fs == fs and value not in by_key.setdefault(key, []):
            by_key[key].append(value)
    keys = list(by_key)
    return [tuple(zip(keys, values)) for values in itertools.product(*(by_key[k] for k in keys))]


def check_one_route(fs: str, options: dict[str, str]) -> None:
    """One case's options set each setting one way only (see Filesystem.routes)."""
    for setting, given in DRIVERS[fs]().routes(options).items():
        if len(given) > 1:
            texts = list(dict.fromkeys(given))
            how = f"both set {setting}" if len(texts) > 1 else f"sets {setting} twice"
            raise UsageError(f"--fs-opt {' and '.join(texts)} {how}, and the mount command would take only the "
                             f"last; set {setting} one way")


def build_matrix(
    filesystems: tuple[str, ...], layouts: tuple[str, ...], fs_opts: list[tuple[str, str, str]],
    kernels: tuple[str, ...] = ("host",),
) -> list[CaseSpec]:
    """Every fs x layout x option variant x kernel, in the order the options were given (fs_opts
    as parse_fs_opt returns them); the kernels of one configuration are next to each other."""
    parsed = list(fs_opts)
    check_no_repeats((f"{fs}:{key}={value}" for fs, key, value in parsed), "--fs-opt")
    for fs, key, value in parsed:
        if fs not in filesystems:
            raise UsageError(
                f"--fs-opt {fs}:{key}={value} is for {fs}, which --fs does not include "
                f"({','.join(filesystems)}); add it to --fs or drop the option"
            )
    specs = []
    for fs in filesystems:
        variants = option_variants(fs, parsed)
        for variant in variants:
            check_one_route(fs, dict(variant))
        varying = tuple(key for key in dict(variants[0]) if len({dict(v)[key] for v in variants}) > 1)
        specs += [CaseSpec(fs, layout, variant, varying, kernel)
                  for variant in variants for layout in layouts for kernel in kernels]
    return specs


def paired_variant(spec: CaseSpec, paired: list[tuple[str, str, str]]) -> CaseSpec | None:
    """spec with the --paired options of its filesystem in place of the options they replace (the
    same key, or an alternative of it such as btrfs compress / compress-force); None when no
    --paired option is for its filesystem. Both cases of a pair show the options that differ."""
    mine = [(key, value) for fs, key, value in paired if fs == spec.fs]
    if not mine:
        return None
    driver = DRIVERS[spec.fs]()
    axes = [driver.option_axis(key) for key, _ in mine]
    if len(set(axes)) < len(axes):
        raise UsageError(f"--paired {', '.join(f'{spec.fs}:{k}={v}' for k, v in mine)}: one variant is measured "
                         "against each case, so give each option (or its alternative) once")
    replaced = set(axes)
    options = tuple((k, v) for k, v in spec.options if driver.option_axis(k) not in replaced) + tuple(mine)
    if dict(options) == dict(spec.options):
        raise UsageError(f"--paired {','.join(f'{spec.fs}:{k}={v}' for k, v in mine)}: the same options as the "
                         f"case it is paired with ({spec.options_text()}); give options that differ")
    return dataclasses.replace(spec, options=options)


def build_pairs(specs: list[CaseSpec], paired: list[tuple[str, str, str]]) -> list[tuple[CaseSpec, CaseSpec]]:
    """(reference, variant) for every case of a filesystem that --paired names; the ids of both
    show the keys that differ."""
    filesystems = {spec.fs for spec in specs}
    for fs, key, value in paired:
        if fs not in filesystems:
            raise UsageError(f"--paired {fs}:{key}={value} is for {fs}, which --fs does not include "
                             f"({','.join(sorted(filesystems))}); add it to --fs or drop the option")
    pairs = []
    for spec in specs:
        variant = paired_variant(spec, paired)
        if variant is None:
            continue
        twin = next((a for a, b in pairs if b.options == variant.options and b.layout == variant.layout
                     and b.fs == variant.fs), None)
        if twin is not None:
            raise UsageError(f"--paired makes the same variant ({variant.options_text()}) of {twin.id} and of "
                             f"{spec.id}: drop the --fs-opt values of the key --paired replaces, or pair them in "
                             "separate sessions")
        differ = {k for k, v in set(spec.options) ^ set(variant.options)}
        shown = None if spec.shown is None else tuple(dict.fromkeys((*spec.shown, *sorted(differ))))
        pairs.append((dataclasses.replace(spec, shown=shown), dataclasses.replace(variant, shown=shown)))
    return pairs


def kernel_pairs(specs: list[CaseSpec], kernels: tuple[str, ...]) -> list[tuple[CaseSpec, CaseSpec]]:
    """With several kernels, each configuration under every other kernel is the variant of the
    same configuration under the first (reference, variant)."""
    first = kernels[0]
    return [(dataclasses.replace(spec, kernel=first), spec) for spec in specs if spec.kernel != first]


def guest_view(host: Host, guest: Kernel) -> Host:
    """The host's facts as a guest kernel changes them: md and the kernel filesystems the drivers
    declare (a guest loads their modules); a virtual machine also OpenZFS (its module, built by
    zfs-dkms, and the userland fsbench's setup extracts). Tools, root and RAM stay the host's: the
    guest runs the host's programs."""
    filesystems = host.filesystems | {fs.kernel_name for fs in DRIVERS.values() if fs.kernel_name}
    seen = dataclasses.replace(host, has_md=True, filesystems=filesystems)
    if guest.vm:
        seen = dataclasses.replace(seen, zfs_module=True, programs=host.programs | {"zpool", "zfs"})
    return seen


def needs_guest(spec: CaseSpec, host: Host, guest: Kernel) -> bool:
    """The host cannot run the case, and the guest kernel can: md and kernel filesystems in any
    guest, OpenZFS's features (lz4, zstd, records above 128K) in a virtual machine (a missing
    tool, root, or ZFS under a UML kernel is missing in the guest too)."""
    fs = driver(spec.fs, host)
    if not fs.unavailable(spec, host):
        return False
    there = guest_view(host, guest)
    return not driver(spec.fs, there).unavailable(dataclasses.replace(spec, kernel=guest.label), there)


def place_cases(specs: list[CaseSpec], guest: Kernel, host: Host) -> list[CaseSpec]:
    """--kernel=host+GUEST: each case once, under the host's kernel, or under the guest kernel
    when only that can run it; nothing is paired. A virtual machine's numbers compare only with
    each other (emulated under TCG, or a KVM guest's), so with one the cases of a filesystem and
    layout (which differ only in options, compared with each other) go there together when one must."""
    moved = [spec for spec in specs if needs_guest(spec, host, guest)]
    if guest.vm:
        together = {(spec.fs, spec.layout) for spec in moved}
        moved = [spec for spec in specs if (spec.fs, spec.layout) in together]
    return [dataclasses.replace(spec, kernel=guest.label) if spec in moved else spec for spec in specs]


def parse_device_list(text: str) -> tuple[str, ...]:
    devices = tuple(part.strip() for part in text.split(","))
    if not text.strip() or any(not dev for dev in devices):
        raise UsageError(f"--devices={text!r}: give a comma-separated list of block devices, e.g. /dev/sdb,/dev/sdc")
    if len(set(devices)) != len(devices):
        raise UsageError(f"--devices={text!r}: a device is listed twice")
    return devices


def parse_image_size(text: str) -> int:
    try:
        size = parse_size(text)
    except ValueError as exc:
        raise UsageError(f"--image-size: {exc}") from None
    if size < 512 * 1024 * 1024:
        raise UsageError(f"--image-size={text}: images must be at least 512M (XFS needs 300M, ZFS 64M per device)")
    return size

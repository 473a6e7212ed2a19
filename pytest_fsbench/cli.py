"""The `fsbench` command: doctor (what can run here) and cleanup (leftovers of killed runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .case import FILESYSTEMS, LAYOUT_DEVICES, CaseSpec
from .cleanup import find_leftovers, remove_leftovers
from .filesystems import driver
from .host import Host, probe
from .session import RUN_ROOT
from .system import run


def doctor_lines(host: Host) -> list[str]:
    """One line per fs x layout: runs here, or why not."""
    lines = [f"kernel {host.kernel}; ZFS implementation: {host.zfs_impl or 'none'}; root: {host.is_root}"]
    for fs in FILESYSTEMS:
        for layout in LAYOUT_DEVICES:
            spec = CaseSpec(fs, layout)
            reasons = driver(fs, host).unavailable(spec, host)
            lines.append(f"{spec.id:14} {'ok' if not reasons else 'skip: ' + '; '.join(reasons)}")
    return lines


def cmd_doctor(args: argparse.Namespace) -> int:
    print("\n".join(doctor_lines(probe())))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    found = find_leftovers(run, Path(args.run_root))
    if found.empty():
        print("fsbench cleanup: nothing left behind by earlier runs")
        return 0
    print("\n".join(f"{'would remove' if args.dry_run else 'removing'} {line}" for line in found.lines()))
    if args.dry_run:
        return 0
    errors = remove_leftovers(found, run)
    for error in errors:
        print(f"fsbench cleanup: could not remove: {error}", file=sys.stderr)
    return 1 if errors else 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="fsbench", description="fsbench: filesystem benchmarks as pytest tests")
    sub = top.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="list which fs x layout cases can run on this machine, and why not")
    doctor.set_defaults(func=cmd_doctor)
    cleanup = sub.add_parser("cleanup", help="remove mounts, pools, arrays, loop devices and images of killed runs")
    cleanup.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    cleanup.add_argument("--run-root", default=str(RUN_ROOT), help=f"fsbench's run directory (default {RUN_ROOT})")
    cleanup.set_defaults(func=cmd_cleanup)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

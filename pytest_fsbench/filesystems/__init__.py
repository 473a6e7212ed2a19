"""The filesystem registry: every module of this package that defines a Filesystem subclass with
a name adds that filesystem to fsbench (options, --fs, skips, the host probe, the guest's kernel
modules, the daemons, what cleanup looks for and the docs read it from here). Adding a filesystem
is one module here and one test file. A driver is data plus a pure plan of commands: it may
import only the ground (`case`, `sizes`, system/: the host's facts and the daemons it declares),
never a target, a guest or a measurement."""

from __future__ import annotations

import importlib
import pkgutil

from ..system.daemons import Daemon
from ..system.host import Host
from .base import BuildContext, Filesystem, Leftover, Step

__all__ = ["BuildContext", "Filesystem", "Step", "driver", "DAEMONS", "DRIVERS", "FILESYSTEMS",
           "GUEST_FILESYSTEMS", "GUEST_MODULES", "LEFTOVERS", "TOOLS"]


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _discover() -> dict[str, type[Filesystem]]:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    drivers = [cls for cls in _subclasses(Filesystem) if "name" in vars(cls)]
    return {cls.name: cls for cls in sorted(drivers, key=lambda cls: (cls.rank, cls.name))}


DRIVERS: dict[str, type[Filesystem]] = _discover()
FILESYSTEMS: tuple[str, ...] = tuple(DRIVERS)
#: every daemon some driver's targets may need
DAEMONS: tuple[Daemon, ...] = tuple(dict.fromkeys(daemon for cls in DRIVERS.values()
                                                   for daemon in cls.daemons))
#: every kind of thing some driver's targets make outside a session's directory (pools, arrays)
LEFTOVERS: tuple[Leftover, ...] = tuple(dict.fromkeys(leftover for cls in DRIVERS.values()
                                                      for leftover in cls.leftovers))
#: every program some driver needs (for all its cases, some layouts, or as its daemon), for the probe
TOOLS: frozenset[str] = frozenset(program for cls in DRIVERS.values()
                                  for program in (*cls.tools, *cls.layout_tools, *(d.program for d in cls.daemons)))
#: every kernel module some driver needs a guest kernel to load, in the drivers' order
GUEST_MODULES: tuple[str, ...] = tuple(dict.fromkeys(module for cls in DRIVERS.values()
                                                     for module in cls.guest_modules))
#: the filesystems a guest kernel loads as modules (a host's kernel may well lack them)
GUEST_FILESYSTEMS: tuple[str, ...] = tuple(name for name, cls in DRIVERS.items()
                                           if cls.kernel_name in cls.guest_modules)


def driver(name: str, host: Host | None = None) -> Filesystem:
    """The driver for a filesystem name, as this host runs it."""
    return DRIVERS[name].for_host(host)

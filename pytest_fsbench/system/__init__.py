"""The machine, at the bottom of fsbench: the one place that executes commands (commands.py:
`execute`, its protocol `Executor`), the processes fsbench starts and ends (processes.py), the
daemons sessions share, such as zfs-fuse (daemons.py), and the facts of this host that decide
what can run (host.py: `Host`, pure data). It imports only `errors`; everything else may import it."""

from .commands import DEFAULT_TIMEOUT, Completed, Executor, execute

__all__ = ["DEFAULT_TIMEOUT", "Completed", "Executor", "execute"]

"""fsbench: reproducible, gateable filesystem benchmarks as pytest tests.

The package by concern, from the top (each subpackage's own docstring says what it owns and what
it may import; tests/unit/test_layers.py keeps the direction):

- the pytest glue and the CLI, at the top level: plugin.py (hooks, options, fixtures), bench.py
  (the `fsbench` fixture's measure), session.py, settings.py and options.py (the one table of
  options), matrix.py and benchmark_params.py (the cases), provisioning.py (where a session's
  targets come from), cli.py, doctor.py and docs.py;
- studies/ (the published studies re-run), views/ (tables, figures, report, export), pts/ (the
  Phoronix Test Suite face);
- verdicts/ (statistics, the gate, baselines, drift, change points);
- kernels/ (the host's kernel, UML guests and virtual machines);
- measure/ (one measured run);
- targets/ (building and tearing down one target, its devices);
- filesystems/ and workloads/ (the drivers and the tools, mostly data);
- store/ (the one place results are stored);
- the ground: system/ (commands, processes, daemons, host facts), errors.py, sizes.py, case.py,
  metrics.py.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__version__ = "0.1.0"

#: where each module a user's test file may import by its former path lives now
MOVED = {f"pytest_fsbench.{old}": f"pytest_fsbench.{new}" for old, new in {
    "processes": "system.processes", "daemons": "system.daemons", "host": "system.host",
    "databases": "store.databases",
    "guest": "kernels.guest", "guest_agent": "kernels.guest_agent", "vm": "kernels.vm", "probe": "kernels.probe",
    "measurement": "measure.run", "monitor": "measure.monitor", "cache_check": "measure.cache_check",
    "progress": "measure.progress", "datagen": "workloads.datagen",
    "target": "targets.target", "devices": "targets.devices", "safety": "targets.safety", "mounts": "targets.mounts",
    "undo": "targets.undo", "cleanup": "targets.cleanup", "preflight": "targets.preflight",
    "stats": "verdicts.stats", "sequential": "verdicts.sequential", "repeat": "verdicts.repeat",
    "gate": "verdicts.gate", "baseline": "verdicts.baseline", "drift": "verdicts.drift",
    "changes": "verdicts.changes", "thresholds": "verdicts.thresholds", "assertions": "verdicts.assertions",
    "report": "views.report", "figures": "views.figures", "tables": "views.tables",
    "export": "views", "export.json": "views.json_export",
}.items()}


class _FormerPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a module by its former path as the module itself (one object, two names), with a
    DeprecationWarning naming the new path."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        warnings.warn(f"{spec.name} is now {MOVED[spec.name]}; import it from there", DeprecationWarning,
                      stacklevel=2)
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # the import system gave the module the former name's spec; it keeps its own
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _FormerPaths) for finder in sys.meta_path):
    sys.meta_path.append(_FormerPaths())


def console_main() -> int:
    """The `fsbench` command (cli.main). A Ctrl-C, SIGTERM or SIGHUP at any moment of it, its
    modules' import included, ends it in one line, not a traceback, with no output left half
    written (found by issue 44's sweep). `fsbench study` leaves SIGTERM and SIGHUP as they are:
    its pytest session, a child, handles its own (a terminal's Ctrl-C reaches both)."""
    import errno
    import os
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    words = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    command = words[0] if words else ""
    said_by = f"fsbench {command}" if command else "fsbench"

    def drop_output() -> None:
        """Standard output to /dev/null: the interpreter's flush at exit would raise again."""
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if command != "study":
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, stop)
    if sys.stdout is None:  # run with its output closed (>&-): Python would drop every line without a word
        sys.stderr.write(f"{said_by}: its standard output is closed; give it "
                         "one (a terminal, a file or a pipe)\n")
        return 2
    try:
        from .cli import main

        status = main()
        sys.stdout.flush()  # a full disk is said here, not in a traceback as the interpreter exits
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # done: a signal while the interpreter exits is no failure
        return status
    except BrokenPipeError:
        # the reader of the output left (fsbench sessions | head -1) and read what it wanted: end as a
        # program killed by SIGPIPE does, without a word
        drop_output()
        return 128 + signal.SIGPIPE
    except (KeyboardInterrupt, RuntimeError) as exc:
        # Python wraps an interrupt raised while a class is made (matplotlib's import) in a RuntimeError
        interrupt = exc if isinstance(exc, KeyboardInterrupt) else exc.__cause__ or exc.__context__
        if not isinstance(interrupt, KeyboardInterrupt):
            raise
        name = str(interrupt) or "Ctrl-C"
        sys.stderr.write(f"{said_by}: interrupted ({name}); nothing is left half "
                         "written: run it again to finish\n")
        return 130
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG):
            raise
        drop_output()
        sys.stderr.write(f"{said_by}: could not write its output ({exc.strerror}); "
                         "make room where it goes and run it again\n")
        return 1

"""A Slurm cluster on one machine for the fleet's tests: a controller and three nodes, each in a
network namespace of its own under its own UTS hostname, joined by veth pairs to a bridge in the
controller's namespace on a private test range; one munged (one key for every node), and a
PostgreSQL server listening on the controller's address only.

Network safety comes first: a blackhole route for the whole test range is added before anything
starts (a namespace whose link is down would otherwise send its retries through the machine's
default gateway), and every daemon is bound to the test addresses or loopback: PostgreSQL listens
on the controller's address; slurmctld and slurmd bind their ports in namespaces that hold only
loopback and the test range; munged answers on a socket file. Everything is torn down in reverse,
also when a step or the test fails.

Pitfalls (issue 33): `ip netns exec` remounts /sys, and slurmd then fails ("No filesystem mounted
on /sys/fs/cgroup"), so each daemon enters its namespace with `nsenter --net` and `unshare --uts`;
SlurmctldHost must be the controller's own hostname."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from postgres_server import PostgresServer
from postgres_server import unavailable as postgres_unavailable

TEST_RANGE = "10.233.33.0/24"
CONTROLLER = ("fleet-ctl", "10.233.33.1")
NODES = {"fleet-a": "10.233.33.11", "fleet-b": "10.233.33.12", "fleet-c": "10.233.33.13"}
BRIDGE = "fleet-br"
FEATURES = {"fleet-a": "nvme", "fleet-b": "sata", "fleet-c": "sata"}  # a --constraint only fleet-a meets
PROGRAMS = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client", "munged": "munge",
            "nsenter": "util-linux", "unshare": "util-linux", "ip": "iproute2"}
#: a node silent this long is DOWN and its job NODE_FAIL (Slurm's pings come every third of it)
SLURMD_TIMEOUT = 10


def unavailable() -> str | None:
    """Why no cluster can be made here (None when one can)."""
    if os.geteuid() != 0:
        return "network namespaces and Slurm's daemons need root"
    missing = [f"{program} ({package})" for program, package in PROGRAMS.items()
               if shutil.which(program) is None]
    if missing:
        return f"missing {', '.join(missing)}: ./fsbench.sh setup installs them"
    return postgres_unavailable()


def ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, text=True, timeout=30)


def netns_path(name: str) -> str:
    return f"/run/netns/{name}"


def enter(name: str) -> list[str]:
    """An argv prefix that runs a command in the namespace's network (the machine's mounts stay)."""
    return ["nsenter", f"--net={netns_path(name)}"]


def slurm_conf(root: Path) -> str:
    ctl_name, ctl_address = CONTROLLER
    nodes = "\n".join(f"NodeName={name} NodeAddr={address} CPUs=1 Features={FEATURES[name]} State=UNKNOWN"
                      for name, address in NODES.items())
    return f"""ClusterName=fsbench-fleet-test
SlurmctldHost={ctl_name}({ctl_address})
AuthType=auth/munge
AuthInfo=socket={root}/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/linear
SchedulerType=sched/builtin
MpiDefault=none
SlurmdTimeout={SLURMD_TIMEOUT}
MessageTimeout=5
KillWait=5
ReturnToService=0
{nodes}
PartitionName=bench Nodes=ALL Default=YES OverSubscribe=EXCLUSIVE MaxTime=INFINITE State=UP
"""


def end_process(process: subprocess.Popen, grace: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(grace)


def pids_in(name: str) -> list[int]:
    listed = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30).stdout
    return [int(p) for p in listed.split()]


def end_namespace_processes(name: str, grace: float = 10) -> None:
    """End what this test's jobs started in the namespace (sessions, slurmstepd), by pid."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids_in(name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while pids_in(name) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not pids_in(name):
            return


class SlurmCluster:
    """The cluster, made by start() and torn down by stop() (safe to call twice)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="fsbench-fleet-slurm-"))
        self.undo = contextlib.ExitStack()
        self.daemons: dict[str, subprocess.Popen] = {}
        self.postgres: PostgresServer | None = None
        self.env = {**os.environ, "SLURM_CONF": str(self.root / "slurm.conf")}

    # ---- making it -------------------------------------------------------------------------------

    def start(self) -> None:
        self.undo.callback(shutil.rmtree, self.root, ignore_errors=True)
        for leftover in [n for n in (CONTROLLER[0], *NODES) if Path(netns_path(n)).exists()]:
            raise RuntimeError(f"network namespace {leftover} is left from an earlier run: ip netns pids "
                               f"{leftover}, end them, then ip netns del {leftover}")
        ip("route", "add", "blackhole", TEST_RANGE)  # before anything can send into the range
        self.undo.callback(ip, "route", "del", "blackhole", TEST_RANGE)
        self._network()
        self._munge()
        self._postgres()
        self._slurm()

    def _namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self.undo.callback(ip, "netns", "del", name)
        self.undo.callback(end_namespace_processes, name)
        ip("-n", name, "link", "set", "lo", "up")

    def _network(self) -> None:
        ctl, ctl_address = CONTROLLER
        self._namespace(ctl)
        ip("-n", ctl, "link", "add", BRIDGE, "type", "bridge")
        ip("-n", ctl, "addr", "add", f"{ctl_address}/24", "dev", BRIDGE)
        ip("-n", ctl, "link", "set", BRIDGE, "up")
        for node, address in NODES.items():
            self._namespace(node)  # its veth pair goes with the namespaces
            ip("-n", node, "link", "add", "eth0", "type", "veth", "peer", "name", node, "netns", ctl)
            ip("-n", node, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", node, "link", "set", "eth0", "up")
            ip("-n", ctl, "link", "set", node, "master", BRIDGE, "up")

    def _munge(self) -> None:
        munge = self.root / "munge"
        munge.mkdir(mode=0o700)
        key = munge / "key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        # --force: this test's directories are private to root, which munged's checks would refuse
        self._daemon("munged", ["munged", "--foreground", "--force", f"--socket={munge}/socket",
                                f"--key-file={key}", f"--pid-file={munge}/pid", f"--log-file={munge}/log",
                                f"--seed-file={munge}/seed"])
        self._until(lambda: (munge / "socket").exists(), "munged made no socket", self.root / "munged.out")

    def _postgres(self) -> None:
        ctl, address = CONTROLLER
        self.postgres = PostgresServer(address, enter=tuple(enter(ctl)), admit=TEST_RANGE)
        self.undo.callback(self.postgres.stop)
        self.postgres.start()
        self.env["PGPASSFILE"] = str(self.postgres.passfile)

    def _slurm(self) -> None:
        for directory in ("state", "log", *(f"spool/{n}" for n in NODES)):
            (self.root / directory).mkdir(parents=True)
        conf = self.root / "slurm.conf"
        conf.write_text(slurm_conf(self.root))
        ctl = CONTROLLER[0]
        self._daemon(ctl, self._in(ctl, ["slurmctld", "-D", "-i", "-f", str(conf)]))
        for node in NODES:
            self._daemon(node, self._in(node, ["slurmd", "-D", "-f", str(conf)]))
        self._until(lambda: self.node_states() == {n: "idle" for n in NODES},
                    "the nodes did not come up idle", self.root / "log" / "slurmctld.log", timeout=60)

    @staticmethod
    def _in(name: str, argv: list[str]) -> list[str]:
        """argv in the namespace's network under hostname name."""
        return [*enter(name), "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name, *argv]

    def _daemon(self, name: str, argv: list[str]) -> None:
        log = open(self.root / f"{name}.out", "w")
        self.undo.callback(log.close)
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.undo.callback(end_process, process)
        self.daemons[name] = process

    def _until(self, ready, what: str, log: Path, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                tail = log.read_text()[-2000:] if log.exists() else "(no log)"
                raise RuntimeError(f"{what} within {timeout:g} s:\n{tail}")
            time.sleep(0.2)

    # ---- using it --------------------------------------------------------------------------------

    def controller(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """A command in the controller's network (Slurm's clients, fsbench fleet)."""
        return subprocess.run([*enter(CONTROLLER[0]), *argv], capture_output=True, text=True, env=self.env,
                              **{"timeout": 300, **kwargs})

    def node_states(self) -> dict[str, str]:
        listed = self.controller(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=30).stdout
        return dict(line.split() for line in listed.splitlines() if len(line.split()) == 2)

    def fleet(self, args: list[str], cwd: Path) -> subprocess.Popen:
        """fsbench fleet ARGS, run in the controller's network, its output piped."""
        argv = [*enter(CONTROLLER[0]), sys.executable, "-m", "pytest_fsbench.cli", "fleet", *args]
        return subprocess.Popen(argv, cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)

    def jobs_left(self) -> str:
        """squeue's jobs, pending or running."""
        return self.controller(["squeue", "-h", "-o", "%i %T %N"], timeout=30).stdout.strip()

    def cut_off(self, node: str) -> None:
        """The node's link down and its slurmd killed: the machine is gone, as far as Slurm can tell."""
        ip("-n", node, "link", "set", "eth0", "down")
        self.daemons[node].kill()
        self.daemons[node].wait(10)

    def stop(self) -> None:
        self.undo.close()

    def left_behind(self) -> list[str]:
        """What of the cluster is still on the machine (nothing, after stop())."""
        found = [f"network namespace {n}" for n in (CONTROLLER[0], *NODES) if Path(netns_path(n)).exists()]
        routes = subprocess.run(["ip", "route", "show", TEST_RANGE], capture_output=True, text=True).stdout
        found += [f"route {r}" for r in routes.splitlines()]
        found += [f"{name} (pid {p.pid})" for name, p in self.daemons.items() if p.poll() is None]
        return found + ([str(self.root)] if self.root.exists() else [])

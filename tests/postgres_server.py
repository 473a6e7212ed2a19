"""A throwaway PostgreSQL cluster for the store's tests: made with Debian's postgresql binaries in
a temporary directory, run as the postgres user on a local socket and 127.0.0.1 (password
authentication over TCP, as a team's server would ask), stopped and removed afterwards."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PASSWORD = "fsbench-test-secret"


def binaries() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def unavailable() -> str | None:
    """Why no cluster can be made here (None when one can)."""
    if binaries() is None:
        return "PostgreSQL's server is not installed (Debian package postgresql)"
    if os.geteuid() != 0:
        return "a throwaway PostgreSQL cluster runs as the postgres user, which needs root to become"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "there is no postgres user (Debian package postgresql makes it)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """address: where it listens for TCP (and its clients connect); enter: an argv prefix the
    server is started under (e.g. nsenter into a network namespace); admit: a network beside
    address whose clients may log in with the password."""

    def __init__(self, address: str = "127.0.0.1", enter: tuple[str, ...] = (),
                 admit: str | None = None) -> None:
        self.address, self.enter, self.admit = address, tuple(enter), admit
        self.bin = binaries()
        self.root = Path(tempfile.mkdtemp(prefix="fsbench-pg-"))
        shutil.chown(self.root, "postgres", "postgres")
        self.port = free_port()
        self.passfile = self.root / "pgpass"
        self._databases = 0

    def _as_postgres(self, *argv: str, input: str | None = None, enter: tuple[str, ...] = ()) -> str:
        done = subprocess.run([*enter, "runuser", "-u", "postgres", "--", *argv], capture_output=True,
                              text=True, input=input, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stdout}{done.stderr}")
        return done.stdout

    def start(self) -> None:
        data = self.root / "data"
        self._as_postgres(str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                          "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        if self.admit:
            with open(data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {self.admit} scram-sha-256\n")
        options = (f"-k {self.root} -p {self.port} -c listen_addresses={self.address} -c fsync=off "
                   "-c max_connections=50")
        self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.root / "log"), "-w", "-o",
                          options, "start", enter=self.enter)
        self.sql(f"CREATE ROLE fsbench LOGIN PASSWORD '{PASSWORD}'")
        self.passfile.write_text(f"{self.address}:{self.port}:*:fsbench:{PASSWORD}\n")
        self.passfile.chmod(0o600)

    def sql(self, statement: str, database: str = "postgres") -> str:
        return self._as_postgres(str(self.bin / "psql"), "-h", str(self.root), "-p", str(self.port), "-d", database,
                                 "-v", "ON_ERROR_STOP=1", "-At", "-c", statement)

    def new_database(self) -> str:
        """A fresh, empty database owned by fsbench; its URL (the password is in the passfile)."""
        self._databases += 1
        name = f"fsbench_{self._databases}"
        self.sql(f"CREATE DATABASE {name} OWNER fsbench")
        return self.url(name)

    def url(self, database: str) -> str:
        return f"postgresql://fsbench@{self.address}:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w",
                              "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

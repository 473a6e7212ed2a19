"""The results file of a session: one JSON object per metric per line, appended and fsynced as
each test finishes, so a crash loses nothing already measured."""

from __future__ import annotations

import json
import os
from pathlib import Path


class ResultsFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, records: list[dict[str, object]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def read_results(path: Path) -> list[dict[str, object]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]

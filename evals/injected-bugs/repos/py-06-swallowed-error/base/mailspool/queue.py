"""A file-backed queue of outgoing messages."""

import json
import os
from pathlib import Path


class Spool:
    """Messages waiting to be sent, one JSON file each."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def put(self, message: dict) -> Path:
        """Stores `message` atomically; returns its path."""
        name = f"{message['id']}.json"
        tmp = self.directory / (name + ".tmp")
        tmp.write_text(json.dumps(message), encoding="utf-8")
        os.replace(tmp, self.directory / name)
        return self.directory / name

    def pending(self) -> list[Path]:
        """The stored messages, oldest name first."""
        return sorted(self.directory.glob("*.json"))

    def load(self, path: Path) -> dict:
        return json.loads(path.read_text(encoding="utf-8"))

"""The SQLite database of the directory."""

import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    team TEXT NOT NULL
);
"""


def connect(path: Path) -> sqlite3.Connection:
    """Opens the database at `path`, creating the schema on first use."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    conn.executescript(SCHEMA)
    return conn


def add_user(conn: sqlite3.Connection, name: str, email: str, team: str) -> int:
    """Adds a member and returns their id."""
    with conn:
        cur = conn.execute(
            "INSERT INTO users (name, email, team) VALUES (?, ?, ?)", (name, email, team)
        )
    return cur.lastrowid

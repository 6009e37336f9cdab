"""Loading CSV exports of the shop into SQLite."""

import csv
import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

COLUMNS = ["order_id", "customer", "amount", "placed_at"]


def load_rows(conn: sqlite3.Connection, rows: Iterable[list[str]]) -> int:
    """Inserts the rows in one transaction; returns how many."""
    count = 0
    with conn:
        for row in rows:
            conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", row)
            count += 1
    return count


def load_file(conn: sqlite3.Connection, path: Path) -> int:
    """Loads one CSV file; returns the number of rows."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        next(reader, None)  # the header
        return load_rows(conn, reader)

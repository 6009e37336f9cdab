"""The database schema."""

import sqlite3

ORDERS = """
CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    amount TEXT NOT NULL,
    placed_at TEXT NOT NULL
)
"""


def create(conn: sqlite3.Connection) -> None:
    """Creates the tables that do not exist yet."""
    with conn:
        conn.execute(ORDERS)


def order_count(conn: sqlite3.Connection) -> int:
    """How many orders are stored."""
    (count,) = conn.execute("SELECT COUNT(*) FROM orders").fetchone()
    return count

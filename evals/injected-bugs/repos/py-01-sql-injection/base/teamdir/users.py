"""Queries over the members of the directory."""

import sqlite3

from teamdir import User


def get_user(conn: sqlite3.Connection, user_id: int) -> User | None:
    """The member with id `user_id`, if any."""
    row = conn.execute(
        "SELECT id, name, email, team FROM users WHERE id = ?", (user_id,)
    ).fetchone()
    return User.from_row(row) if row else None


def list_team(conn: sqlite3.Connection, team: str) -> list[User]:
    """The members of `team`, by name."""
    rows = conn.execute(
        "SELECT id, name, email, team FROM users WHERE team = ? ORDER BY name", (team,)
    ).fetchall()
    return [User.from_row(r) for r in rows]

"""A small directory of team members backed by SQLite."""

from dataclasses import dataclass

__version__ = "0.4.0"


@dataclass(frozen=True)
class User:
    """One member of the directory."""

    id: int
    name: str
    email: str
    team: str

    @classmethod
    def from_row(cls, row) -> "User":
        return cls(id=row["id"], name=row["name"], email=row["email"], team=row["team"])

    @property
    def display(self) -> str:
        return f"{self.name} <{self.email}> ({self.team})"

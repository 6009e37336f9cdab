"""Bookings of meeting rooms."""

from dataclasses import dataclass
from datetime import datetime, timedelta

OPENING_HOUR = 8
CLOSING_HOUR = 18
MAX_LENGTH = timedelta(hours=4)


@dataclass(frozen=True)
class Booking:
    """One room, from `start` (included) to `end` (excluded)."""

    room: str
    start: datetime
    end: datetime
    who: str

    @property
    def length(self) -> timedelta:
        return self.end - self.start

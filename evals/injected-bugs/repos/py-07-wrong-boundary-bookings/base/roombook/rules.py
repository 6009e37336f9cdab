"""Which bookings are allowed."""

from roombook.models import MAX_LENGTH, Booking


class Rejected(ValueError):
    """A booking that breaks a rule; the message says which."""


def check_length(b: Booking) -> None:
    if b.end <= b.start:
        raise Rejected("a booking must end after it starts")
    if b.length > MAX_LENGTH:
        raise Rejected(f"a booking lasts at most {MAX_LENGTH}")


def check(b: Booking) -> None:
    """Raises Rejected when `b` breaks a rule."""
    check_length(b)

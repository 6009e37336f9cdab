"""Sending the spooled messages."""

import logging
from pathlib import Path

from mailspool.queue import Spool

log = logging.getLogger(__name__)


class Transport:
    """Something that delivers messages, such as an SMTP connection."""

    def send(self, message: dict) -> None:
        raise NotImplementedError


def flush_one(spool: Spool, transport: Transport, path: Path) -> None:
    """Sends one stored message and removes it from the spool."""
    message = spool.load(path)
    transport.send(message)
    path.unlink()
    log.info("sent %s", message["id"])

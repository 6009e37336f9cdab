"""Content hashes of files."""

import hashlib
from pathlib import Path

CHUNK = 1 << 16


def file_digest(path: Path) -> str:
    """The SHA-256 of the file's content, in hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def same_content(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes (sizes first, then digests)."""
    if a.stat().st_size != b.stat().st_size:
        return False
    return file_digest(a) == file_digest(b)

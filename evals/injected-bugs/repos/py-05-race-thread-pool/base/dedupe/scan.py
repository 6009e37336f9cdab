"""Finding files with the same content."""

from collections import defaultdict
from pathlib import Path

from dedupe.hashing import file_digest


def files_under(root: Path) -> list[Path]:
    """Every regular file under `root`, in path order."""
    return sorted(p for p in root.rglob("*") if p.is_file())


def find_duplicates(root: Path) -> dict[str, list[Path]]:
    """Groups of files under `root` with identical content, by digest."""
    by_digest: dict[str, list[Path]] = defaultdict(list)
    for path in files_under(root):
        by_digest[file_digest(path)].append(path)
    return {d: ps for d, ps in by_digest.items() if len(ps) > 1}

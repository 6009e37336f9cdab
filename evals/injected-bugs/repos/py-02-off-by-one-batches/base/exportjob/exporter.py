"""Writing records into numbered part files."""

import json
from collections.abc import Sequence
from pathlib import Path

from exportjob.batching import batch_count, nth_batch


def write_part(path: Path, records: Sequence[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, sort_keys=True))
            f.write("\n")
    tmp.replace(path)


def export(records: Sequence[dict], out_dir: Path, batch_size: int) -> int:
    """Writes `records` as JSON lines into part files of `batch_size` records;
    returns the number of parts written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = batch_count(len(records), batch_size)
    for index in range(parts):
        write_part(out_dir / f"part-{index:05d}.jsonl", nth_batch(records, batch_size, index))
    return parts

"""python -m csvload DATABASE CSV_FILE..."""

import logging
import sqlite3
import sys
from pathlib import Path

from csvload import schema
from csvload.loader import load_file


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if len(argv) < 2:
        print("usage: python -m csvload DATABASE CSV_FILE...", file=sys.stderr)
        return 2
    conn = sqlite3.connect(argv[0])
    try:
        schema.create(conn)
        for name in argv[1:]:
            logging.info("%s: %d rows", name, load_file(conn, Path(name)))
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

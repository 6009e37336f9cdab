"""python -m exportjob SOURCE.json OUT_DIR [--batch-size N]"""

import argparse
import json
import sys
from pathlib import Path

from exportjob.exporter import export


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exportjob")
    parser.add_argument("source", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args(argv)
    records = json.loads(args.source.read_text(encoding="utf-8"))
    if not isinstance(records, list):
        print("exportjob: the source must hold a JSON list", file=sys.stderr)
        return 2
    parts = export(records, args.out_dir, args.batch_size)
    print(f"wrote {parts} part files to {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

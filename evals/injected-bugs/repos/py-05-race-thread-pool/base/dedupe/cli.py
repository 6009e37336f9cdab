"""dedupe ROOT: print groups of identical files."""

import argparse
from pathlib import Path

from dedupe.scan import find_duplicates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dedupe")
    parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    groups = find_duplicates(args.root)
    for digest, paths in sorted(groups.items()):
        print(digest[:12])
        for path in paths:
            print(f"  {path}")
    print(f"{len(groups)} groups of identical files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

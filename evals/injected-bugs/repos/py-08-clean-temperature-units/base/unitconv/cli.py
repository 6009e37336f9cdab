"""unitconv VALUE FROM TO"""

import argparse
import sys

from unitconv import length


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="unitconv")
    parser.add_argument("value", type=float)
    parser.add_argument("source")
    parser.add_argument("target")
    args = parser.parse_args(argv)
    try:
        result = length.convert(args.value, args.source, args.target)
    except ValueError as e:
        print(f"unitconv: {e}", file=sys.stderr)
        return 2
    print(f"{result:g} {args.target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

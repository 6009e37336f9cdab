"""Command line of the directory."""

import argparse
from pathlib import Path

from teamdir import db, users


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="teamdir")
    parser.add_argument("--db", type=Path, default=Path("team.db"))
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add a member")
    add.add_argument("name")
    add.add_argument("email")
    add.add_argument("team")
    team = sub.add_parser("team", help="list the members of a team")
    team.add_argument("team")
    args = parser.parse_args(argv)

    conn = db.connect(args.db)
    if args.command == "add":
        print(db.add_user(conn, args.name, args.email, args.team))
    elif args.command == "team":
        for user in users.list_team(conn, args.team):
            print(user.display)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

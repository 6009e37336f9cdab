"""Running git and reading its output."""

import subprocess
from pathlib import Path


class GitError(RuntimeError):
    """git exited with an error."""


def git(repo: Path, *args: str) -> str:
    """Runs `git args` in `repo`; raises GitError when it fails."""
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if proc.returncode != 0:
        raise GitError(proc.stderr.strip() or f"git {args[0]} failed")
    return proc.stdout


def commits(repo: Path, since: str | None = None) -> list[str]:
    """Hashes of the commits of the current branch, newest first."""
    args = ["log", "--format=%H"]
    if since:
        args.append(f"--since={since}")
    return git(repo, *args).split()

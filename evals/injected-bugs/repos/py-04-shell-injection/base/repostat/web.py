"""The JSON endpoints the dashboard polls."""

import json
from pathlib import Path
from urllib.parse import parse_qs

from repostat import git

REPO = Path("/srv/repos/main")


def app(environ, start_response):
    """A WSGI application: /commits?since=DATE."""
    query = parse_qs(environ.get("QUERY_STRING", ""))
    route = environ.get("PATH_INFO", "/")
    if route == "/commits":
        since = query.get("since", [None])[0]
        body = {"commits": git.commits(REPO, since)}
    else:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]

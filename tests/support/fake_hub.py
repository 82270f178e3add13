"""A stand-in for the Hugging Face hub's HTTP API on 127.0.0.1, for
huggingface_hub to download from (HF_ENDPOINT), and a log of what it was asked.

    hub = FakeHub({"org/tiny": {"main": model_dir}}, private={"org/tiny": "TOKEN"})
    with hub:  # hub.url: set HF_ENDPOINT to it
      ...
    hub.requests  # [("GET", "/api/models/org/tiny/revision/main"), ...]

Answered as the hub answers what huggingface_hub 2.x asks:

* `GET /api/models/{repo}/revision/{revision}`: the model's info, `sha` the commit;
* `GET /api/models/{repo}/tree/{revision}`: its files, with `size` and, for files
  in Git LFS, `lfs.oid` (sha256);
* `HEAD` / `GET /{repo}/resolve/{revision}/{file}`: the file, with `X-Repo-Commit`,
  `ETag` (git blob sha1) or, for LFS files, `X-Linked-Etag` (sha256) and
  `X-Linked-Size`, as the hub's redirecting answer carries them;
* an unknown repository: 401 with `X-Error-Code: RepoNotFound` (the hub does not
  tell private from absent); an unknown revision: 404 `RevisionNotFound`; a
  private repository without its token (`Authorization: Bearer`): 401 as unknown.

Not rebuilt: redirects to a CDN, Xet storage (huggingface_hub falls back to plain
HTTP where a file names no Xet hash), pagination of long trees, commits' history.
"""
import hashlib
import http.server
import json
import pathlib
import threading
import urllib.parse
from typing import Dict, Mapping, Optional

from tests.support.hub_cache import _LFS_SUFFIXES  # pylint: disable=protected-access


class _Commit:

  def __init__(self, directory):
    self.files = {path.name: path.read_bytes()
                  for path in sorted(pathlib.Path(directory).iterdir()) if path.is_file()}
    self.sha = hashlib.sha1("".join(
        hashlib.sha256(data).hexdigest() for data in self.files.values()).encode()
                            ).hexdigest()


def _git_sha1(data: bytes) -> str:
  return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
  """repos: {repo_id: {revision name: model directory}}; private: {repo_id: token}."""

  def __init__(self, repos: Mapping[str, Mapping[str, str]],
               private: Optional[Mapping[str, str]] = None):
    self._repos: Dict[str, Dict[str, _Commit]] = {
        repo: {name: _Commit(directory) for name, directory in revisions.items()}
        for repo, revisions in repos.items()}
    self._private = dict(private or {})
    self.requests = []
    self._server = None

  def commit(self, repo: str, revision: str) -> str:
    return self._repos[repo][revision].sha

  @property
  def url(self) -> str:
    return f"http://127.0.0.1:{self._server.server_port}"

  def __enter__(self):
    hub = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def log_message(self, *args):
        pass

      def do_HEAD(self):
        hub.answer(self, body=False)

      def do_GET(self):
        hub.answer(self, body=True)

    self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=self._server.serve_forever, daemon=True).start()
    return self

  def __exit__(self, *exc):
    self._server.shutdown()
    self._server.server_close()

  def _find(self, handler, repo: str, revision: str):
    """(commit or None, error status, error code)."""
    token = self._private.get(repo)
    if repo not in self._repos or (
        token and handler.headers.get("Authorization") != f"Bearer {token}"):
      return None, 401, "RepoNotFound"
    revisions = self._repos[repo]
    for name, commit in revisions.items():
      if revision in (name, commit.sha):
        return commit, 200, None
    return None, 404, "RevisionNotFound"

  def answer(self, handler, body: bool) -> None:
    path = urllib.parse.urlparse(handler.path).path
    self.requests.append((handler.command, path))
    parts = [urllib.parse.unquote(part) for part in path.strip("/").split("/")]
    if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision",
                                                                              "tree"):
      repo, kind, revision = f"{parts[2]}/{parts[3]}", parts[4], parts[5]
      commit, status, code = self._find(handler, repo, revision)
      if commit is None:
        return self._error(handler, status, code)
      if kind == "revision":
        info = {"id": repo, "modelId": repo, "sha": commit.sha, "private": repo in self._private,
                "siblings": [{"rfilename": name} for name in commit.files]}
      else:
        info = [self._entry(name, data) for name, data in commit.files.items()]
      return self._send(handler, 200, json.dumps(info).encode(), body,
                        {"Content-Type": "application/json"})
    if len(parts) >= 5 and parts[2] == "resolve":
      repo, revision, name = f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:])
      commit, status, code = self._find(handler, repo, revision)
      if commit is None:
        return self._error(handler, status, code)
      if name not in commit.files:
        return self._error(handler, 404, "EntryNotFound", {"X-Repo-Commit": commit.sha})
      data = commit.files[name]
      headers = {"X-Repo-Commit": commit.sha, "Content-Type": "application/octet-stream"}
      if name.endswith(_LFS_SUFFIXES):
        headers.update({"X-Linked-Etag": f'"{hashlib.sha256(data).hexdigest()}"',
                        "X-Linked-Size": str(len(data)),
                        "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})
      else:
        headers["ETag"] = f'"{_git_sha1(data)}"'
      return self._send(handler, 200, data, body, headers)
    return self._error(handler, 404, None)

  @staticmethod
  def _entry(name: str, data: bytes):
    entry = {"type": "file", "oid": _git_sha1(data), "size": len(data), "path": name}
    if name.endswith(_LFS_SUFFIXES):
      entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                      "pointerSize": 134}
    return entry

  @staticmethod
  def _send(handler, status: int, data: bytes, body: bool, headers) -> None:
    handler.send_response(status)
    for key, value in headers.items():
      handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if body:
      handler.wfile.write(data)

  def _error(self, handler, status: int, code: Optional[str], headers=None) -> None:
    headers = dict(headers or {}, **({"X-Error-Code": code} if code else {}))
    headers["Content-Type"] = "application/json"
    self._send(handler, status, json.dumps({"error": code or "not found"}).encode(), True,
               headers)

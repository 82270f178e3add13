"""Test-only: a local server that answers Cloud Storage's JSON API as a bucket
that refuses requests does, for the clients that STORAGE_EMULATOR_HOST sends
there (google-cloud-storage, hence Beam's GCS filesystem).

    server = RefusingGcs(status=403)               # every request: 403
    server = RefusingGcs(status=403, reads=True)   # the bucket and listings
                                                   # answer (it is empty),
                                                   # objects are missing, uploads
                                                   # get 403
    env["STORAGE_EMULATOR_HOST"] = server.url
    server.credentials_file(path)   # credentials whose token comes from here
    server.close()

Errors carry GCS's JSON error body ({"error": {"code", "message", "errors"}}).
`POST /token` hands out an access token (or, with `token_status`, refuses the
credentials with that status), for the service account credentials whose
token_uri is this server; `requests` lists (method, path) of each request.
"""
import http.server
import json
import threading

# status: (reason, message; {permission} is the one the request needed)
_ERRORS = {
    400: ("invalid", "Invalid bucket name: 'Bad_Name'"),
    401: ("required", "Anonymous caller does not have {permission} access to the "
                      "Google Cloud Storage bucket."),
    403: ("forbidden", "tester@example.com does not have {permission} access to the "
                       "Google Cloud Storage bucket."),
    404: ("notFound", "The specified bucket does not exist."),
}


class RefusingGcs(http.server.ThreadingHTTPServer):

  daemon_threads = True

  def __init__(self, status: int, reads: bool = False, token_status: int = 200):
    self.status = status
    self.reads = reads
    self.token_status = token_status
    self.requests = []
    super().__init__(("127.0.0.1", 0), _Handler)
    # A short poll: close() waits for the loop to notice (0.5 s by default).
    threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True).start()

  @property
  def url(self) -> str:
    return f"http://127.0.0.1:{self.server_address[1]}"

  def credentials_file(self, path) -> str:
    """Writes application default credentials (a service account with a fresh
    key) whose token comes from this server; returns the path."""
    from cryptography.hazmat.primitives import serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import rsa  # pylint: disable=import-outside-toplevel
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode("ascii")
    with open(path, "w", encoding="utf-8") as f:
      json.dump({"type": "service_account", "project_id": "test",
                 "private_key_id": "test", "private_key": pem,
                 "client_email": "tester@example.com", "client_id": "1",
                 "token_uri": f"{self.url}/token"}, f)
    return str(path)

  def close(self) -> None:
    self.shutdown()
    self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):

  protocol_version = "HTTP/1.1"
  server: RefusingGcs

  def log_message(self, *args):  # quiet
    pass

  def _reply(self, status: int, payload) -> None:
    body = json.dumps(payload).encode("utf-8")
    self.send_response(status)
    self.send_header("Content-Type", "application/json")
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    self.wfile.write(body)

  def _refuse(self, status: int) -> None:
    reason, message = _ERRORS[status]
    message = message.format(permission="storage.objects.create" if self.command == "POST"
                             else "storage.objects.list")
    self._reply(status, {"error": {"code": status, "message": message, "errors": [
        {"message": message, "domain": "global", "reason": reason}]}})

  def _answer(self) -> None:
    length = int(self.headers.get("Content-Length") or 0)
    if length:
      self.rfile.read(length)
    path = self.path.split("?")[0]
    self.server.requests.append((self.command, path))
    if path == "/token" and self.server.token_status != 200:
      self._reply(self.server.token_status,
                  {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
    elif path == "/token":
      self._reply(200, {"access_token": "test-token", "expires_in": 3600,
                        "token_type": "Bearer"})
    elif self.server.reads and self.command == "GET" and path.endswith("/o"):
      self._reply(200, {"kind": "storage#objects"})
    elif self.server.reads and self.command == "GET" and path.count("/") == 4:
      self._reply(200, {"kind": "storage#bucket", "name": path.rsplit("/", 1)[1]})
    elif self.server.reads and self.command == "GET":
      self._reply(404, {"error": {"code": 404, "message": "No such object.", "errors": [
          {"message": "No such object.", "domain": "global", "reason": "notFound"}]}})
    else:
      self._refuse(self.server.status)

  do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

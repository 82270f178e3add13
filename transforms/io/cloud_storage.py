"""The launch check of gs:// paths, for every job: each bucket that a flag names
(an input, a directory read, the output directory, Beam's own --temp_location)
is asked for one object listing, with the credentials Beam's GCS filesystem
would use, before the job touches it through Beam.

    check_gcs_flags(options)   # ConfigError (exit 2) naming the flag, the path
                               # and the cause
    write_refused(error)       # why a write was refused (401, 403, 404), or None

A listing does not show that the output directory takes writes: a refused
write is found by the first one, the output directory's ledger
(beam_jobs/output_dir.py), which turns it into the same refusal.

Why: Beam reaches Cloud Storage through clients that retry for minutes. Without
credentials it first retries credential discovery (about 20 s), then connects
anonymously; every request then retries a network failure for up to 120 s, so
an unreachable bucket took about 2 minutes and ended in a traceback, and a
refused one a traceback after the 20 s. Here credentials are looked for once
(google.auth.default: the environment, gcloud's file, the metadata server), a
network failure is retried for PROBE_SECONDS, and a bucket that is missing or
refuses access (401, 403) is reported at once.
"""
import re
from typing import Iterator, Optional, Tuple

import google.auth
import google.auth.exceptions
from apache_beam.io.gcp import gcsio
from apache_beam.options.pipeline_options import PipelineOptions
from google.api_core import exceptions as api_exceptions
from google.cloud import storage
from google.cloud.storage.exceptions import InvalidResponse
from google.cloud.storage.retry import DEFAULT_RETRY

from autoais.schemas.errors import ConfigError

GCS_PREFIX = "gs://"
# How long a network failure (no route, refused connection, timeout, 5xx) is
# retried before the bucket is called unreachable; Beam's requests retry 120 s.
PROBE_SECONDS = 5.0
_RETRY = DEFAULT_RETRY.with_timeout(PROBE_SECONDS).with_delay(initial=0.5, maximum=2.0)
_REQUEST_TIMEOUT = (5.0, 10.0)  # seconds to connect, to read
_GLOB = re.compile(r"[*?\[]")
_REFUSED = (401, 403, 404)
_NO_CREDENTIALS_HINT = (
    "no Application Default Credentials were found, so the request went "
    "anonymously: run `gcloud auth application-default login` or set "
    "GOOGLE_APPLICATION_CREDENTIALS")


def _gcs_flags(options: PipelineOptions) -> Iterator[Tuple[str, str]]:
  """(flag, gs:// path) for each gs:// path the options name (a comma list
  names several)."""
  for name, value in sorted(options.get_all_options(drop_default=True).items()):
    if not isinstance(value, str):
      continue
    for part in value.split(","):
      if part.strip().startswith(GCS_PREFIX):
        yield f"--{name}", part.strip()


def _client(options: PipelineOptions) -> Tuple[storage.Client, bool]:
  """(the client Beam's GCS filesystem would build, whether it has
  credentials), without Beam's retries of credential discovery."""
  try:
    google.auth.default()
  except google.auth.exceptions.DefaultCredentialsError:
    return storage.Client.create_anonymous_client(), False
  return gcsio.create_storage_client(options), True


def _message(error: api_exceptions.GoogleAPICallError) -> str:
  """The server's own words (the client's message starts with the request)."""
  errors = error.errors or [{}]
  return (errors[0].get("message") if isinstance(errors[0], dict) else None) or (
      error.message)


def _cause(client: storage.Client, bucket: str, prefix: str,
           has_credentials: bool) -> Optional[str]:
  """Why one listing of gs://bucket/prefix fails, or None."""
  try:
    list(client.list_blobs(bucket, prefix=prefix, max_results=1, retry=_RETRY,
                           timeout=_REQUEST_TIMEOUT))
    return None
  except api_exceptions.NotFound:
    return f"the bucket gs://{bucket} does not exist"
  except (api_exceptions.Unauthorized, api_exceptions.Forbidden) as error:
    cause = f"access refused (HTTP {error.code}: {_message(error)})"
    return cause if has_credentials else f"{cause}; {_NO_CREDENTIALS_HINT}"
  except google.auth.exceptions.InvalidOperation:
    # A 401 to an anonymous client: it asks its credentials to refresh, and
    # anonymous ones cannot.
    return ("access refused (HTTP 401: the bucket takes no anonymous requests); "
            f"{_NO_CREDENTIALS_HINT}")
  except api_exceptions.RetryError as error:
    return (f"Cloud Storage cannot be reached (still failing after {PROBE_SECONDS:g} "
            f"s: {error.cause})")
  except google.auth.exceptions.RefreshError as error:
    # args: the token endpoint's words, then its whole answer.
    return f"the credentials were refused ({error.args[0] if error.args else error})"
  except api_exceptions.GoogleAPICallError as error:
    return f"refused (HTTP {error.code}: {_message(error)})"


def check_gcs_flags(options: PipelineOptions) -> None:
  """Raises ConfigError for the first flag whose gs:// bucket is missing,
  refuses access or cannot be reached; one listing per bucket."""
  named = list(_gcs_flags(options))
  if not named:
    return
  client, has_credentials = _client(options)
  checked = set()
  for flag, path in named:
    bucket, _, name = path[len(GCS_PREFIX):].partition("/")
    if not bucket:
      raise ConfigError(f"{flag} {path}: names no bucket. Nothing was written.")
    if bucket in checked:
      continue
    checked.add(bucket)
    cause = _cause(client, bucket, _GLOB.split(name, 1)[0], has_credentials)
    if cause is not None:
      raise ConfigError(f"{flag} {path}: {cause}. Nothing was written.")


def write_refused(error: BaseException) -> Optional[str]:
  """Why Cloud Storage refused a write through Beam's GCS filesystem (`error`
  an answer 401, 403 or 404), or None for any other failure."""
  if isinstance(error, api_exceptions.GoogleAPICallError) and error.code in _REFUSED:
    return f"HTTP {error.code}: {_message(error)}"
  status = getattr(getattr(error, "response", None), "status_code", None)
  if isinstance(error, InvalidResponse) and status in _REFUSED:
    try:
      message = error.response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
      message = error.response.reason
    return f"HTTP {status}: {message}"
  return None

"""Every error type of the product, in one module of the bottom layer (it
imports nothing), so that each layer raises and catches the same classes.

The first four stop a job before it writes anything, with exit code 2 and the
message (beam_jobs/running.py run_job); the rest are raised and handled inside
one stage.
"""


class ConfigError(ValueError):
  """The job's options cannot work: it stops before building anything."""


class InputError(ValueError):
  """A whole input is unusable: the job must stop, naming the file (exit 2)."""


class CorpusError(ValueError):
  """The corpus directory is missing or incomplete."""


class ModelError(ValueError):
  """The model cannot be used as configured (missing, unsafe, unsuitable)."""


class JobFailed(RuntimeError):
  """A job that started and failed (exit code 1), raised to callers of the
  Python API (autoais.evaluate(...)) instead of an exit code."""


class RequestFailed(Exception):
  """A request to a hosted model that failed for good; status 0 where no HTTP
  answer came."""

  def __init__(self, status: int, message: str):
    super().__init__(f"HTTP {status}: {message}" if status else message)
    self.status = status
    self.message = message


class EndpointMisconfigured(RuntimeError):
  """The hosted model's endpoint answers 401/403/404/405: wrong for every row."""


class BadRequest(ValueError):
  """A request `autoais serve` refuses, with the HTTP status to answer."""

  def __init__(self, status: int, message: str):
    super().__init__(message)
    self.status = status


def require(options, *names: str) -> None:
  """ConfigError naming the flags among `names` that `options` leaves empty."""
  missing = [f"--{name}" for name in names if not getattr(options, name, None)]
  if missing:
    raise ConfigError(f"missing required option(s): {', '.join(missing)}")


def require_choice(flag: str, value, choices) -> None:
  """Refuses `value` of `flag` unless it is one of `choices` (listed in the
  message in their order)."""
  if value not in choices:
    raise ConfigError(f"{flag} {value!r}: choose from {', '.join(choices)}")

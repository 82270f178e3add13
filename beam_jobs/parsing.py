"""A job's command line into its options: strict parsing (a flag the job does
not take is refused, with the flag it most likely meant), the options of the
runner --runner names, and `autoais JOB --help` / `--help_beam`. The flags
themselves are declared in beam_jobs/options.py and the jobs' modules.
"""
import argparse
import difflib
import importlib
import sys
from typing import Iterable, List, Optional, Sequence, Type

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from autoais.beam_jobs.options import RunOptions, option_dests, options_parser
from autoais.schemas.errors import ConfigError


HELP_FLAGS = ("-h", "--help")
HELP_BEAM_FLAG = "--help_beam"
DASK_REFUSED = ("--runner DaskRunner is refused: in Beam 2.77 it routes every output of "
                "a multi-output step to every consumer and drops what a step emits in "
                "finish_bundle, so a job's results would be silently wrong")


def runner_named(argv: Sequence[str]) -> Optional[str]:
  """The value of --runner in argv (None: the local default)."""
  parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
  parser.add_argument("--runner", default=None)
  return parser.parse_known_args(list(argv))[0].runner


def import_runner_options(runner: Optional[str]) -> None:
  """Imports the module of `runner` (a name Beam knows, e.g. FlinkRunner, or a
  module path): Beam registers a runner's pipeline options when its module is
  imported (DaskRunner's --dask_client_address, RenderRunner's --render_output),
  and the strict parse below accepts only registered ones. DaskRunner is
  refused (DASK_REFUSED), as is a name no runner has."""
  if runner is None:
    return
  if runner.rsplit(".", 1)[-1].lower() in ("dask", "daskrunner"):
    raise ConfigError(DASK_REFUSED)
  known = {}
  for path in StandardOptions.ALL_KNOWN_RUNNERS:
    name = path.rsplit(".", 1)[-1].lower()
    known[name] = known[name.removesuffix("runner")] = path
  path = known.get(runner.lower(), runner)
  if "." not in path:
    raise ConfigError(f"--runner {runner}: no such runner; choose from "
                      f"{', '.join(StandardOptions.KNOWN_RUNNER_NAMES)}, or give the "
                      "runner's module path (package.module.RunnerClass)")
  module = path.rsplit(".", 1)[0]
  try:
    importlib.import_module(module)
  except ImportError as error:
    raise ConfigError(f"--runner {runner}: cannot import {module}: {error}") from error


def _registered_options(options_class: Type[PipelineOptions]):
  """Every PipelineOptions class Beam would parse for, `options_class` included,
  once each (`python -m` can define a job's classes a second time)."""
  registered = {}
  for cls in PipelineOptions.__subclasses__() + [options_class]:
    registered.setdefault(f"{cls.__module__}.{cls.__qualname__}", cls)
  return list(registered.values())


def job_options(options_class: Type[PipelineOptions]):
  """The project's option classes a job takes: its own, the shared ones it
  names in SHARED_OPTIONS (the scorer flags), and the run flags."""
  return (options_class, *getattr(options_class, "SHARED_OPTIONS", ()), RunOptions)


def _key(cls) -> str:
  return f"{cls.__module__}.{cls.__qualname__}"


def near_miss(name: str, known: Iterable[str]) -> Optional[str]:
  """The known flag name (a dest) a mistyped `name` most likely meant: dashes
  for underscores (`output-dir`), the one name it begins (`bootstrap` for
  bootstrap_samples), else the closest by difflib; None when nothing is close."""
  known = sorted(set(known))
  name = name.lstrip("-").split("=", 1)[0]
  if name.replace("-", "_") in known:
    return name.replace("-", "_")
  begun = [dest for dest in known if dest.startswith(name.replace("-", "_"))]
  if len(begun) == 1:
    return begun[0]
  close = difflib.get_close_matches(name.replace("-", "_"), known, n=1, cutoff=0.75)
  return close[0] if close else None


def job_option_classes(options_class: Type[PipelineOptions]) -> list:
  """The options classes a job's flags are parsed against: Beam's (every
  registered class outside the project) and the project's that the job
  takes (job_options)."""
  own = {_key(cls) for cls in job_options(options_class)}
  return [cls for cls in _registered_options(options_class)
          if not cls.__module__.startswith("autoais.") or _key(cls) in own]


def _unknown_flags(argv: Sequence[str], classes) -> List[str]:
  _, unknown = options_parser(*classes).parse_known_args(list(argv))
  return unknown


def parse_options(argv: Sequence[str], options_class: Type[PipelineOptions]):
  """Parses argv like Beam does, but refuses flags the job does not take: a flag
  no options class knows (Beam would drop a mistyped `--threshhold` with a
  warning), and a flag of another job's options or of the scorer for a job
  that does not score (Beam registers every options class imported, so in one
  process, as the Python API runs jobs, every job's flags would parse; they
  would be ignored). The options of the runner --runner names are known
  (import_runner_options)."""
  import_runner_options(runner_named(argv))
  registered = _registered_options(options_class)
  classes = job_option_classes(options_class)
  unknown = _unknown_flags(argv, classes)
  if unknown:
    elsewhere = set(unknown) - set(_unknown_flags(unknown, registered))
    not_taken = [flag.split("=", 1)[0] for flag in unknown
                 if flag in elsewhere and flag.startswith("--")]
    if not_taken:
      raise ConfigError(f"{' '.join(not_taken)}: not a flag of this job (another job, "
                        "or a scorer, takes it; this job would ignore it)")
    # The job's own flags first: `--bootstrap` means --bootstrap_samples, not
    # Beam's Kafka --bootstrap_servers.
    own = {dest for cls in job_options(options_class) for dest in option_dests(cls)}
    known = {dest for cls in classes for dest in option_dests(cls)}
    meant = [(flag, near_miss(flag, own) or near_miss(flag, known)) for flag in unknown
             if flag.startswith("--")]
    hints = "; ".join(f"{flag.split('=', 1)[0]}: did you mean --{dest}?"
                      for flag, dest in meant if dest)
    raise ConfigError(f"unknown argument(s): {' '.join(unknown)}"
                      + (f" ({hints})" if hints else ""))
  return options_class(list(argv))


def help_requested(argv: Sequence[str]) -> bool:
  return any(arg in HELP_FLAGS or arg == HELP_BEAM_FLAG for arg in argv)


def job_help(job_name: str, argv: Sequence[str],
             options_class: Type[PipelineOptions]) -> str:
  """`autoais JOB --help`: the job's own flags, then those of the shared option
  classes it names in SHARED_OPTIONS (the scorer flags, for a job that scores),
  then the run flags. With --help_beam instead: Beam's pipeline options, those
  of the runner --runner names included."""
  usage = f"autoais {job_name} [flags]"
  if HELP_BEAM_FLAG in argv:
    import_runner_options(runner_named(argv))
    beams = [cls for cls in _registered_options(options_class)
             if not cls.__module__.startswith("autoais.")]
    return options_parser(
        *beams, usage=usage, add_help=False,
        description=f"Beam's pipeline options, taken by every job (`autoais {job_name} "
        "--help`: the job's own flags).").format_help()
  # What the job does: its module docstring's first paragraph.
  docstring = sys.modules[options_class.__module__].__doc__ or job_name
  return options_parser(
      *job_options(options_class), usage=usage, add_help=False,
      description=docstring.strip().split("\n\n")[0],
      epilog=f"Beam's pipeline options are taken too (--runner, --direct_num_workers, "
      f"--direct_running_mode, Dataflow's, Flink's, Spark's): `autoais {job_name} "
      f"{HELP_BEAM_FLAG}` lists them.").format_help()


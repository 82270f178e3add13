"""Running jobs in-process."""


def run_job(module, *args) -> int:
  """Runs a job's run(argv) in this process (FnApiRunner); returns its exit code."""
  return module.run([str(arg) for arg in args])

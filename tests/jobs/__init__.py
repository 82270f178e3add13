"""Job-level tests: whole pipelines run on real or example inputs."""

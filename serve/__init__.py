"""`autoais serve`: an NLI model over HTTP, without Beam (the command line is
beam_jobs/serve.py; docs/serve.md).

    batching  the loaded model of either family, each request's limits, and the
              one model thread that scores the requests arriving together
    http      the aiohttp application: routes, body limits, deadlines, health,
              metrics, drain

This layer imports `schemas` and `models` only, and only `autoais serve`
imports it (tests/deploy/test_architecture.py).
"""

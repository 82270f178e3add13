"""`autoais serve`'s own modules (not a Beam job: the NLI model over HTTP).

    http    the aiohttp application: routes, limits, health, metrics, drain
"""

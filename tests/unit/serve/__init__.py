"""autoais serve: batching, limits, health and load (serve/, serve/batching.py)."""

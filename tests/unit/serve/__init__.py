"""autoais serve: batching, limits, health and load (transforms/serve/, models/serving.py)."""

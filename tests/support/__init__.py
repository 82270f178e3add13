"""Shared test helpers (no tests here): where the project and the shared data lie,
reading and writing files, running jobs in-process, the NQ-Open leaderboard and
audit inputs, tiny T5 models (t5_models), stand-in scorers, fault injection,
reader damage and the SCK examples."""

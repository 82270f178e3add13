"""Tests of schemas/."""

"""Tests of transforms/scoring."""

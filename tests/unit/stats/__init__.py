"""Tests of transforms/stats."""

"""Tests of transforms/rows."""

"""Tests of transforms/corpus."""

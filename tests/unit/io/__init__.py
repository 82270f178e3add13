"""Tests of transforms/io."""

"""Tests of transforms/sck."""

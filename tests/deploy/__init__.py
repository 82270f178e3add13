"""Packaging, the CLI, launch material, gs:// paths, the docs, the layering."""

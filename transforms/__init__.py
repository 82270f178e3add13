"""Reusable PTransforms (and the pure functions behind them) of AutoAIS-Beam."""

"""Damaged, compressed, unreadable inputs; injected faults and kills; output safety."""

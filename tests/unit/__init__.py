"""Unit tests, one subpackage per transforms/ subpackage (plus schemas/)."""

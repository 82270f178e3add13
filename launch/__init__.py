"""Dataflow launch material (container, Flex Template, schedules): see README.md."""

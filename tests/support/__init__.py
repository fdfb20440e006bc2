"""Helpers shared by tests: test doubles and fixtures, never shipped."""

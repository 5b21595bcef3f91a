"""Helpers shared by test modules (STYLE.md: test modules do not import each other)."""

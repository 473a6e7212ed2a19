"""Exports of stored sessions to other tools' formats."""

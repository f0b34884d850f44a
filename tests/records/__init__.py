"""Tests of the records kafkatune keeps (records/)."""

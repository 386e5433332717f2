"""Tests for runner.claims."""

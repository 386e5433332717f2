"""Tests for runner.studies."""

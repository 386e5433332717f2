"""Tests for runner.data: loaders and the canonical-frame validator."""

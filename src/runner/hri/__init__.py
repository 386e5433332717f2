"""The Hallucination Risk Index (seed 001): configuration, scoring, aggregation, feedback,
AHP weights, and its calibration against known outcomes.

The claim records the index reads are data (`runner.data.hri_records`); the index itself is
computed here, from a validated `runner.hri.config.HRIConfig`.
"""

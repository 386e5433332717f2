"""Claim-level machinery: the Hallucination Risk Index, claim labels, LLM judges, the span
detector wrapper, combination rules, meta-claims and agreement statistics."""

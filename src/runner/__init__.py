"""RAG hallucination-triage experiment runner.

Reproduces RAGScope (evidence gates under a leakage-controlled protocol), the Hallucination
Risk Index and a claim-verification study from one Hydra config tree. See README.md.
"""

__version__ = "0.1.0"

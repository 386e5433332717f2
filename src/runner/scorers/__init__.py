"""MLflow `Scorer`s for `mlflow.genai.evaluate`: the runner's gates and verifiers, per trace.

Why: `mlflow.genai.evaluate` is the ecosystem's evaluation entry point, and its built-in
groundedness judge (`RetrievalGroundedness`) calls an LLM per trace. These scorers are the
offline, cheap alternative from the same code paths as the studies: value = risk (larger =
more likely unfaithful), rationale = the evidence behind it.

    from runner.scorers import gate_scorer, registered_gate_scorer, verifier_scorer
    mlflow.genai.evaluate(data=mlflow.search_traces(...), scorers=[
        gate_scorer(FeatureGate("uncovered_fraction"), name="uncovered"),
        registered_gate_scorer("models:/ragscope_e@champion", tracking_uri=...),
    ])
"""

from runner.scorers.trace_scorers import gate_scorer, registered_gate_scorer, verifier_scorer

__all__ = ["gate_scorer", "registered_gate_scorer", "verifier_scorer"]

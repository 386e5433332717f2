"""LLM judges (S2): one reasoning-first prompt, a JSON verdict, and fail-closed parsing.

Two real backends share one contract (`LLMJudge`): `TransformersJudge` runs any local
causal LM (a folder or a GGUF file) and `OpenAICompatibleJudge` asks any OpenAI-style chat
endpoint (vLLM, Ollama, llama.cpp's server). Which judges run is configuration
(``conf/judge/*.yaml``, one ``_target_`` each); the study runs each one once.
Answers are shared and cached by what determines them (`runner.claims.judges.cache`).
"""

from runner.claims.judges.base import JudgeBackendError, LLMJudge, Verdict
from runner.claims.judges.cache import AnswerCache, answer_key
from runner.claims.judges.openai_compatible import OpenAICompatibleJudge
from runner.claims.judges.parsing import REPAIR_MESSAGE, ParsedVerdict, parse_verdict
from runner.claims.judges.prompts import PROMPTS, build_messages
from runner.claims.judges.transformers_judge import TransformersJudge

__all__ = [
    "PROMPTS",
    "REPAIR_MESSAGE",
    "AnswerCache",
    "JudgeBackendError",
    "LLMJudge",
    "OpenAICompatibleJudge",
    "ParsedVerdict",
    "TransformersJudge",
    "Verdict",
    "answer_key",
    "build_messages",
    "parse_verdict",
]

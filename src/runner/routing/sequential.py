"""The audit as a running, anytime-valid test of "accepted risk <= target".

Why sequential: audited labels arrive batch after batch, and people look after every
batch. A fixed-sample interval (`runner.routing.audit.estimate`, Clopper-Pearson) read
after each batch and acted on at the first bad look errs far more often than its level
says. A test by betting (Waudby-Smith & Ramdas, "Estimating means of bounded random
variables by betting", JRSS-B 2023) may be looked at after every row: its wealth is a
nonnegative supermartingale under the null, so by Ville's inequality it ever reaches
``1/delta`` with probability at most ``delta``.

What is computed, per audited accepted row ``x_t`` in {0, 1} (1 = hallucinated), with
``alpha`` the target:

- **alarm side** (H0: p <= alpha): wealth ``K_t = prod (1 + lambda_i (x_i - alpha))``,
  ``lambda_i`` in ``[0, c/alpha]`` (wealth stays positive: ``1 - lambda alpha > 0``).
  ``K_t >= 1/delta``: **violated**.
- **certificate side** (H0': p >= alpha): ``prod (1 - lambda'_i (x_i - alpha))``,
  ``lambda'_i`` in ``[0, c/(1 - alpha)]``. Wealth ``>= 1/delta``: **holds**.
- Otherwise **watching**. A side that has crossed stays crossed (the test stopped there);
  an alarm outranks a certificate.

The bets are aGRAPA (the paper's approximate growth-rate-adaptive bet, section 5.1):
``lambda_t = (mu_{t-1} - alpha) / (s2_{t-1} + (mu_{t-1} - alpha)^2)``, clipped to the
side's range with ``c = 1/2``, from the regularised running mean
``mu_t = (1/2 + sum x) / (t + 1)`` and variance ``s2_t = (1/4 + sum (x_i - mu_i)^2) / (t + 1)``
of the rows *before* t (predictable). The confidence sequence for the accepted risk is
the paper's predictable plug-in empirical-Bernstein CS (Theorem 2, PrPl-EB, ``c = 1/2``),
two-sided at level ``1 - delta``, kept as its running intersection (still valid).

The whole test is `SequentialState`, a small JSON-able dict: the audit study continues it
across audit runs of one registered model version, in the order labels were audited
(`runner.studies.audit`; the state lives on the version, tag `STATE_TAG`, stamped with the
run that wrote it, so a failed audit run does not advance it: `restore`). Updates are
plain float arithmetic row by row, so continuing a state over two batches gives exactly
the numbers of one pass over both.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

STATE_TAG = "audit_sequential_state"
"""Model version tag holding the test's state (`restore` reads it, the audit run writes it)."""
VERSION = 1
BET_CAP = 0.5
"""``c``: the bets stay within half their range (the paper's truncation)."""
RULE = "aGRAPA bets (c=1/2), PrPl-EB confidence sequence (c=1/2); Waudby-Smith & Ramdas 2023"
MAX_LOG_WEALTH = 700.0
"""e-values are reported as ``exp(min(log wealth, 700))``: finite floats, far past any alarm."""
MAX_FINGERPRINTS = 200
"""Label sets already counted (data fingerprints, 16 hex digits each) the state remembers."""


def new_state(alpha: float, delta: float) -> dict[str, Any]:
    """A test of ``accepted risk <= alpha`` at error ``delta`` that has seen nothing."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"the target must be in (0, 1), got {alpha!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return {
        "version": VERSION,
        "rule": RULE,
        "alpha": float(alpha),
        "delta": float(delta),
        "rows": 0,
        "hallucinated": 0,
        "sq_dev": 0.0,  # sum (x_i - mu_{i-1})^2 over seen rows, regularised moments
        "log_wealth_alarm": 0.0,
        "log_wealth_holds": 0.0,
        "cs_sum_lambda": 0.0,
        "cs_sum_lambda_x": 0.0,
        "cs_sum_penalty": 0.0,
        "cs_low": 0.0,
        "cs_high": 1.0,
        "violated_at": None,
        "holds_at": None,
        "counted": [],  # data fingerprints of the label sets already in the test
    }


def _mean(state: dict[str, Any]) -> float:
    return (0.5 + state["hallucinated"]) / (state["rows"] + 1)


def _var(state: dict[str, Any]) -> float:
    return (0.25 + state["sq_dev"]) / (state["rows"] + 1)


def update(state: dict[str, Any], labels: Iterable[int]) -> tuple[dict[str, Any], list[dict]]:
    """Feed audited labels (in audit order) to the test; the new state and one point per row.

    Each point: ``step`` (rows seen so far, over every run), ``e_value`` (alarm-side
    wealth), ``e_value_holds``, ``cs_low``/``cs_high``, ``risk`` (running share) and
    ``alarm`` (0/1, the alarm has fired by this row). `state` is not modified.
    """
    s = dict(state)
    s["counted"] = list(state.get("counted") or [])
    alpha, delta = s["alpha"], s["delta"]
    threshold = math.log(1.0 / delta)
    cs_log = math.log(2.0 / delta)
    points = []
    for raw in labels:
        x = int(raw)
        if x not in (0, 1):
            raise ValueError(f"audit labels are 0/1, got {raw!r}")
        t = s["rows"] + 1
        mu, s2 = _mean(s), _var(s)  # from rows before t only: predictable bets
        gap = mu - alpha
        grapa = gap / (s2 + gap * gap)
        lam_alarm = min(max(grapa, 0.0), BET_CAP / alpha)
        lam_holds = min(max(-grapa, 0.0), BET_CAP / (1.0 - alpha))
        s["log_wealth_alarm"] += math.log1p(lam_alarm * (x - alpha))
        s["log_wealth_holds"] += math.log1p(-lam_holds * (x - alpha))
        # PrPl-EB: lambda_t = min(sqrt(2 log(2/delta) / (s2 t log(1 + t))), c)
        lam = min(math.sqrt(2.0 * cs_log / (s2 * t * math.log1p(t))), BET_CAP)
        psi = (-math.log1p(-lam) - lam) / 4.0
        s["cs_sum_lambda"] += lam
        s["cs_sum_lambda_x"] += lam * x
        s["cs_sum_penalty"] += 4.0 * (x - mu) ** 2 * psi
        centre = s["cs_sum_lambda_x"] / s["cs_sum_lambda"]
        width = (cs_log + s["cs_sum_penalty"]) / s["cs_sum_lambda"]
        s["cs_low"] = max(s["cs_low"], centre - width)
        s["cs_high"] = min(s["cs_high"], centre + width)
        s["rows"], s["hallucinated"] = t, s["hallucinated"] + x
        s["sq_dev"] += (x - _mean(s)) ** 2
        if s["violated_at"] is None and s["log_wealth_alarm"] >= threshold:
            s["violated_at"] = t
        if s["holds_at"] is None and s["log_wealth_holds"] >= threshold:
            s["holds_at"] = t
        points.append(
            {
                "step": t,
                "e_value": _exp(s["log_wealth_alarm"]),
                "e_value_holds": _exp(s["log_wealth_holds"]),
                "cs_low": max(s["cs_low"], 0.0),
                "cs_high": min(s["cs_high"], 1.0),
                "risk": s["hallucinated"] / t,
                "alarm": int(s["violated_at"] is not None),
            }
        )
    return s, points


def _exp(log_wealth: float) -> float:
    return math.exp(min(log_wealth, MAX_LOG_WEALTH))


def verdict(state: dict[str, Any]) -> str:
    """``violated`` once the alarm fired, else ``holds`` once certified, else ``watching``."""
    if state["violated_at"] is not None:
        return "violated"
    if state["holds_at"] is not None:
        return "holds"
    return "watching"


@dataclass(frozen=True)
class SequentialReport:
    """Where the running test stands after an audit run (``audit.json`` -> ``sequential``)."""

    verdict: str
    alpha: float
    delta: float
    rows: int
    hallucinated: int
    first_step: int | None  # this run's first row, counted over every run of the version
    rows_this_run: int
    e_value: float
    e_value_holds: float
    cs_low: float
    cs_high: float
    violated_at: int | None
    holds_at: int | None
    continued_from_run: str | None
    advanced: bool
    note: str
    rule: str = RULE

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return dict(vars(self))


def report(
    state: dict[str, Any], rows_this_run: int, continued_from: str | None, advanced: bool, note: str
) -> SequentialReport:
    """The `SequentialReport` of `state` after this run fed `rows_this_run` rows."""
    first = state["rows"] - rows_this_run + 1 if rows_this_run else None
    return SequentialReport(
        verdict=verdict(state),
        alpha=state["alpha"],
        delta=state["delta"],
        rows=state["rows"],
        hallucinated=state["hallucinated"],
        first_step=first,
        rows_this_run=rows_this_run,
        e_value=_exp(state["log_wealth_alarm"]),
        e_value_holds=_exp(state["log_wealth_holds"]),
        cs_low=max(state["cs_low"], 0.0),
        cs_high=min(state["cs_high"], 1.0),
        violated_at=state["violated_at"],
        holds_at=state["holds_at"],
        continued_from_run=continued_from,
        advanced=advanced,
        note=note,
    )


def record(state: dict[str, Any], prior: dict[str, Any] | None) -> dict[str, Any]:
    """What the audit run leaves on the version (the tracking layer stamps ``run_id``):
    the new state and the trusted state it continued (`restore` falls back to it)."""
    return {"state": state, "prior": prior}


def restore(client: Any, name: str, version: str) -> tuple[dict[str, Any] | None, str | None]:
    """The last state a *finished* audit run left on model version `name`/`version`.

    The tag holds ``{"state", "run_id", "prior"}``: when the run that wrote ``state`` did
    not finish (it failed after the tag was set, or is still running), its ``prior`` (the
    state it had itself read, checked then) is returned instead. (None, None) before any
    audit. Returns (state, id of the run that wrote it).
    """
    mv = client.get_model_version(name, version)
    raw = (mv.tags or {}).get(STATE_TAG)
    if not raw:
        return None, None
    stored = json.loads(raw)
    run_id = stored.get("run_id")
    if run_id and _finished(client, run_id):
        return stored["state"], run_id
    prior = stored.get("prior") or {}
    return prior.get("state"), prior.get("run_id")


def load_state(
    tracking_uri: str, name: str, version: str
) -> tuple[dict[str, Any] | None, str | None]:
    """`restore` from the registry at `tracking_uri`."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    return restore(client, name, version)


def _finished(client: Any, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        run = client.get_run(run_id)
    except MlflowException:
        return False
    return run.info.status == "FINISHED" and run.info.lifecycle_stage == "active"


def remember(state: dict[str, Any], fingerprint: str) -> dict[str, Any]:
    """`state` with the label set `fingerprint` marked as counted (bounded list)."""
    counted = [*state.get("counted", []), fingerprint[:16]]
    return {**state, "counted": counted[-MAX_FINGERPRINTS:]}


def counted(state: dict[str, Any], fingerprint: str) -> bool:
    """Whether the label set `fingerprint` is in the test already (a rerun of one audit)."""
    return fingerprint[:16] in (state.get("counted") or [])

"""The audit as a running, anytime-valid test of "accepted risk <= target".

Why sequential: audited labels arrive batch after batch, and people look after every
batch. A fixed-sample interval (`runner.routing.audit.interval.estimate`, Clopper-Pearson) read
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
across audit runs of one registered model version (`runner.studies.audit`; the state lives
on the version, tag `STATE_TAG`, stamped with the run that wrote it, so a failed audit run
does not advance it: `restore`). Updates are plain float arithmetic row by row, so
continuing a state over two batches gives exactly the numbers of one pass over both.

Each audited row enters the test once, keyed by its id (the state is per model version):
`feed` skips ids counted already and feeds the new ones in the order it is given, which
the audit takes from the route run, never from the labels (a bet is valid only when the
order of the rows is not chosen from their labels). A rerun, the same labels in another
order or a labels file that grew adds only its new ids; an id counted with another label
is refused (`changed_labels`). Which ids were counted is not in the tag (MLflow 3.17 caps
a model-version tag value at 100,000 characters, a few thousand ids): every audit run
writes all ids counted so far for the version, with their labels and steps, as
`COUNTED_FILE` in its run folder (logged as the run's artifacts), and `resume` reads it
from the run that wrote the trusted state.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import DataError

STATE_TAG = "audit_sequential_state"
"""Model version tag holding the test's state (`restore` reads it, the audit run writes it)."""
VERSION = 2
"""2: counted rows are ids in `COUNTED_FILE`; 1 kept data fingerprints (`resume` restarts it)."""
COUNTED_FILE = "audit_counted.parquet"
"""Every row the state of the audit run that wrote it has counted: ``id``, ``label`` and
``step`` (the row's number in the test), sorted by id."""
BET_CAP = 0.5
"""``c``: the bets stay within half their range (the paper's truncation)."""
RULE = "aGRAPA bets (c=1/2), PrPl-EB confidence sequence (c=1/2); Waudby-Smith & Ramdas 2023"
MAX_LOG_WEALTH = 700.0
"""e-values are reported as ``exp(min(log wealth, 700))``: finite floats, far past any alarm."""


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
    added: int  # rows this run fed to the test (ids not counted before)
    counted_already: int  # rows of this run's labels the test had counted before
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
    state: dict[str, Any],
    added: int,
    counted_already: int,
    continued_from: str | None,
    note: str,
) -> SequentialReport:
    """The `SequentialReport` of `state` after this run fed `added` new rows and skipped
    `counted_already` rows the test had counted before."""
    return SequentialReport(
        verdict=verdict(state),
        alpha=state["alpha"],
        delta=state["delta"],
        rows=state["rows"],
        hallucinated=state["hallucinated"],
        first_step=state["rows"] - added + 1 if added else None,
        added=added,
        counted_already=counted_already,
        e_value=_exp(state["log_wealth_alarm"]),
        e_value_holds=_exp(state["log_wealth_holds"]),
        cs_low=max(state["cs_low"], 0.0),
        cs_high=min(state["cs_high"], 1.0),
        violated_at=state["violated_at"],
        holds_at=state["holds_at"],
        continued_from_run=continued_from,
        advanced=added > 0,
        note=note,
    )


def counted_rows(
    ids: Sequence[str] = (), labels: Sequence[int] = (), steps: Sequence[int] = ()
) -> pd.DataFrame:
    """The rows a test has counted as `COUNTED_FILE` holds them: fixed dtypes, sorted by id,
    so the same rows always give the same bytes."""
    frame = pd.DataFrame(
        {
            "id": pd.Series([str(i) for i in ids], dtype=str),
            "label": pd.Series(list(labels), dtype="int64"),
            "step": pd.Series(list(steps), dtype="int64"),
        }
    )
    return frame.sort_values("id", kind="stable").reset_index(drop=True)


def changed_labels(
    counted: pd.DataFrame, ids: Sequence[str], labels: Sequence[int]
) -> list[tuple[str, int, int]]:
    """(id, label counted, label now) of each row of `ids` counted already with another label.

    The test cannot take a label back, so such a row is for the caller to refuse before
    `feed`, which would skip it.
    """
    before = dict(zip(counted["id"], counted["label"], strict=True))
    return [
        (ident, int(before[ident]), int(x))
        for ident, x in zip(ids, labels, strict=True)
        if ident in before and int(before[ident]) != int(x)
    ]


def feed(
    state: dict[str, Any], counted: pd.DataFrame, ids: Sequence[str], labels: Sequence[int]
) -> tuple[dict[str, Any], list[dict], pd.DataFrame]:
    """Continue the test with the rows of `ids` it has not counted, in the order given.

    Rows in `counted` are skipped, so each row enters the test once whatever batch it
    comes in. The order given must not depend on the labels (the audit's is the route
    run's). Returns the new state, one point per new row (`update`) and every counted row,
    the new ones with their steps (`counted_rows`).
    """
    if len(set(ids)) != len(ids):
        raise ValueError("each audited row is fed once: the ids repeat")
    known = set(counted["id"])
    new = [(ident, int(x)) for ident, x in zip(ids, labels, strict=True) if ident not in known]
    state, points = update(state, [x for _, x in new])
    first = state["rows"] - len(new) + 1
    counted = counted_rows(
        [*counted["id"], *(ident for ident, _ in new)],
        [*counted["label"], *(x for _, x in new)],
        [*counted["step"], *range(first, first + len(new))],
    )
    return state, points, counted


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


@dataclass(frozen=True)
class Resumed:
    """The running test an audit run continues (`resume`)."""

    state: dict[str, Any]
    """The state to continue: the trusted one, or a new test (first audit, restarted)."""
    run_id: str | None
    """The finished run that wrote `state` and holds its `COUNTED_FILE` (None: new test)."""
    counted: pd.DataFrame
    """Every row `state` has counted (`counted_rows`)."""
    prior: dict[str, Any] | None
    """The trusted state as read, with its run (``prior`` of the record this run leaves)."""
    note: str
    """Why the test restarted ('' when it did not)."""


def resume(tracking_uri: str, name: str, version: str, alpha: float, delta: float) -> Resumed:
    """The running test of `name`/`version` an audit of target `alpha` at `delta` continues.

    The trusted state (`restore`) and the rows it counted, read from its run's
    `COUNTED_FILE`. The test restarts, with a note that says why, when the state is of
    another target or delta, or was kept before ids were (state version 1: its rows cannot
    be told from this run's, so continuing it could count a row twice).
    """
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    stored, run_id = restore(client, name, version)
    prior = None if stored is None else {"state": stored, "run_id": run_id}
    why = _why_restart(stored, alpha, delta)
    if stored is None or why:
        note = f"restarted: the version's test (run {run_id}) {why}" if why else ""
        return Resumed(new_state(alpha, delta), None, counted_rows(), prior, note)
    counted = _read_counted(client, run_id, stored, f"{name}/{version}")
    return Resumed(stored, run_id, counted, prior, "")


def _why_restart(state: dict[str, Any] | None, alpha: float, delta: float) -> str:
    """Why `state` cannot be continued by a test of `alpha` at `delta` ('' when it can)."""
    if state is None:
        return ""
    if state.get("version") != VERSION:
        return (
            f"was kept by an earlier runner (state version {state.get('version')}) without the "
            "ids of the rows it counted, so a row could be counted twice"
        )
    if (state["alpha"], state["delta"]) != (alpha, delta):
        return (
            f"was of target {state['alpha']} at delta {state['delta']}, this audit's is "
            f"{alpha} at {delta}"
        )
    return ""


def _read_counted(client: Any, run_id: str, state: dict[str, Any], model: str) -> pd.DataFrame:
    """`COUNTED_FILE` of run `run_id`, checked against the state it belongs to.

    Unreadable or not matching, the audit stops: restarting silently would throw away the
    version's evidence over what may be a passing fault of the store.
    """
    from mlflow.exceptions import MlflowException

    where = f"{COUNTED_FILE} of audit run {run_id}"
    fix = f"delete the tag {STATE_TAG} of {model} to start its running test anew"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            frame = pd.read_parquet(Path(client.download_artifacts(run_id, COUNTED_FILE, tmp)))
    except (MlflowException, OSError) as exc:
        raise DataError(
            f"the running test of {model} continues this run's state, but the rows it counted "
            f"cannot be read ({type(exc).__name__}: {exc}); {fix}",
            file=where,
        ) from exc
    if len(frame) != state["rows"]:
        raise DataError(
            f"holds {len(frame)} rows, the state of the running test of {model} counted "
            f"{state['rows']}; {fix}",
            file=where,
        )
    return counted_rows(frame["id"], frame["label"], frame["step"])


def _finished(client: Any, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        run = client.get_run(run_id)
    except MlflowException:
        return False
    return run.info.status == "FINISHED" and run.info.lifecycle_stage == "active"

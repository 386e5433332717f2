"""Stage 3, the audit: does the accepted risk hold on labelled rows, and has the traffic moved?

One look at one sample (`interval.py`: an exact binomial interval and its verdict), the
running test of audits that go on (`sequential.py`, anytime-valid), the shift test of
routed risks against the calibration's (`shift.py`), and a route's decisions written back
onto the traces it routed (`trace_feedback.py`).
"""

from runner.routing.audit.interval import estimate
from runner.routing.audit.shift import risk_shift_samples
from runner.routing.audit.trace_feedback import TraceFeedback

__all__ = [
    "TraceFeedback",
    "estimate",
    "risk_shift_samples",
]

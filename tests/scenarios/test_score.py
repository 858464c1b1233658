"""score.py reads what the tool said out of a failure's message (pure)."""

from __future__ import annotations

from score import said

MESSAGE = """x-case (https://example.org):
  - no words match 'maxconn'
  - no recommendation matches 'maxconn'
--- diagnosis words ---
On 2 x NVIDIA H100 80GB HBM3 (CC 9.0), the primary limiter is latency: 4514 ms of 4561 ms is outside the engine. It waits. Ranked causes: (1) 99% of the TTFT is spent outside the engine (4561 ms at the client); (2) Other. Start with the first.
bound: latency
"""


def test_a_failure_says_its_first_unmet_expectation_verdict_and_first_cause():
    assert said(MESSAGE) == ("no words match 'maxconn'",
                             "On 2 x NVIDIA H100 80GB HBM3 (CC 9.0), the primary limiter is latency: 4514 ms of "
                             "4561 ms is outside the engine",
                             "99% of the TTFT is spent outside the engine (4561 ms at the client)")


def test_a_diagnosis_with_no_ranked_cause_says_so():
    assert said("c:\n  - no words match 'x'\n--- diagnosis words ---\nOn 1 x L4, nothing is supported.\n")[2] == \
        "(no ranked cause)"


def test_a_known_failing_development_case_is_read_with_why():
    from harness import known_failing

    text = "# Cases\n\n- `a-case-h100`: its regex also matches a correct finding\nprose `not-a-case`: no\n"
    assert known_failing(text) == {"a-case-h100": "its regex also matches a correct finding"}

def test_every_listed_known_failure_is_a_development_case():
    from harness import KNOWN_FAILING, known_failing

    assert KNOWN_FAILING.is_file()
    stale = [c for c in known_failing() if not (KNOWN_FAILING.parent / c / "case.yaml").is_file()]
    assert not stale, f"listed in {KNOWN_FAILING.name} but no such residual case: {stale}"

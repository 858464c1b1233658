"""One recorded investigation's timeline, as the device bench reports it: the run's wall time (first to last event),
when the resource account's result came back (its sampling window closes just before), how long the run went on
after it, how many turns the lead took and which agents it started in its second round.

    python bench/device/run_timeline.py TRANSCRIPT [LABEL]
"""

from __future__ import annotations

import datetime
import json
import sys


def _t(ts: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def timeline(path: str) -> dict:
    events = [json.loads(line) for line in open(path) if '"ts"' in line]
    t0 = _t(events[0]["ts"])
    end = (_t(events[-1]["ts"]) - t0).total_seconds()
    account = next((e for e in events if e.get("type") == "tool_result" and e.get("tool") == "resource_account"), None)
    at = (_t(account["ts"]) - t0).total_seconds() if account else None
    lead_turns = {e.get("turn") for e in events if e.get("type") == "model_call" and e.get("agent_id") == "lead"}
    second = [e.get("args", {}).get("agent") for e in events if e.get("type") == "tool_call"
              and e.get("agent_id") == "lead" and e.get("turn") == 2 and e.get("tool") == "task"]
    return {"run_s": round(end, 2), "account_at_s": None if at is None else round(at, 2),
            "after_account_s": None if at is None else round(end - at, 2), "lead_turns": len(lead_turns),
            "second_round": second}


if __name__ == "__main__":
    label = sys.argv[2] if len(sys.argv) > 2 else ""
    print(label, json.dumps(timeline(sys.argv[1])))

"""A lone surrogate in an event (a host's JSON or YAML escapes one: a served config's `"\\ud800"`, which the settings
audit and the path prong parse here) is recorded, escaped, and read back as the same string: UTF-8 cannot encode it,
and the recorder's write raised UnicodeEncodeError, so that whoever wrote the config ended the run's recording."""

from __future__ import annotations

import json

from orchestrator.events import Notice
from orchestrator.transcript import Recorder, read_transcript


def test_a_lone_surrogate_is_recorded_and_read_back(tmp_path):
    path = tmp_path / "t.jsonl"
    rec = Recorder("run1", path)
    value = json.loads('"served as \\ud800 and \\udfff"')  # what json.loads makes of a host's escapes
    rec.emit(Notice(run_id="run1", agent_id="lead", message=value))
    rec.close()
    raw = path.read_bytes()
    raw.decode("utf-8")  # the file is UTF-8 throughout
    assert b"\\ud800" in raw
    (back,) = [e for e in read_transcript(path).events if isinstance(e, Notice)]
    assert back.message == value

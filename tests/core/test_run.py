"""`Run` used directly, the way a notebook would: every way a run ends leaves `run_finished` as the transcript's
last line, and the host and the backend the run was given are closed on every path."""

from __future__ import annotations

import asyncio
import json

import anyio
import pytest

from orchestrator.agentdefs import load_agents
from orchestrator.api import InputError
from orchestrator.inputs import RunInputs
from orchestrator.events import RunFinished, RunStarted
from orchestrator.hosts.base import HostError
from orchestrator.hosts.mock import FindRequest, MockHost, ReadRequest
from orchestrator.loop import FatalRunError
from orchestrator.models.base import ReplayDivergence
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.run import Run
from orchestrator.settings import Settings
from support.core import core_registry, write_agents

CAUSE = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-0.1"]}


class ClosingBackend(DoublesBackend):
    """Doubles that remember being closed (a real backend closes its HTTP client)."""

    closed = False

    async def aclose(self) -> None:
        self.closed = True


def answer(req):
    if isinstance(req, ReadRequest):
        raise FileNotFoundError(req.path)
    return [] if isinstance(req, FindRequest) else 127  # no command of the host's probes exists


def lead(*first) -> ScriptedModel:
    """A lead that sleeps once (evidence ev-0.1), then submits a diagnosis citing it; `first` answers come before."""
    return ScriptedModel([*first, respond(call("sleep", seconds=0, label="look")),
                          respond(call("submit_diagnosis", verdict="the verdict", causes=[CAUSE]))])


def make_run(tmp_path, model, *, host=None, transcript=None, **kw) -> tuple[Run, MockHost]:
    """A Run of `lead` on doubles (a backend that remembers being closed) and `host` (default: a MockHost)."""
    agents = write_agents(tmp_path / "agents")
    host = host if host is not None else MockHost(answer)
    run = Run(inputs=RunInputs(question="why is it slow?"), settings=Settings(prefetch_probes=False),
              backend=ClosingBackend({"lead": model}), agents=load_agents([agents]), registry=core_registry(),
              transcript=transcript or tmp_path / "t.jsonl", host=host, **kw)
    return run, host


def last_line(path) -> dict:
    return json.loads(path.read_text().splitlines()[-1])


async def test_a_run_investigates_records_and_closes_its_host_and_backend(tmp_path):
    seen = []
    run, host = make_run(tmp_path, lead(), progress=seen.append)
    backend = run.backend
    with pytest.raises(RuntimeError, match="not finished"):
        _ = run.result
    async with run:
        assert isinstance(run.context.recorder.events[0], RunStarted)
        diagnosis = await run.investigate()
        assert diagnosis is not None and diagnosis.verdict == "the verdict"
        assert "ev-0.1" in diagnosis.evidence
        assert not host.closed and not backend.closed  # open for as long as the block runs
    result = run.result
    assert result.status == "ok" and result.error is None and result.diagnosis == diagnosis
    assert isinstance(result.events[-1], RunFinished) and result.events[-1].status == "ok"
    assert seen[-1] is result.events[-1]
    assert last_line(tmp_path / "t.jsonl")["type"] == "run_finished"
    assert result.transcript_path == tmp_path / "t.jsonl"
    assert host.closed and backend.closed


@pytest.mark.parametrize("failure", [ReplayDivergence("replay diverged: agent lead turn 1: the brief differs"),
                                     FatalRunError("the API key was refused")])
async def test_a_run_stopped_by_a_divergence_or_fatal_error_is_recorded_as_error_not_raised(tmp_path, failure):
    run, host = make_run(tmp_path, ScriptedModel([failure]))
    async with run:
        await run.investigate()  # raises; the block's exit records it and does not re-raise
    result = run.result
    assert result.status == "error" and result.error == str(failure) and result.diagnosis is None
    last = last_line(tmp_path / "t.jsonl")
    assert last["type"] == "run_finished" and last["status"] == "error" and last["error"] == str(failure)
    assert host.closed and run.backend.closed


async def test_a_cancelled_run_is_recorded_as_cancelled_and_the_cancellation_goes_on(tmp_path):
    run, host = make_run(tmp_path, ScriptedModel(["never answered"], delay_s=60))
    with anyio.move_on_after(0.3) as scope:
        async with run:
            await run.investigate()
    assert scope.cancelled_caught  # the cancellation was not swallowed by the run
    assert run.result.status == "cancelled"
    last = last_line(tmp_path / "t.jsonl")
    assert last["type"] == "run_finished" and last["status"] == "cancelled"
    assert host.closed and run.backend.closed


async def test_an_error_in_the_block_is_recorded_and_raised(tmp_path):
    run, host = make_run(tmp_path, lead())
    with pytest.raises(ValueError, match="notebook bug"):
        async with run:
            raise ValueError("notebook bug")
    assert run.result.status == "error" and run.result.error == "ValueError: notebook bug"
    assert last_line(tmp_path / "t.jsonl")["status"] == "error"
    assert host.closed and run.backend.closed


async def test_a_lead_ending_without_a_diagnosis_is_an_error_with_the_reason(tmp_path):
    run, _ = make_run(tmp_path, ScriptedModel(["I give up"]))
    async with run:
        assert await run.investigate() is None
    assert run.result.status == "error" and "no diagnosis" in run.result.error
    assert last_line(tmp_path / "t.jsonl")["status"] == "error"


async def test_run_finished_is_written_before_closing_even_when_the_host_fails_to_close(tmp_path):
    class BadClose(MockHost):
        async def aclose(self) -> None:
            raise HostError("the connection was already gone")

    run, _ = make_run(tmp_path, lead(), host=BadClose(answer))
    with pytest.raises(HostError):
        async with run:
            await run.investigate()
    last = last_line(tmp_path / "t.jsonl")
    assert last["type"] == "run_finished" and last["status"] == "ok"
    assert run.backend.closed  # the backend is closed all the same


def test_a_run_closed_with_its_event_loop_gone_still_ends_its_transcript(tmp_path):
    """What a KeyboardInterrupt that stopped the event loop leaves: the run's coroutine, closed with no loop."""
    run, _ = make_run(tmp_path, ScriptedModel(["never answered"], delay_s=60))

    async def main():
        async with run:
            await run.investigate()

    coro = main()
    loop = asyncio.new_event_loop()
    try:
        loop.create_task(coro)
        loop.run_until_complete(asyncio.sleep(0.3))  # the lead is now waiting for its model
    finally:
        loop.close()
    coro.close()  # GeneratorExit where the lead waited: nothing async can run any more
    last = last_line(tmp_path / "t.jsonl")
    assert last["type"] == "run_finished" and last["status"] == "cancelled", last
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    lead = [x for x in lines if x["type"] == "agent_finished" and x["agent_id"] == "lead"]
    # the lead was interrupted, not broken (a cancel scope's exit with no loop is no bug of the agent's)
    assert [(x["status"], x["error"]) for x in lead] == [("cancelled", "interrupted")], lead


async def test_an_unwritable_transcript_is_bad_input_and_leaves_nothing_open(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    run, host = make_run(tmp_path, lead(), transcript=tmp_path / "file" / "t.jsonl")
    with pytest.raises(InputError, match="cannot write the transcript"):
        async with run:
            raise AssertionError("the block must not run")
    assert host.closed and run.backend.closed


async def test_a_host_that_cannot_be_opened_records_nothing_and_closes_the_backend(tmp_path):
    async def unreachable():
        raise HostError("gpu-box: connection refused")

    run, _ = make_run(tmp_path, lead(), host=unreachable)
    with pytest.raises(HostError, match="connection refused"):
        async with run:
            raise AssertionError("the block must not run")
    assert not (tmp_path / "t.jsonl").exists()
    assert run.backend.closed


async def test_a_host_opener_is_called_on_entry_and_its_host_closed_on_exit(tmp_path):
    opened = []

    async def opener():
        opened.append(MockHost(answer))
        return opened[-1]

    run, _ = make_run(tmp_path, lead(), host=opener)
    assert not opened
    async with run:
        assert run.context.host is opened[0]
        await run.investigate()
        with pytest.raises(RuntimeError, match="investigates once"):
            await run.investigate()
    assert run.result.status == "ok" and opened[0].closed

"""`InputError`: bad input to a run, raised by the library entry points and by the host sources they consult;
`ToolFailure`: a tool call's expected failure; `RunAbort`: an error that stops the whole run.

A leaf module (it imports nothing of the package), so that hosts, backend selection and the run can raise it
without importing the library entry points (`orchestrator.api` re-exports it).
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input to a library entry point; the message is one line naming the problem and the fix."""


class ToolFailure(Exception):
    """A tool's expected failure: the message goes back to the model as an error result (raised by tools and by the
    run context a tool asks for its host; `orchestrator.tools.base` re-exports it)."""


class RunAbort(Exception):
    """An error that must stop the whole run, not just one agent: it passes through tool and agent boundaries."""

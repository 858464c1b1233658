"""`InputError`: bad input to a run, raised by the library entry points and by the host sources they consult.

A leaf module (it imports nothing of the package), so that hosts, backend selection and the run can raise it
without importing the library entry points (`orchestrator.api` re-exports it).
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input to a library entry point; the message is one line naming the problem and the fix."""

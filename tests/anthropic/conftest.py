"""The web server fixture of the fetch and online tests (tests/support/web.py)."""

pytest_plugins = ["support.web"]

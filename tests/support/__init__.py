"""Test-only helpers: sshd on loopback, staged GPU hosts, a fake Messages API server."""

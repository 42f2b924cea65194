"""``python -m arena_core.healthcheck URL``: the containers' healthcheck (deploy/compose.yaml)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from arena_core.healthcheck import check, main
from support.http_stub import serve_handler


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/garbage":
            self.wfile.write(b"not http at all\r\n\r\n")
            return
        status = {"/readyz": 200, "/moved": 302}.get(self.path, 503)
        body = b"ok" if status == 200 else b"redis unreachable"
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "/readyz")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        pass


@pytest.fixture
def server() -> Iterator[str]:
    with serve_handler(_Handler) as port:
        yield f"http://127.0.0.1:{port}"


def test_a_2xx_answer_is_healthy(server: str) -> None:
    assert check(f"{server}/readyz") is None
    assert main([f"{server}/readyz"]) == 0


def test_an_error_status_is_unhealthy_with_the_answer(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([f"{server}/other"]) == 1
    assert "answered 503: redis unreachable" in capsys.readouterr().err


def test_a_redirect_is_not_followed(server: str) -> None:
    assert check(f"{server}/moved") == f"{server}/moved answered 302: redis unreachable"


def test_a_garbled_answer_is_unhealthy_not_a_traceback(server: str) -> None:
    problem = check(f"{server}/garbage")
    assert problem is not None and "unreachable" in problem


def test_a_proxy_in_the_environment_is_not_used(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert check(f"{server}/readyz") is None


def test_nothing_listening_is_unhealthy(server: str) -> None:
    problem = check("http://127.0.0.1:9/readyz", timeout_s=2)
    assert problem is not None and "unreachable" in problem


@pytest.mark.parametrize("argv", [[], ["a", "b"], ["file:///etc/passwd"]])
def test_bad_arguments_exit_1_not_docker_s_reserved_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    assert capsys.readouterr().err.strip()


def test_runs_as_a_module_with_arguments_free_of_spaces(server: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "arena_core.healthcheck", f"{server}/readyz"], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr

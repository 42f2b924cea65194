"""The direct side of the embedded-model benchmark: llama-cpp-python in a child process.

``python -m bench.llama_direct`` (started by :func:`direct_model`) loads the SmolLM2 GGUF
exactly as the model server's ``LlamaCppEngine`` does, then answers one JSON line per request
on stdin with the completion's usage, text and the seconds the call itself took (timed in
the child, so pipe overhead is not counted against llama.cpp).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from bench.harness import REPO, BenchError, Stack


def _direct_worker() -> None:
    """Child process: load the model as the model server does, then answer JSON lines on stdin.

    First line in: ``{"gguf", "n_ctx", "n_threads"}``; answered with ``{"ready", "load_s", ...}``
    once loaded. Every further line, ``{"messages", "temperature", "top_p", "max_tokens"}``, is
    answered with the completion's usage, text and the seconds the call took (timed here).
    """
    # The model server's own construction helper: it is what makes the load identical
    # (extra buffer types off, ADR 0003).
    from arena_model.llama_cpp_engine import without_extra_buffer_types

    llama_cpp = importlib.import_module("llama_cpp")
    config = json.loads(sys.stdin.readline())
    began = time.perf_counter()
    # The same arguments as LlamaCppEngine._load_locked (no seed: the server sets none either).
    with without_extra_buffer_types(llama_cpp):
        llama = llama_cpp.Llama(
            model_path=config["gguf"],
            n_ctx=config["n_ctx"],
            n_threads=config["n_threads"],
            verbose=False,
        )
    ready = {
        "ready": True,
        "load_s": time.perf_counter() - began,
        "llama_cpp": getattr(llama_cpp, "__version__", "?"),
        "chat_format": getattr(llama, "chat_format", None),
    }
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        # Exactly what LlamaCppEngine._complete_blocking passes for a defender request.
        response = llama.create_chat_completion(
            messages=request["messages"],
            temperature=request["temperature"],
            top_p=request["top_p"],
            max_tokens=request["max_tokens"],
            seed=None,
            stop=[],
        )
        seconds = time.perf_counter() - start
        answer = {
            "seconds": seconds,
            "completion_tokens": int(response["usage"]["completion_tokens"]),
            "prompt_tokens": int(response["usage"]["prompt_tokens"]),
            "text": response["choices"][0]["message"].get("content") or "",
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    llama.close()


class DirectModel:
    """The parent's handle on the direct child process."""

    def __init__(self, process: subprocess.Popen[str], log_path: Path) -> None:
        self.process = process
        self.log_path = log_path
        self.info: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        return self.process.pid

    def _exchange(self, payload: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        stdin.write(json.dumps(payload) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise BenchError(f"the direct llama-cpp process died: {self._log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        if self.process.stdin is None or self.process.stdout is None:
            raise BenchError("the direct llama-cpp process has no pipes")
        return self.process.stdin, self.process.stdout

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-2000:]
        return "(no log)"

    def load(self, gguf: Path, n_ctx: int, n_threads: int) -> None:
        self.info = self._exchange({"gguf": str(gguf), "n_ctx": n_ctx, "n_threads": n_threads})
        if not self.info.get("ready"):
            raise BenchError(f"the direct llama-cpp process did not load the model: {self.info}")

    def complete(
        self, messages: list[dict[str, str]], *, temperature: float, top_p: float, max_tokens: int
    ) -> dict[str, Any]:
        """One completion: ``{"seconds", "completion_tokens", "prompt_tokens", "text"}``."""
        return self._exchange(
            {"messages": messages, "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        )


@contextlib.contextmanager
def direct_model(bench: Stack, gguf: Path, *, n_ctx: int, n_threads: int) -> Iterator[DirectModel]:
    """Start the direct child (``python -m bench.llama_direct``), stop it on exit."""
    log_dir = bench.workdir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "direct-llama.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.llama_direct"],
            cwd=str(REPO),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=bench.base_env(),
        )
    handle = DirectModel(process, log_path)
    try:
        handle.load(gguf, n_ctx, n_threads)
        yield handle
    finally:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


if __name__ == "__main__":
    _direct_worker()

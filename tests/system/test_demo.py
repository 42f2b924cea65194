"""`arena demo` as a user runs it: real processes, live output, files on disk, cleanup."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.processes import clean_env, default_sigint, port_is_closed, run_arena

pytestmark = pytest.mark.system


def _run_dir(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def _service_urls(run_dir: Path) -> list[str]:
    urls = []
    for log in (run_dir / "logs").glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if "Uvicorn running on " in line:
                urls.append(line.split("Uvicorn running on ")[1].split()[0])
    return urls


def test_demo_with_the_scripted_model_plays_and_cleans_up(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_arena(
        ["demo", "--engine", "scripted", "--scripted-mode", "obey", "--max-turns", "5", "--out", str(out)],
        timeout_s=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for turn in range(1, 5):
        assert f"turn {turn}" in done.stdout
    assert "ATTACKER WON" in done.stdout
    run_dir = _run_dir(out)
    transcript = (run_dir / "transcript.md").read_text()
    assert "## Turn 4 (new conversation)" in transcript
    result = json.loads((run_dir / "result.json").read_text())
    assert result["outcome"] == "attacker_won" and result["turns_used"] == 4
    urls = _service_urls(run_dir)
    assert len(urls) == 3
    assert all(port_is_closed(url) for url in urls)


def test_demo_ctrl_c_stops_every_child(tmp_path: Path) -> None:
    out = tmp_path / "out"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena",
            "demo",
            "--engine",
            "scripted",
            "--scripted-mode",
            "refuse",
            "--max-turns",
            "50",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,
        env=clean_env(ARENA_MODEL_LATENCY_MS="300"),
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    seen = ""
    while "turn 2" not in seen:
        line = process.stdout.readline()
        assert line, f"demo ended early: {seen}"
        seen += line
        assert time.monotonic() < deadline, seen
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=60)
    assert process.returncode == 130, seen + rest
    assert "interrupted" in rest
    urls = _service_urls(_run_dir(out))
    assert len(urls) == 3
    assert all(port_is_closed(url) for url in urls)


@pytest.mark.slow
def test_demo_with_the_embedded_smollm2_model(tmp_path: Path) -> None:
    """The acceptance run: offline, the real embedded model, every turn and the verdict."""
    out = tmp_path / "out"
    done = run_arena(["demo", "--max-turns", "5", "--out", str(out)], timeout_s=600, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "turn 1" in done.stdout
    assert "match result" in done.stdout
    assert ("ATTACKER WON" in done.stdout) or ("DEFENDED" in done.stdout)
    run_dir = _run_dir(out)
    assert (run_dir / "transcript.md").is_file()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["defender_model"].startswith("llamacpp:SmolLM2-135M-Instruct")

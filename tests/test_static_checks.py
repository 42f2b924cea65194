"""The type checker and the linter run as part of the test suite.

STYLE.md asks for a type checker in the test command; running them here keeps
the README's single test command complete.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def test_mypy_strict_passes() -> None:
    done = _run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_lint_passes() -> None:
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_clean() -> None:
    done = _run("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr

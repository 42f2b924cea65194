"""The checkers install and run."""

from __future__ import annotations

import subprocess
from pathlib import Path


def test_the_checkers_run(tools_bin: Path) -> None:
    for tool, args in (
        ("helm", ["version", "--short"]),
        ("docker-compose", ["version"]),
        ("hadolint", ["--version"]),
        ("kubernetes-validate", ["--version"]),
    ):
        done = subprocess.run([str(tools_bin / tool), *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, (tool, done.stderr)

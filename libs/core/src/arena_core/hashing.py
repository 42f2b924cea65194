"""Stable fingerprints of prompts, recorded for reproducibility."""

from __future__ import annotations

import hashlib


def prompt_hash(text: str) -> str:
    """``sha256:<hex>`` of ``text`` (UTF-8): names a prompt template without storing it."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = ["prompt_hash"]

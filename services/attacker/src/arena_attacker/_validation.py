"""How a pydantic validation failure of a request is put in words for its sender."""

from __future__ import annotations

from pydantic import ValidationError


def validation_problems(exc: ValidationError) -> str:
    """Every problem of ``exc`` as ``field.path: message``, separated by ``; ``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'request'}: {err['msg']}" for err in exc.errors()
    )


__all__ = ["validation_problems"]

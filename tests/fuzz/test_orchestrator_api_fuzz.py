"""Schemathesis against the orchestrator's own OpenAPI schema (/openapi.json), in-process.

Every operation gets generated requests, valid and invalid; each response must
be documented by the schema: no 5xx (the one documented, 503, needs an
unreachable Redis; these runs keep state in memory), a documented status code,
content type, headers and body, and invalid input rejected with a 4xx.

Submitted campaigns are real: the worker runs and plays them with a player that
fails at once, locally (no connection is ever opened), so the matches end as
errors and the campaigns finish.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from fastapi import FastAPI
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi as schemathesis_asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.testclient import TestClient

from arena_core.errors import TargetUnreachableError
from arena_core.match_models import MatchResult
from arena_core.settings import load_settings
from arena_orchestrator.app import create_orchestrator_app
from arena_orchestrator.campaign_models import MatchJob
from support import fuzzing

pytestmark = pytest.mark.fuzz

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]


# A spec over ARENA_ORCHESTRATOR_MAX_SPEC_BYTES is refused with the documented 413 before it is
# parsed, whatever else is wrong with it.
NEGATIVE_DATA_STATUSES = ["400", "404", "405", "413", "415", "422"]
CONFIG: dict[str, object] = {
    "checks": {"negative_data_rejection": {"expected-statuses": NEGATIVE_DATA_STATUSES}},
    **({"seed": fuzzing.FIXED_SEED} if fuzzing.fuzz_profile() == fuzzing.PROFILES["ci"] else {}),
}


class LocalFailurePlayer:
    """Fails every match at once without touching the network."""

    async def play(self, job: MatchJob) -> MatchResult:
        raise TargetUnreachableError(f"fuzz run: match {job.match_id} is not played")


def _orchestrator_app() -> FastAPI:
    saved = {name: os.environ.pop(name) for name in list(os.environ) if name.startswith("ARENA_")}
    try:
        settings = load_settings(
            orchestrator_match_attempts=1,
            orchestrator_retry_backoff_s=0,
            orchestrator_max_campaign_matches=50,
            orchestrator_max_spec_bytes=20_000,
        )
    finally:
        os.environ.update(saved)
    assert settings.redis_url is None and settings.attacker_url is None
    return create_orchestrator_app(settings, player=LocalFailurePlayer())


# Built at import (schemathesis parametrizes at collection) without starting the app: a TestClient
# used outside a `with` block runs no lifespan. The lifespan (the worker) starts with the first
# fuzz request, on schemathesis's ASGI client, and is shut down after the module.
APP = _orchestrator_app()
SERVED = TestClient(APP).get("/openapi.json")
assert SERVED.status_code == 200, SERVED.text
schema = schemathesis.openapi.from_dict(SERVED.json(), config=schemathesis.Config.from_dict(CONFIG))
schema.app = APP


@pytest.fixture(scope="module", autouse=True)
def _stop_the_app() -> Iterator[None]:
    yield
    schemathesis_asgi.shutdown_lifespans()


@schema.parametrize()
def test_orchestrator_api_conforms_to_its_schema(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS, timeout=fuzzing.HANG_GUARD_S)

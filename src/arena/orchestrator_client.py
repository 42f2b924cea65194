"""The CLI's client of the orchestrator's REST API.

Turns transport failures and error bodies into :class:`ArenaError`s with the
server's own message, so the CLI prints a reason and exits with the right code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from arena_core.errors import ArenaError, InvalidInputError, TargetProtocolError, TargetUnreachableError
from arena_orchestrator.campaign_models import CampaignProgress, MatchRecord
from arena_orchestrator.errors import NotFoundError, TooManyCampaignsError
from arena_orchestrator.leaderboard import Leaderboard


class OrchestratorAuthError(ArenaError):
    """The orchestrator wants a token (401) or a full one (403)."""

    kind = "unauthorized"
    http_status = 401
    exit_code = 2


class OrchestratorClient:
    """Synchronous client of ``/v1`` (the CLI polls; it needs no event loop).

    ``token`` is sent as ``Authorization: Bearer`` (``ARENA_ORCHESTRATOR_TOKEN``).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 30.0,
        http: httpx.Client | None = None,
        token: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = http or httpx.Client(timeout=timeout_s)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> OrchestratorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        url = f"{self.base_url}{path}"
        try:
            headers = {**self._headers, **kwargs.pop("headers", {})}
            response = self._http.request(method, url, headers=headers, **kwargs)
        except httpx.TimeoutException as exc:
            raise TargetUnreachableError(
                f"the orchestrator at {self.base_url} did not answer in time"
            ) from exc
        except httpx.HTTPError as exc:
            raise TargetUnreachableError(
                f"cannot reach the orchestrator at {self.base_url} ({type(exc).__name__}: {exc}); "
                "is `arena serve orchestrator` running there?"
            ) from exc
        if response.status_code < 400:
            return response
        raise _error_from(response, self.base_url, sent_token=bool(self._headers))

    def submit(self, spec_text: str, *, media_type: str) -> CampaignProgress:
        """POST a campaign spec as it was written (YAML or JSON), so line numbers match the file."""
        response = self._request(
            "POST", "/v1/campaigns", content=spec_text.encode("utf-8"), headers={"Content-Type": media_type}
        )
        return CampaignProgress.model_validate(response.json())

    def progress(self, campaign_id: str) -> CampaignProgress:
        """A campaign's progress."""
        return CampaignProgress.model_validate(self._request("GET", f"/v1/campaigns/{campaign_id}").json())

    def list(self, limit: int = 50) -> list[CampaignProgress]:
        """The newest campaigns."""
        body = self._request("GET", "/v1/campaigns", params={"limit": limit}).json()
        return [CampaignProgress.model_validate(c) for c in body.get("campaigns", [])]

    def cancel(self, campaign_id: str) -> CampaignProgress:
        """Cancel a campaign."""
        return CampaignProgress.model_validate(
            self._request("POST", f"/v1/campaigns/{campaign_id}/cancel").json()
        )

    def report(
        self,
        campaign_id: str,
        fmt: str,
        *,
        fail_above: float | None = None,
        fail_above_categories: Mapping[str, float] | None = None,
    ) -> bytes:
        """A rendered report."""
        params: dict[str, str | list[str]] = {"format": fmt}
        if fail_above is not None:
            params["fail_above"] = repr(fail_above)
        if fail_above_categories:
            params["fail_above_category"] = [f"{c}={r!r}" for c, r in fail_above_categories.items()]
        return self._request("GET", f"/v1/campaigns/{campaign_id}/report", params=params).content

    def leaderboard(self, *, category: str | None = None, since: str | None = None) -> Leaderboard:
        """The ratings of every attacker and defender (``GET /v1/leaderboard``)."""
        params = {key: value for key, value in (("category", category), ("since", since)) if value}
        return Leaderboard.model_validate(self._request("GET", "/v1/leaderboard", params=params).json())

    def match(self, match_id: str) -> MatchRecord:
        """A finished match."""
        return MatchRecord.model_validate(self._request("GET", f"/v1/matches/{match_id}").json())


def _error_from(response: httpx.Response, base_url: str, *, sent_token: bool) -> ArenaError:
    try:
        error = response.json()["error"]
        message = str(error["message"])
    except (ValueError, KeyError, TypeError):
        return TargetProtocolError(
            f"the orchestrator at {base_url} answered {response.status_code} without an error body"
        )
    if response.status_code == 404:
        return NotFoundError(message)
    if response.status_code == 401:
        hint = (
            "the token in ARENA_ORCHESTRATOR_TOKEN is not one it accepts"
            if sent_token
            else "set ARENA_ORCHESTRATOR_TOKEN to one of its ARENA_API_TOKENS"
        )
        return OrchestratorAuthError(
            f"the orchestrator at {base_url} refused the request: {message} ({hint})"
        )
    if response.status_code == 403:
        return OrchestratorAuthError(
            f"the orchestrator at {base_url} refused the request: {message} "
            "(ARENA_ORCHESTRATOR_TOKEN is a read-only token; this needs one of its ARENA_API_TOKENS)"
        )
    if response.status_code == 429:
        retry_after = response.headers.get("retry-after", "")
        wait_s = int(retry_after) if retry_after.isdigit() else 0
        return TooManyCampaignsError(
            f"the orchestrator at {base_url} refused the request (429): {message}", retry_after_s=wait_s
        )
    if response.status_code in (400, 413, 415, 422):
        return InvalidInputError(message)
    return TargetProtocolError(f"the orchestrator at {base_url} failed ({response.status_code}): {message}")


__all__ = ["OrchestratorAuthError", "OrchestratorClient"]

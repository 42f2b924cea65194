"""Push notification checks: does the agent take, and call, a webhook on a loopback address?

The three checks share one trial per binding (the first JSON-RPC and the first HTTP+JSON
interface), made once per run and kept in :data:`_TRIALS`:

1. a fresh task of the first caller; a push config for it with a webhook on the probe's own
   listener (``http://127.0.0.1:PORT/<random>``) and a random token (``push.private-webhook``
   when it is accepted);
2. a state change of that task: a follow-up message when it waits for input, a cancel when
   it is still running; when it has already ended, a new message carrying the same webhook
   in its ``configuration`` (so an agent that finishes every task at once is looked at too);
3. up to ``wait_s`` for a request at the webhook (``push.ssrf``), whose token header
   ``push.webhook-unauthenticated`` reads.

Every config the trial created is deleted afterwards, whatever happened. The listener is on
the probe's machine: an agent elsewhere that accepts the webhook calls its *own* loopback,
which the probe cannot see (the acceptance is still reported).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from arena_core.probes.base import (
    INTERRUPTED,
    TERMINAL,
    CheckRun,
    ProbeContext,
    Skip,
    check,
    read_answer,
    task_in,
)
from arena_core.probes.checks.input import first_of_each_binding
from arena_core.probes.listener import WebhookListener, WebhookRequest
from arena_core.probes.model import Severity
from arena_core.probes.wire import Exchange, Interface, ProbeSession

FOLLOW_UP_TEXT = "Thank you, that is all I needed."
TOKEN_HEADER = "x-a2a-notification-token"  # noqa: S105 - a header name, not a secret
REST_03_CONFIG_ID = "probe"
"""The config id :meth:`ProbeSession.set_push_config` asks a 0.3 HTTP+JSON interface for."""


@dataclass
class _Trial:
    """One binding's push trial and what came of it."""

    interface: Interface
    webhook: str
    token: str
    create: Exchange | None = None
    accepted: bool = False
    refusal: str = ""
    changes: list[Exchange] = field(default_factory=list)
    change: str = ""
    """What the probe did to make the task change (for the notes)."""
    deliveries: list[WebhookRequest] = field(default_factory=list)
    unusable: str | None = None
    """Why this interface could not be looked at (no task could be made...)."""
    configs: list[tuple[str, str]] = field(default_factory=list)
    """(task id, config id) of every config created, to delete."""
    open_tasks: list[str] = field(default_factory=list)
    """Tasks the trial made that may not have ended, to cancel once the configs are gone."""
    leftovers: list[str] = field(default_factory=list)


_TRIALS: WeakKeyDictionary[ProbeSession, list[_Trial]] = WeakKeyDictionary()


def config_id_in(payload: Any) -> str | None:
    """The config id in a create answer: 1.0 ``id``, 0.3 ``pushNotificationConfig.id`` or ``name``'s end."""
    if not isinstance(payload, dict):
        return None
    inner = payload.get("pushNotificationConfig")
    if isinstance(inner, dict) and isinstance(inner.get("id"), str) and inner["id"]:
        return str(inner["id"])
    name = payload.get("name")
    if isinstance(name, str) and "/pushNotificationConfigs/" in name:
        return name.rsplit("/", 1)[-1] or None
    config_id = payload.get("id")
    return config_id if isinstance(config_id, str) and config_id else None


def carries_token(request: WebhookRequest, token: str) -> bool:
    """Whether a delivery presents the config's token (the A2A header, or in Authorization)."""
    return request.headers.get(TOKEN_HEADER) == token or token in request.headers.get("authorization", "")


async def _trials(ctx: ProbeContext) -> list[_Trial]:
    """The run's push trials, made on first use; Skip when push cannot be looked at."""
    if not ctx.surface.push:
        raise Skip("the card does not offer push notifications (capabilities.pushNotifications)")
    listener = ctx.listener
    if not isinstance(listener, WebhookListener):
        raise Skip("no webhook listener is running for this run")
    known = _TRIALS.get(ctx.session)
    if known is None:
        trials = [
            _Trial(interface, listener.url(), secrets.token_urlsafe(24))
            for interface in first_of_each_binding(ctx.interfaces)
        ]
        try:
            for trial in trials:
                await _offer(ctx, trial)
            deadline = time.monotonic() + ctx.options.wait_s
            for trial in trials:
                if trial.configs:
                    trial.deliveries = await listener.wait_for(trial.webhook, deadline - time.monotonic())
                else:
                    trial.deliveries = listener.received(trial.webhook)
        finally:
            for trial in trials:
                await _clean_up(ctx, trial)
        _TRIALS[ctx.session] = known = trials
    usable = [trial for trial in known if trial.unusable is None]
    if not usable:
        raise Skip(
            "; ".join(f"{trial.interface.label}: {trial.unusable}" for trial in known) or "no interface"
        )
    return known


async def _offer(ctx: ProbeContext, trial: _Trial) -> None:
    """Create the config on a fresh task, then make the task change (see the module doc)."""
    interface = trial.interface
    try:
        # The shared task first, so that own_task never hands out the task changed here.
        await ctx.own_task(interface)
    except Skip as skipped:
        trial.unusable = str(skipped)
        return
    task = await ctx.new_task(interface)
    if task is None:  # new_task sends exactly one request: the last exchange says why
        sent = ctx.session.exchanges[-1]
        said = read_answer(interface, sent)
        trial.unusable = (
            f"could not create a fresh task ({_how(said.status, said.error_code)}{_message(sent)})"
        )
        return
    if task.state not in TERMINAL:
        trial.open_tasks.append(task.task_id)
    trial.create = await ctx.session.set_push_config(
        interface, task.task_id, trial.webhook, token=trial.token, identity=ctx.first
    )
    answer = read_answer(interface, trial.create)
    if not answer.served:
        trial.refusal = _how(answer.status, answer.error_code)
        return  # nothing to deliver
    trial.accepted = True
    rest_03 = (interface.version, interface.binding) == ("0.3", "http+json")
    trial.configs.append(
        (task.task_id, config_id_in(answer.payload) or (REST_03_CONFIG_ID if rest_03 else task.task_id))
    )
    if task.state in INTERRUPTED:
        trial.change = "a follow-up message"
        exchange = await ctx.session.send_message(
            interface, FOLLOW_UP_TEXT, identity=ctx.first, task_id=task.task_id, context_id=task.context_id
        )
    elif task.state not in TERMINAL:
        trial.change = "a cancel"
        exchange = await ctx.session.cancel_task(interface, task.task_id, identity=ctx.first)
    else:
        # The task ended before the config was set: nothing more will happen to it. A new
        # message that carries the webhook gets a notification when its own task changes.
        trial.change = "a new message carrying the webhook (the first task had already ended)"
        config_id = f"probe-{secrets.token_hex(6)}"
        exchange = await _send_with_push(ctx, interface, trial, config_id)
        carried = task_in(interface, read_answer(interface, exchange).payload)
        if carried is not None and isinstance(carried.get("id"), str):
            trial.configs.append((carried["id"], config_id))
            if _state(interface, carried) not in TERMINAL:
                trial.open_tasks.append(carried["id"])
    trial.changes.append(exchange)
    changed = task_in(interface, read_answer(interface, exchange).payload)
    if changed is not None and changed.get("id") == task.task_id and _state(interface, changed) in TERMINAL:
        trial.open_tasks = [open_id for open_id in trial.open_tasks if open_id != task.task_id]


def _state(interface: Interface, task: dict[str, Any]) -> str | None:
    status = task.get("status")
    return interface.state_name(status.get("state")) if isinstance(status, dict) else None


async def _send_with_push(ctx: ProbeContext, interface: Interface, trial: _Trial, config_id: str) -> Exchange:
    config = {"id": config_id, "url": trial.webhook, "token": trial.token}
    if interface.version == "1.0":
        configuration: dict[str, Any] = {"taskPushNotificationConfig": config}
    elif interface.jsonrpc:
        configuration = {"pushNotificationConfig": config}
    else:
        configuration = {"pushNotification": config}
    params = {"message": interface.message(FOLLOW_UP_TEXT), "configuration": configuration}
    if interface.jsonrpc:
        method = interface.method("SendMessage", "message/send")
        return await ctx.session.rpc(interface, method, params, identity=ctx.first)
    return await ctx.session.request(
        "POST",
        interface.rest_url("/message:send"),
        identity=ctx.first,
        headers=interface.headers,
        body=params,
        content_type=interface.content_type,
    )


async def _clean_up(ctx: ProbeContext, trial: _Trial) -> None:
    """Delete the trial's configs, then cancel its tasks (after a stop of the run no budget is left)."""
    while trial.configs:
        if ctx.session.stopped:
            trial.leftovers += [config_id for _, config_id in trial.configs]
            trial.configs.clear()
            return
        task_id, config_id = trial.configs.pop(0)
        exchange = await ctx.session.delete_push_config(
            trial.interface, task_id, config_id, identity=ctx.first
        )
        document = exchange.json()
        refused = isinstance(document, dict) and isinstance(document.get("error"), dict)
        if exchange.status is None or not 200 <= exchange.status < 300 or refused:
            trial.leftovers.append(config_id)
    while trial.open_tasks and not ctx.session.stopped:
        await ctx.session.cancel_task(trial.interface, trial.open_tasks.pop(0), identity=ctx.first)


def _message(exchange: Exchange) -> str:
    document = exchange.json()
    error = document.get("error") if isinstance(document, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f": {message[:120]}" if isinstance(message, str) and message else ""


def _how(status: int | None, code: int | None) -> str:
    if status is None:
        return "no answer"
    return f"HTTP {status}" + (f", JSON-RPC error {code}" if code is not None else "")


def _delivery_evidence(session: ProbeSession, request: WebhookRequest, webhook: str) -> Exchange:
    """A delivery shown as an exchange: what the agent sent to the probe's webhook."""
    return Exchange(
        request.method,
        webhook,
        {name: session.redact(value) for name, value in request.headers.items()},
        session.redact(request.text()[:4_000]),
        status=200,
        headers={"content-type": "application/json"},
        body="{}",
    )


def _leftover_note(run: CheckRun, trial: _Trial) -> None:
    if trial.leftovers:
        run.note(f"{trial.interface.label}: could not delete push config(s) {', '.join(trial.leftovers)}")


@check(
    "push.private-webhook",
    "push",
    "A push webhook on a loopback address is accepted",
    Severity.MEDIUM,
    remediation=(
        "Validate push notification URLs: refuse loopback, link-local and private addresses (after DNS "
        "resolution, and again at delivery), or allow only configured webhook hosts."
    ),
)
async def private_webhook(ctx: ProbeContext, run: CheckRun) -> None:
    """Creates a push notification config for one of the probe's own tasks (one interface per binding)
    whose webhook is the probe's listener on 127.0.0.1. A finding when the agent accepts it (or, when
    only a message carrying the webhook could be tried, calls it): the agent can be pointed at
    services only reachable from its own network."""
    for trial in await _trials(ctx):
        label = trial.interface.label
        if trial.unusable is not None:
            run.note(f"{label}: {trial.unusable}")
        elif trial.accepted and trial.create is not None:
            run.find(
                f"{label}: a push config with the webhook {trial.webhook} (a loopback address) was accepted.",
                evidence=[trial.create],
                interface=trial.interface,
            )
        elif trial.deliveries:
            run.find(
                f"{label}: a message carrying the webhook {trial.webhook} (a loopback address) was served "
                f"and the agent called it.",
                evidence=trial.changes[-1:],
                interface=trial.interface,
            )
        else:
            run.note(f"{label}: the loopback webhook was refused ({trial.refusal})")
        _leftover_note(run, trial)


@check(
    "push.ssrf",
    "push",
    "The agent sends push notifications to a loopback address (SSRF)",
    Severity.HIGH,
    remediation=(
        "Never deliver push notifications to loopback, link-local or private addresses: check the resolved "
        "address at delivery time (not only when the config is set) and do not follow redirects."
    ),
)
async def ssrf(ctx: ProbeContext, run: CheckRun) -> None:
    """After the push config of push.private-webhook is set, makes the task change state (a follow-up
    message, a cancel, or a new message carrying the webhook) and waits up to ``wait_s`` for the
    probe's loopback listener to be called. A finding when the agent sent it any request: it makes
    requests to addresses the client chooses, inside its own network."""
    for trial in await _trials(ctx):
        label = trial.interface.label
        if trial.unusable is not None:
            run.note(f"{label}: {trial.unusable}")
        elif trial.deliveries:
            first = trial.deliveries[0]
            evidence = [trial.create] if trial.create is not None and trial.accepted else []
            evidence += trial.changes[-1:]
            evidence.append(_delivery_evidence(ctx.session, first, trial.webhook))
            run.find(
                f"{label}: after {trial.change}, the agent sent {len(trial.deliveries)} request(s) to the "
                f"probe's loopback webhook (first: {first.method} {first.path}).",
                evidence=evidence,
                interface=trial.interface,
            )
        elif trial.accepted:
            run.note(
                f"{label}: config accepted, but no request reached the webhook within "
                f"{ctx.options.wait_s:g} s after {trial.change}"
            )
        else:
            run.note(f"{label}: the webhook was refused ({trial.refusal}), nothing was delivered")
        _leftover_note(run, trial)


@check(
    "push.webhook-unauthenticated",
    "push",
    "Push notifications do not carry the config's token",
    Severity.LOW,
    remediation=(
        "Send the token of the push notification config with every notification (the "
        "X-A2A-Notification-Token header, or the configured authentication) so receivers can verify it."
    ),
)
async def webhook_unauthenticated(ctx: ProbeContext, run: CheckRun) -> None:
    """Reads the notifications push.ssrf saw arrive: a finding when one lacks the token the probe put
    in the config (as ``X-A2A-Notification-Token`` or in ``Authorization``), so a receiver cannot tell
    the agent's notifications from forged ones. Skipped when no notification was delivered."""
    trials = [trial for trial in await _trials(ctx) if trial.deliveries]
    if not trials:
        raise Skip("no notification reached the probe's webhook, so none could be read")
    for trial in trials:
        notifications = [
            request for request in trial.deliveries if request.method == "POST"
        ] or trial.deliveries
        bare = [request for request in notifications if not carries_token(request, trial.token)]
        if bare:
            run.find(
                f"{trial.interface.label}: {len(bare)} of {len(notifications)} notification(s) came without "
                f"the config's token (no {TOKEN_HEADER} header, no Authorization holding it).",
                evidence=[_delivery_evidence(ctx.session, bare[0], trial.webhook)],
                interface=trial.interface,
            )
        else:
            run.note(f"{trial.interface.label}: every notification carried the config's token")


__all__ = ["carries_token", "config_id_in"]

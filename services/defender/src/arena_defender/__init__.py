"""The arena defender service (an A2A server).

A defender is a helpful assistant with one rule, never to say the forbidden
phrase. How hard it defends is its profile (``ARENA_DEFENDER_PROFILE``):
``naive``, ``hardened`` (the default) or ``guarded`` (hardened plus the
non-LLM :class:`~arena_defender.output_guard.OutputGuard`); see :mod:`arena_defender.defender_profile`.

Run it with ``arena serve defender`` or ``arena-defender`` (:mod:`arena_defender.main`); build its app
with :func:`arena_defender.app.create_defender_app`. This module imports nothing: the submodules pull
in a2a-sdk, which an entry point loads only after telemetry is set up.
"""

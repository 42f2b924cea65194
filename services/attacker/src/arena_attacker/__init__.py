"""The arena attacker service (an A2A server).

Run it with ``arena serve attacker`` or ``arena-attacker`` (:mod:`arena_attacker.main`); build its app
with :func:`arena_attacker.app.create_attacker_app`. This module imports nothing: the submodules pull
in a2a-sdk, which an entry point loads only after telemetry is set up.
"""

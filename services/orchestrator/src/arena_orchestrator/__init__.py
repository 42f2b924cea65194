"""A2A Arena orchestrator: campaigns, the match queue, workers, reports and the dashboard.

Run it with ``arena serve orchestrator`` or ``arena-orchestrator`` (:mod:`arena_orchestrator.main`);
build its app with :func:`arena_orchestrator.app.create_orchestrator_app`. This module imports
nothing: the submodules pull in a2a-sdk, which an entry point loads only after telemetry is set up.
"""

"""Protocol security probes: checks of an A2A agent's protocol surface (``arena probe``).

:mod:`~arena_core.probes.wire` speaks raw A2A within the run's bounds,
:mod:`~arena_core.probes.surface` reads the card, :mod:`~arena_core.probes.base` defines a
check, :mod:`~arena_core.probes.checks` holds them by category,
:mod:`~arena_core.probes.runner` runs them and :mod:`~arena_core.probes.reports` writes the
report (console, JSON, HTML, JUnit, SARIF). docs/probes.md describes every check.
"""

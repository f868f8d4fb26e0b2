"""The clusters the bot answers for: where each triage reads from (dump, live API, watch cache),
the fleet of named clusters, and DCGM telemetry from Prometheus."""

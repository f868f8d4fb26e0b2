"""DCGM telemetry, pure: ``series`` reads the exporter's series (as the Prometheus HTTP API
returns them) into per-GPU facts; ``telemetry`` adds those facts to a Verdict."""

from triage.dcgm.series import (
    ECC,
    FAMILIES,
    MEMORY_FREE,
    MEMORY_USED,
    TEMPERATURE,
    UTILISATION,
    XID,
    DcgmLabels,
    Family,
    GpuFacts,
    Telemetry,
    TelemetryError,
    idle_holders,
    idle_query,
    parse_result,
    promql,
    read_families,
)
from triage.dcgm.telemetry import (
    holder_evidence,
    with_telemetry,
    without_telemetry,
)

__all__ = [
    "ECC",
    "FAMILIES",
    "MEMORY_FREE",
    "MEMORY_USED",
    "TEMPERATURE",
    "UTILISATION",
    "XID",
    "DcgmLabels",
    "Family",
    "GpuFacts",
    "Telemetry",
    "TelemetryError",
    "holder_evidence",
    "idle_holders",
    "idle_query",
    "parse_result",
    "promql",
    "read_families",
    "with_telemetry",
    "without_telemetry",
]

"""The collector and Jaeger configs are wired: pipelines name defined components, ports line up.

This checks structure only; neither binary runs here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

OBSERVABILITY = Path(__file__).resolve().parents[2] / "observability"
COLLECTOR = OBSERVABILITY / "otel-collector.yaml"
JAEGER = OBSERVABILITY / "jaeger.yaml"


def _load(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _type(component_id: str) -> str:
    """``otlp/jaeger`` -> ``otlp``: a component id is ``type[/name]``."""
    return component_id.partition("/")[0]


def _port(endpoint: str) -> int:
    return int(endpoint.rpartition(":")[2])


@pytest.mark.parametrize("path", [COLLECTOR, JAEGER], ids=["collector", "jaeger"])
def test_every_pipeline_component_is_defined(path: Path) -> None:
    config = _load(path)
    service = config["service"]
    assert service["pipelines"]
    for name, pipeline in service["pipelines"].items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in (config.get(kind) or {}), (
                    f"{path.name}: {name} uses undefined {component}"
                )
        assert pipeline["receivers"], name
        assert pipeline["exporters"], name
    for extension in service.get("extensions", []):
        assert extension in config["extensions"], f"{path.name}: undefined extension {extension}"


@pytest.mark.parametrize("path", [COLLECTOR, JAEGER], ids=["collector", "jaeger"])
def test_every_defined_component_is_used(path: Path) -> None:
    # The collector rejects nothing unused, but an unused component is a wiring mistake.
    config = _load(path)
    service = config["service"]
    for kind in ("receivers", "processors", "exporters"):
        used = {c for pipeline in service["pipelines"].values() for c in pipeline.get(kind, [])}
        assert set(config.get(kind) or {}) == used, f"{path.name}: {kind}"
    assert set(config.get("extensions") or {}) == set(service.get("extensions", []))


@pytest.mark.parametrize("path", [COLLECTOR, JAEGER], ids=["collector", "jaeger"])
def test_otlp_listens_on_4317_and_4318_on_every_interface(path: Path) -> None:
    protocols = _load(path)["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert protocols["http"]["endpoint"] == "0.0.0.0:4318"


def test_the_collector_sends_traces_to_jaeger_4317() -> None:
    config = _load(COLLECTOR)
    traces = config["service"]["pipelines"]["traces"]
    to_jaeger = [
        exporter
        for exporter in traces["exporters"]
        if _type(exporter) in ("otlp", "otlp_grpc")
        and config["exporters"][exporter]["endpoint"] == "jaeger:4317"
    ]
    assert len(to_jaeger) == 1
    assert config["exporters"][to_jaeger[0]]["tls"]["insecure"] is True


def test_the_collector_exports_metrics_somewhere() -> None:
    config = _load(COLLECTOR)
    exporters = config["service"]["pipelines"]["metrics"]["exporters"]
    assert {_type(exporter) for exporter in exporters} & {"debug", "prometheus"}
    for exporter in exporters:
        if _type(exporter) == "prometheus":
            assert _port(config["exporters"][exporter]["endpoint"]) == 8889


def test_the_collector_limits_memory_first_and_batches_last() -> None:
    config = _load(COLLECTOR)
    for name in ("traces", "metrics"):
        processors = config["service"]["pipelines"][name]["processors"]
        assert processors[0] == "memory_limiter", name
        assert processors[-1] == "batch", name
    assert 0 < config["processors"]["memory_limiter"]["limit_percentage"] <= 100


def test_the_collector_has_a_health_check() -> None:
    config = _load(COLLECTOR)
    assert "health_check" in config["service"]["extensions"]
    assert config["extensions"]["health_check"]["endpoint"] == "0.0.0.0:13133"


def test_jaeger_stores_in_memory_and_serves_the_ui_on_16686() -> None:
    config = _load(JAEGER)
    extensions = config["extensions"]
    backends = extensions["jaeger_storage"]["backends"]
    query = extensions["jaeger_query"]
    store = query["storage"]["traces"]
    assert backends[store]["memory"]["max_traces"] > 0
    assert config["exporters"]["jaeger_storage_exporter"]["trace_storage"] == store
    assert query["http"]["endpoint"] == "0.0.0.0:16686"
    assert extensions["healthcheckv2"]["use_v2"] is True
    assert _port(extensions["healthcheckv2"]["http"]["endpoint"]) == 13133
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["exporters"] == ["jaeger_storage_exporter"]
    assert pipeline["processors"] == ["batch"]


def test_the_readme_names_every_file_and_variable() -> None:
    readme = (OBSERVABILITY / "README.md").read_text(encoding="utf-8")
    for name in ("attributes.yaml", "otel-collector.yaml", "jaeger.yaml", "ARENA_JAEGER_URL"):
        assert name in readme
    for variable in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
        "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG",
        "OTEL_METRIC_EXPORT_INTERVAL",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED",
    ):
        assert f"`{variable}`" in readme, variable

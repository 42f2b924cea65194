"""The Helm chart in deploy/k8s: lint, schema validation and what the manifests encode.

No cluster is needed: ``helm lint --strict``, ``helm template`` and
``kubernetes-validate --strict`` (offline, bundled schemas) from the ``tools_bin`` folder,
then structural checks on the rendered YAML: probes, security contexts, resources,
autoscalers, disruption budgets, the NetworkPolicy flows, secrets kept out of the
ConfigMap, target tokens reaching the attacker only, the API token (auth, on by default)
reaching exactly the orchestrator, the attacker and the defenders, an external Redis, and
every ``ARENA_*`` setting wired from values to pods.

``helm template`` sees no cluster, so the chart's auth Secret gets a new random token on
every render: tests compare renders without it, or with ``auth.existingSecret``.
"""

from __future__ import annotations

import base64
import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from arena_core.api_token_entries import parse_tokens
from arena_orchestrator.spec_loader import load_campaign_spec
from support.env_example import REPO, example_settings, secret_settings

CHART = REPO / "deploy" / "k8s"
SCALED = CHART / "values-scaled.yaml"
RELEASE = "arena"

# 1.30: the oldest the chart declares (Chart.yaml kubeVersion); 1.35: the oldest minor still
# supported upstream, and the version of the pinned helm and kubectl clients; 1.37: the newest
# release, the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.30.0", "1.35.0", "1.37.0")

ARENA = ("orchestrator", "attacker", "defender", "defender-naive", "model")
AGENTS = ("attacker", "defender", "defender-naive")
DEFENDERS = ("defender", "defender-naive")
REDIS_CLIENTS = ("orchestrator", "attacker", "defender", "defender-naive")
PORTS = {"orchestrator": 8080, "attacker": 8082, "defender": 8081, "defender-naive": 8081, "model": 8090}
COMMANDS = {
    "orchestrator": "arena-orchestrator",
    "attacker": "arena-attacker",
    "defender": "arena-defender",
    "defender-naive": "arena-defender",
    "model": "arena-model",
}
IMAGES = {
    "orchestrator": "a2a-arena/orchestrator:0.1.0",
    "attacker": "a2a-arena/attacker:0.1.0",
    "defender": "a2a-arena/defender:0.1.0",
    "defender-naive": "a2a-arena/defender:0.1.0",
    "model": "a2a-arena/model:0.1.0",
}
# Who loads the shared Secret (model keys, a Redis URL with a password) with envFrom; the
# orchestrator gets only its ARENA_REDIS_URL key; only the attacker holds target tokens.
LOADS_SHARED_SECRET = AGENTS
LOADS_TARGET_TOKENS = ("attacker",)
TARGET_TOKEN_PREFIX = "ARENA_TARGET_TOKEN_"
# Authentication: the chart's own Secret, who references it, and with which variables.
AUTH_SECRET = f"{RELEASE}-auth"
STACK_TARGET_TOKEN = "ARENA_TARGET_TOKEN_ARENA"
AUTH_ENV = {
    "orchestrator": {"ARENA_API_TOKENS"},
    "attacker": {"ARENA_API_TOKENS", STACK_TARGET_TOKEN},
    "defender": {"ARENA_API_TOKENS"},
    "defender-naive": {"ARENA_API_TOKENS"},
}
IPV4_METADATA = "169.254.169.254/32"
IPV6_METADATA = "fd00:ec2::254/128"
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
ANY = "any"
EXTERNAL = "external"
DNS = "dns"

Doc = dict[str, Any]
Flow = tuple[str, str, int | None]  # (source, destination, TCP port; None: every port)


# --- running the tools ------------------------------------------------------------------


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)


def _helm_template(tools_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run([str(tools_bin / "helm"), "template", RELEASE, str(CHART), *args])


def render_text(tools_bin: Path, *args: str) -> str:
    done = _helm_template(tools_bin, *args)
    assert done.returncode == 0, f"helm template {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def render(tools_bin: Path, *args: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(render_text(tools_bin, *args)) if doc]


def values_file(tmp_path: Path, values: dict[str, Any]) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return str(path)


# --- reading the manifests ---------------------------------------------------------------


def of_kind(docs: Iterable[Doc], kind: str) -> list[Doc]:
    return [doc for doc in docs if doc["kind"] == kind]


def component(doc: Doc) -> str:
    return str(doc["metadata"]["labels"]["app.kubernetes.io/component"])


def component_or_none(doc: Doc) -> str | None:
    return (doc["metadata"].get("labels") or {}).get("app.kubernetes.io/component")


def by_component(docs: Iterable[Doc], kind: str) -> dict[str, Doc]:
    """One object of ``kind`` per component (headless Services left out)."""
    found: dict[str, Doc] = {}
    for doc in of_kind(docs, kind):
        if kind == "Service" and doc["spec"].get("clusterIP") == "None":
            continue
        name = component(doc)
        assert name not in found, f"two {kind}s for {name}"
        found[name] = doc
    return found


def the_configmap(docs: Iterable[Doc]) -> Doc:
    (configmap,) = [d for d in of_kind(docs, "ConfigMap") if d["metadata"]["name"] == f"{RELEASE}-config"]
    return configmap


def config_data(docs: Iterable[Doc]) -> dict[str, str]:
    return dict(the_configmap(docs).get("data") or {})


def containers(workload: Doc) -> list[Doc]:
    return list(workload["spec"]["template"]["spec"]["containers"])


def the_container(workload: Doc) -> Doc:
    (container,) = containers(workload)
    return container


def env_of(workload: Doc) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in the_container(workload).get("env") or []}


def env_from(workload: Doc) -> list[Doc]:
    return list(the_container(workload).get("envFrom") or [])


def env_from_secrets(workload: Doc) -> list[str]:
    """Names of the Secrets a workload loads whole (envFrom), in order."""
    return [source["secretRef"]["name"] for source in env_from(workload) if "secretRef" in source]


def secrets_referenced(node: Any) -> set[str]:
    """Every Secret name a pod spec (or any part of it) references, however: envFrom,
    env valueFrom, secret and projected volumes (image pull secrets are not Secrets of ours)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("secretRef", "secretKeyRef") and isinstance(value, dict):
                found.add(str(value["name"]))
            elif key == "secret" and isinstance(value, dict):
                found.add(str(value.get("secretName") or value.get("name")))
            elif key != "imagePullSecrets":
                found |= secrets_referenced(value)
    elif isinstance(node, list):
        for item in node:
            found |= secrets_referenced(item)
    return found


def pod_secrets(workload: Doc) -> set[str]:
    return secrets_referenced(workload["spec"]["template"]["spec"])


def env_refs(workload: Doc, secret: str) -> dict[str, Doc]:
    """The container variables read from ``secret`` by secretKeyRef: name -> the reference."""
    found = {}
    for item in the_container(workload).get("env") or []:
        ref = (item.get("valueFrom") or {}).get("secretKeyRef")
        if ref and ref["name"] == secret:
            found[item["name"]] = ref
    return found


def without_auth(secrets: Iterable[Doc]) -> list[Doc]:
    """Secrets other than the chart's auth Secret (its token is random on every render)."""
    return [doc for doc in secrets if doc["metadata"]["name"] != AUTH_SECRET]


def secret_data(secret: Doc) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}


def chart_values() -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _peer_names(peers: list[Doc] | None, *, what: str) -> list[str]:
    """A rule's peers as component names, ``external`` for ipBlocks, ``any`` when omitted."""
    if not peers:
        return [ANY]
    names = []
    for peer in peers:
        if "ipBlock" in peer:
            names.append(EXTERNAL)
            continue
        assert set(peer) == {"podSelector"}, f"{what}: unexpected peer {peer}"
        labels = peer["podSelector"]["matchLabels"]
        assert labels["app.kubernetes.io/instance"] == RELEASE, f"{what}: peer outside the release {peer}"
        assert labels["app.kubernetes.io/name"] == "arena", f"{what}: {peer}"
        names.append(labels["app.kubernetes.io/component"])
    return names


def _ports(rule: Doc) -> list[tuple[str, int | None]]:
    if not rule.get("ports"):
        return [("any", None)]
    return [(port.get("protocol", "TCP"), port.get("port")) for port in rule["ports"]]


def ingress_flows(docs: Iterable[Doc]) -> set[Flow]:
    """(source, destination, TCP port) for every ingress rule of every NetworkPolicy."""
    flows = set()
    for policy in of_kind(docs, "NetworkPolicy"):
        dest = component(policy)
        for rule in policy["spec"].get("ingress") or []:
            for source in _peer_names(rule.get("from"), what=f"{dest} ingress"):
                for protocol, port in _ports(rule):
                    assert protocol == "TCP", f"{dest} ingress: {protocol}"
                    flows.add((source, dest, port))
    return flows


def egress_flows(docs: Iterable[Doc]) -> set[Flow]:
    """(source, destination, TCP port) per egress rule; DNS (53 UDP+TCP to anywhere) as ``dns``."""
    flows = set()
    for policy in of_kind(docs, "NetworkPolicy"):
        source = component(policy)
        for rule in policy["spec"].get("egress") or []:
            ports = _ports(rule)
            if sorted(ports) == [("TCP", 53), ("UDP", 53)]:
                assert not rule.get("to"), f"{source}: DNS restricted unexpectedly: {rule}"
                flows.add((source, DNS, 53))
                continue
            for dest in _peer_names(rule.get("to"), what=f"{source} egress"):
                for protocol, port in ports:
                    assert protocol in ("TCP", "any"), f"{source} egress: {protocol}"
                    flows.add((source, dest, port))
    return flows


def expected_flows(*, jaeger: bool, defenders_external: bool = False) -> tuple[set[Flow], set[Flow]]:
    """The arena's flows (ingress, egress) with the default networkPolicy values.

    Only the attacker gets external egress, unless ``defenders_external`` (a hosted model).
    """
    ingress = {(ANY, "orchestrator", 8080), ("orchestrator", "attacker", 8082)}
    ingress |= {("attacker", defender, 8081) for defender in DEFENDERS}
    ingress |= {(client, "model", 8090) for client in AGENTS}
    ingress |= {(client, "redis", 6379) for client in REDIS_CLIENTS}
    egress = {(name, DNS, 53) for name in (*ARENA, "redis")}
    egress |= {("orchestrator", "attacker", 8082)}
    egress |= {("attacker", defender, 8081) for defender in DEFENDERS} | {("attacker", "model", 8090)}
    egress |= {(defender, "model", 8090) for defender in DEFENDERS}
    egress |= {(client, "redis", 6379) for client in REDIS_CLIENTS}
    egress |= {("attacker", EXTERNAL, None)}
    if defenders_external:
        egress |= {(defender, EXTERNAL, None) for defender in DEFENDERS}
    if jaeger:
        ingress |= {(ANY, "jaeger", 16686)}
        ingress |= {(name, "jaeger", port) for name in ARENA for port in (4317, 4318)}
        egress |= {(name, "jaeger", port) for name in ARENA for port in (4317, 4318)}
        egress |= {("attacker", "jaeger", 16686)}  # the trace query API, to judge actions
        egress |= {("jaeger", DNS, 53)}
    return ingress, egress


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def default_docs(tools_bin: Path) -> list[Doc]:
    return render(tools_bin)


@pytest.fixture(scope="module")
def scaled_docs(tools_bin: Path) -> list[Doc]:
    return render(tools_bin, "-f", str(SCALED))


@pytest.fixture(params=["default", "scaled"])
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    return list(request.getfixturevalue(f"{request.param}_docs"))


# --- lint and schema validation ------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["-f", str(SCALED)]], ids=["default", "scaled"])
def test_helm_lint_strict_passes(tools_bin: Path, extra: list[str]) -> None:
    done = _run([str(tools_bin / "helm"), "lint", "--strict", str(CHART), *extra])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout, done.stdout


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("extra", [[], ["-f", str(SCALED)]], ids=["default", "scaled"])
def test_rendered_manifests_pass_strict_schema_validation(
    tools_bin: Path, tmp_path: Path, extra: list[str], version: str
) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(render_text(tools_bin, "--kube-version", version, *extra), encoding="utf-8")
    done = _run([str(tools_bin / "kubernetes-validate"), "--strict", "-k", version, str(manifest)])
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines, "kubernetes-validate printed nothing"
    problems = [line for line in lines if not (line.startswith("INFO ") and " passed " in line)]
    assert not problems, output
    assert len(lines) == len([d for d in yaml.safe_load_all(manifest.read_text(encoding="utf-8")) if d])


# --- workloads --------------------------------------------------------------------------------


def _workloads(docs: Iterable[Doc]) -> Iterator[Doc]:
    for kind in WORKLOAD_KINDS:
        yield from of_kind(docs, kind)


def test_every_container_has_probes_resources_and_runs_locked_down(docs: list[Doc]) -> None:
    workloads = list(_workloads(docs))
    assert workloads
    for workload in workloads:
        name = workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["enableServiceLinks"] is False, name
        pod_security = pod.get("securityContext") or {}
        assert pod_security.get("seccompProfile") == {"type": "RuntimeDefault"}, name
        for container in containers(workload):
            where = f"{name}/{container['name']}"
            assert container.get("livenessProbe"), f"{where}: no liveness probe"
            assert container.get("readinessProbe"), f"{where}: no readiness probe"
            security = {**pod_security, **(container.get("securityContext") or {})}
            assert security.get("runAsNonRoot") is True, where
            assert security.get("runAsUser", 0) != 0, where
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("readOnlyRootFilesystem") is True, where
            assert security.get("capabilities", {}).get("drop") == ["ALL"], where
            assert security.get("privileged") is not True, where
            resources = container.get("resources") or {}
            assert {"cpu", "memory"} <= set(resources.get("requests", {})), f"{where}: {resources}"
            assert "memory" in resources.get("limits", {}), f"{where}: {resources}"
            mounts = {mount["mountPath"] for mount in container.get("volumeMounts") or []}
            assert "/tmp" in mounts, f"{where}: no writable /tmp"


def test_arena_services_probe_healthz_and_readyz(docs: list[Doc]) -> None:
    deployments = by_component(docs, "Deployment")
    for name in ARENA:
        container = the_container(deployments[name])
        assert container["ports"] == [{"name": "http", "containerPort": PORTS[name], "protocol": "TCP"}]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, name
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}, name
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, name
        assert container["command"] == [COMMANDS[name]], name
        assert container["args"][:4] == ["--host", "0.0.0.0", "--port", str(PORTS[name])], name
        assert container["image"] == IMAGES[name], name
        security = deployments[name]["spec"]["template"]["spec"]["securityContext"]
        assert security["runAsUser"] == 10001, name
    # The model loads before it listens: a generous start-up budget (at least five minutes).
    startup = the_container(deployments["model"])["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300


def test_redis_is_a_statefulset_with_a_volume_and_its_own_probes(default_docs: list[Doc]) -> None:
    (redis,) = of_kind(default_docs, "StatefulSet")
    container = the_container(redis)
    assert re.fullmatch(r"redis:7\.4\.\d+", container["image"]), container["image"]
    assert container["args"][:2] == ["--appendonly", "yes"]
    assert "tcpSocket" in container["livenessProbe"]
    assert "redis-cli" in " ".join(container["readinessProbe"]["exec"]["command"])
    assert redis["spec"]["serviceName"] == f"{RELEASE}-redis-headless"
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]


def test_jaeger_runs_the_observability_config_with_its_own_probes(scaled_docs: list[Doc]) -> None:
    jaeger = by_component(scaled_docs, "Deployment")["jaeger"]
    container = the_container(jaeger)
    assert re.fullmatch(r"jaegertracing/jaeger:2\.\d+\.\d+", container["image"]), container["image"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/status", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/status", "port": "health"}
    # The chart carries a copy of observability/jaeger.yaml (Helm cannot read outside the chart).
    (config,) = [doc for doc in of_kind(scaled_docs, "ConfigMap") if component_or_none(doc) == "jaeger"]
    original = (REPO / "observability" / "jaeger.yaml").read_text(encoding="utf-8")
    assert config["data"]["config.yaml"] == original, "deploy/k8s/files/jaeger.yaml drifted"
    service = by_component(scaled_docs, "Service")["jaeger"]
    ports = {port["name"]: port["port"] for port in service["spec"]["ports"]}
    assert ports == {"otlp-grpc": 4317, "otlp-http": 4318, "ui": 16686}


def test_deployments_roll_on_config_changes_and_give_matches_time_to_finish(docs: list[Doc]) -> None:
    deployments = by_component(docs, "Deployment")
    checksums = set()
    for name in ARENA:
        annotations = deployments[name]["spec"]["template"]["metadata"]["annotations"]
        assert re.fullmatch(r"[0-9a-f]{64}", annotations["checksum/config"]), name
        checksums.add(annotations["checksum/config"])
    assert len(checksums) == 1
    for name in ("orchestrator", "attacker"):
        assert deployments[name]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 60, name


def test_config_change_changes_the_checksum(tools_bin: Path, default_docs: list[Doc]) -> None:
    changed = render(tools_bin, "--set", "config.ARENA_LOG_LEVEL=debug")

    def checksum(docs: list[Doc]) -> str:
        template = by_component(docs, "Deployment")["defender"]["spec"]["template"]
        return str(template["metadata"]["annotations"]["checksum/config"])

    assert checksum(changed) != checksum(default_docs)


def test_services_and_labels(docs: list[Doc]) -> None:
    services = by_component(docs, "Service")
    for name in ARENA:
        service = services[name]
        assert service["metadata"]["name"] == f"{RELEASE}-{name}"
        assert service["spec"]["type"] == "ClusterIP"
        assert service["spec"]["ports"][0]["port"] == PORTS[name]
    assert services["redis"]["metadata"]["name"] == f"{RELEASE}-redis"
    for doc in docs:
        labels = doc["metadata"]["labels"]
        for key in (
            "app.kubernetes.io/name",
            "app.kubernetes.io/instance",
            "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by",
            "helm.sh/chart",
        ):
            assert key in labels, f"{doc['kind']}/{doc['metadata']['name']}: no {key}"
        if doc["kind"] in (*WORKLOAD_KINDS, "Service", "NetworkPolicy", "HorizontalPodAutoscaler"):
            assert "app.kubernetes.io/component" in labels, doc["metadata"]["name"]


def test_orchestrator_service_type_is_configurable(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "orchestrator.service.type=LoadBalancer")
    assert by_component(docs, "Service")["orchestrator"]["spec"]["type"] == "LoadBalancer"


# --- scaling and disruption ---------------------------------------------------------------------


def test_defender_and_attacker_autoscale_on_cpu(docs: list[Doc]) -> None:
    hpas = by_component(docs, "HorizontalPodAutoscaler")
    assert set(hpas) == {"defender", "attacker"}
    deployments = by_component(docs, "Deployment")
    for name, hpa in hpas.items():
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": f"{RELEASE}-{name}",
        }
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
        (metric,) = hpa["spec"]["metrics"]
        assert metric["resource"]["name"] == "cpu"
        assert metric["resource"]["target"]["type"] == "Utilization"
        # The HPA owns the replica count.
        assert "replicas" not in deployments[name]["spec"], name
    for name in ("orchestrator", "defender-naive", "model"):
        assert deployments[name]["spec"]["replicas"] >= 1, name


def test_scaled_overlay_scales_out(scaled_docs: list[Doc]) -> None:
    hpas = by_component(scaled_docs, "HorizontalPodAutoscaler")
    assert (hpas["defender"]["spec"]["minReplicas"], hpas["defender"]["spec"]["maxReplicas"]) == (6, 12)
    assert hpas["attacker"]["spec"]["minReplicas"] >= 4
    deployments = by_component(scaled_docs, "Deployment")
    assert deployments["orchestrator"]["spec"]["replicas"] == 3
    assert deployments["model"]["spec"]["replicas"] == 2
    assert "jaeger" in deployments


def test_autoscaling_off_sets_replicas(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "defender.autoscaling.enabled=false", "--set", "defender.replicas=3")
    assert "defender" not in by_component(docs, "HorizontalPodAutoscaler")
    assert by_component(docs, "Deployment")["defender"]["spec"]["replicas"] == 3


def _min_replicas(docs: list[Doc], name: str) -> int:
    hpa = by_component(docs, "HorizontalPodAutoscaler").get(name)
    if hpa is not None:
        return int(hpa["spec"]["minReplicas"])
    return int(by_component(docs, "Deployment")[name]["spec"]["replicas"])


def test_disruption_budgets_never_block_every_eviction(docs: list[Doc]) -> None:
    pdbs = by_component(docs, "PodDisruptionBudget")
    assert pdbs, "no PodDisruptionBudget"
    assert set(pdbs) <= {"orchestrator", "attacker", "defender"}
    for name in ("orchestrator", "attacker", "defender"):
        replicas = _min_replicas(docs, name)
        if replicas <= 1:
            assert name not in pdbs, f"{name}: a budget over a single replica blocks every eviction"
            continue
        spec = pdbs[name]["spec"]
        assert pdbs[name]["apiVersion"] == "policy/v1"
        assert spec["selector"]["matchLabels"]["app.kubernetes.io/component"] == name
        if "maxUnavailable" in spec:
            assert int(spec["maxUnavailable"]) >= 1, name
        else:
            assert int(spec["minAvailable"]) < replicas, name


def test_scaled_overlay_has_all_three_budgets(scaled_docs: list[Doc]) -> None:
    assert set(by_component(scaled_docs, "PodDisruptionBudget")) == {"orchestrator", "attacker", "defender"}


# --- network policies ----------------------------------------------------------------------------


def test_network_policies_encode_exactly_the_arena_flows(docs: list[Doc]) -> None:
    policies = by_component(docs, "NetworkPolicy")
    workloads = {component(w) for w in _workloads(docs)}
    assert set(policies) == workloads, "every workload has its own policy"
    for name, policy in policies.items():
        assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"], name
        assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == name
    jaeger = "jaeger" in workloads
    expected_in, expected_out = expected_flows(jaeger=jaeger)
    assert ingress_flows(docs) == expected_in
    assert egress_flows(docs) == expected_out


def test_redis_and_model_ingress_are_exactly_their_clients(default_docs: list[Doc]) -> None:
    flows = ingress_flows(default_docs)
    assert {source for source, dest, _ in flows if dest == "redis"} == set(REDIS_CLIENTS)
    assert {source for source, dest, _ in flows if dest == "model"} == set(AGENTS)
    assert {port for _, dest, port in flows if dest == "redis"} == {6379}
    assert {port for _, dest, port in flows if dest == "model"} == {8090}


def test_model_redis_and_jaeger_have_no_external_egress(docs: list[Doc]) -> None:
    for source, dest, _ in egress_flows(docs):
        if source in ("model", "redis", "jaeger"):
            assert dest not in (EXTERNAL, ANY), (source, dest)


def _ip_blocks(policy: Doc) -> list[Doc]:
    peers = [peer for rule in policy["spec"].get("egress") or [] for peer in rule.get("to", [])]
    return [peer["ipBlock"] for peer in peers if "ipBlock" in peer]


def test_external_egress_blocks_the_metadata_endpoints(docs: list[Doc]) -> None:
    attacker = by_component(docs, "NetworkPolicy")["attacker"]
    blocks = _ip_blocks(attacker)
    assert {"cidr": "0.0.0.0/0", "except": [IPV4_METADATA]} in blocks
    assert {"cidr": "::/0", "except": [IPV6_METADATA]} in blocks
    for policy in of_kind(docs, "NetworkPolicy"):
        for block in _ip_blocks(policy):
            if ":" in block["cidr"]:
                assert IPV6_METADATA in block.get("except", []), (component(policy), block)
            else:
                assert IPV4_METADATA in block.get("except", []), (component(policy), block)


def _external_egress(docs: list[Doc]) -> set[str]:
    """The components with egress to external ipBlocks (or anywhere)."""
    return {source for source, dest, _ in egress_flows(docs) if dest in (EXTERNAL, ANY)}


def test_defenders_on_the_embedded_model_get_no_external_egress(docs: list[Doc]) -> None:
    assert _external_egress(docs) == {"attacker"}


@pytest.mark.parametrize(
    "args",
    [
        ["--set", "config.ARENA_MODEL=gemini:gemini-2.5-flash"],
        ["--set", "config.ARENA_DEFENDER_MODEL=gemini:gemini-2.0-flash-lite"],
        ["--set", "config.ARENA_MODEL=gemini:gemini-2.5-flash", "--set", "model.enabled=false"],
    ],
    ids=["ARENA_MODEL", "ARENA_DEFENDER_MODEL", "no-embedded-model"],
)
def test_defenders_on_a_hosted_model_get_external_egress(tools_bin: Path, args: list[str]) -> None:
    docs = render(tools_bin, *args)
    assert _external_egress(docs) == {"attacker", *DEFENDERS}
    if "model.enabled=false" not in args:
        _, expected_out = expected_flows(jaeger=False, defenders_external=True)
        assert egress_flows(docs) == expected_out
    for defender in DEFENDERS:
        blocks = _ip_blocks(by_component(docs, "NetworkPolicy")[defender])
        assert {"cidr": "0.0.0.0/0", "except": [IPV4_METADATA]} in blocks, defender


def test_only_the_attacker_model_keeps_defenders_in_the_cluster(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "config.ARENA_ATTACKER_MODEL=gemini:gemini-2.5-flash")
    assert _external_egress(docs) == {"attacker"}


def test_a_defender_with_its_own_hosted_model_alone_gets_external_egress(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "defenderNaive.env.ARENA_DEFENDER_MODEL=gemini:gemini-2.0-flash-lite")
    assert _external_egress(docs) == {"attacker", "defender-naive"}


def test_hosted_defenders_follow_allow_external(tools_bin: Path) -> None:
    docs = render(
        tools_bin,
        "--set",
        "config.ARENA_MODEL=gemini:gemini-2.5-flash",
        "--set",
        "networkPolicy.egress.allowExternal=false",
    )
    assert _external_egress(docs) == set()


def test_defenders_external_egress_can_be_asked_for_explicitly(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "networkPolicy.egress.defendersAllowExternal=true")
    assert _external_egress(docs) == {"attacker", *DEFENDERS}
    docs = render(
        tools_bin,
        "--set",
        "networkPolicy.egress.defendersAllowExternal=true",
        "--set",
        "networkPolicy.egress.allowExternal=false",
    )
    assert _external_egress(docs) == set(DEFENDERS)


def test_agents_reachable_from_anywhere_only_when_asked(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "networkPolicy.ingress.exposeAgents=true")
    flows = ingress_flows(docs)
    for agent in AGENTS:
        assert (ANY, agent, PORTS[agent]) in flows, agent
    assert (ANY, "model", 8090) not in flows
    assert (ANY, "redis", 6379) not in flows


def test_external_egress_can_be_turned_off(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "networkPolicy.egress.allowExternal=false")
    assert not [flow for flow in egress_flows(docs) if flow[1] in (EXTERNAL, ANY)]
    _, expected_out = expected_flows(jaeger=False)
    assert egress_flows(docs) == {flow for flow in expected_out if flow[1] != EXTERNAL}


def test_network_policies_can_be_disabled(tools_bin: Path) -> None:
    assert not of_kind(render(tools_bin, "--set", "networkPolicy.enabled=false"), "NetworkPolicy")


# --- configuration and secrets ----------------------------------------------------------------


def test_values_config_keys_are_the_env_example_settings() -> None:
    example = example_settings()
    assert "ARENA_REDIS_URL" in example and "ARENA_PUBLIC_URL" in example
    config = chart_values()["config"]
    # The authentication secrets are documented there too, but come from the auth Secret.
    assert secret_settings() <= set(example)
    assert set(config) == set(example) - {"ARENA_PUBLIC_URL"} - secret_settings()
    for key, value in config.items():
        assert isinstance(value, str), f"{key}: quote it, numbers from values files render badly"
        assert value == example[key], f"{key}: {value!r} != {example[key]!r} in .env.example"


def test_configmap_skips_empty_values_and_computes_the_wiring(default_docs: list[Doc]) -> None:
    data = config_data(default_docs)
    assert all(value != "" for value in data.values())
    assert "ARENA_MODEL" not in data and "ARENA_DEFENDER_SYSTEM_PROMPT" not in data
    assert data["ARENA_REDIS_URL"] == f"redis://{RELEASE}-redis:6379/0"
    assert data["ARENA_EMBEDDED_MODEL_URL"] == f"http://{RELEASE}-model:8090/v1"
    assert "ARENA_MODEL_BASE_URL" not in data
    assert data["ARENA_DEFENDER_URL"] == f"http://{RELEASE}-defender:8081"
    assert data["ARENA_ATTACKER_URL"] == f"http://{RELEASE}-attacker:8082"
    # The release's own token (ARENA_TARGET_TOKEN_ARENA) may go to its own defenders only.
    assert data["ARENA_TARGET_CREDENTIAL_ORIGINS"] == (
        f"ARENA=http://{RELEASE}-defender:8081 http://{RELEASE}-defender-naive:8081"
    )
    assert data["ARENA_DEFENDER_PHRASE"] == "I Give Up"
    assert data["ARENA_CAMPAIGN_TTL_S"] == "2592000"
    assert not [key for key in data if key.startswith("OTEL_")], "nothing is exported by default"
    deployments = by_component(default_docs, "Deployment")
    for name in AGENTS:
        assert env_of(deployments[name])["ARENA_PUBLIC_URL"] == f"http://{RELEASE}-{name}:{PORTS[name]}"
    assert env_of(deployments["defender-naive"])["ARENA_DEFENDER_PROFILE"] == "naive"
    assert "ARENA_PUBLIC_URL" not in data


def test_hosted_model_skips_the_embedded_model_url(tools_bin: Path) -> None:
    docs = render(
        tools_bin, "--set", "config.ARENA_MODEL=gemini:gemini-2.5-flash", "--set", "model.enabled=false"
    )
    data = config_data(docs)
    assert data["ARENA_MODEL"] == "gemini:gemini-2.5-flash"
    assert "ARENA_MODEL_BASE_URL" not in data and "ARENA_EMBEDDED_MODEL_URL" not in data
    assert "model" not in by_component(docs, "Deployment")
    assert not [flow for flow in ingress_flows(docs) | egress_flows(docs) if "model" in flow[:2]]


def test_public_url_is_configurable(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "defender.publicUrl=https://defender.example.com")
    assert (
        env_of(by_component(docs, "Deployment")["defender"])["ARENA_PUBLIC_URL"]
        == "https://defender.example.com"
    )
    # The release's token may follow the defender's card to its public origin.
    scope = config_data(docs)["ARENA_TARGET_CREDENTIAL_ORIGINS"].removeprefix("ARENA=").split()
    assert scope == [
        f"http://{RELEASE}-defender:8081",
        "https://defender.example.com",
        f"http://{RELEASE}-defender-naive:8081",
    ]


def test_without_a_release_defender_the_attacker_gets_no_release_token(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "defender.enabled=false", "--set", "defenderNaive.enabled=false")
    attacker = by_component(docs, "Deployment")["attacker"]
    assert "ARENA_TARGET_TOKEN_ARENA" not in env_of(attacker)
    assert "ARENA_API_TOKENS" in env_of(attacker)  # it still checks the orchestrator's calls
    assert "ARENA_TARGET_CREDENTIAL_ORIGINS" not in config_data(docs)


def test_the_release_token_scope_can_be_replaced_and_is_absent_without_auth(tools_bin: Path) -> None:
    own = "ARENA=http://d:8081;PROD=https://agent.example.com"
    docs = render(tools_bin, "--set-string", f"config.ARENA_TARGET_CREDENTIAL_ORIGINS={own}")
    assert config_data(docs)["ARENA_TARGET_CREDENTIAL_ORIGINS"] == own
    docs = render(tools_bin, "--set", "auth.enabled=false")
    assert "ARENA_TARGET_CREDENTIAL_ORIGINS" not in config_data(docs)


def test_settings_reach_every_arena_deployment(tools_bin: Path, tmp_path: Path) -> None:
    """Every config key, set to its own sentinel, lands in the ConfigMap all arena pods load."""
    keys = sorted(chart_values()["config"])
    sentinels = {key: f"sentinel-{index}" for index, key in enumerate(keys)}
    docs = render(tools_bin, "-f", values_file(tmp_path, {"config": sentinels}))
    configmap = the_configmap(docs)
    data = configmap["data"]
    for key, sentinel in sentinels.items():
        assert data.get(key) == sentinel, f"{key} did not reach the ConfigMap"
    deployments = by_component(docs, "Deployment")
    for name in ARENA:
        sources = env_from(deployments[name])
        refs = [source["configMapRef"]["name"] for source in sources if "configMapRef" in source]
        assert refs == [configmap["metadata"]["name"]], name
        # Only deliberate per-component overrides shadow a setting.
        overridden = set(env_of(deployments[name])) & set(keys)
        assert overridden <= ({"ARENA_DEFENDER_PROFILE"} if name == "defender-naive" else set()), name


def test_component_env_wins_and_is_rendered(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "attacker.env.ARENA_LOG_LEVEL=debug", "--set", "attacker.env.EXTRA=1")
    env = env_of(by_component(docs, "Deployment")["attacker"])
    assert env["ARENA_LOG_LEVEL"] == "debug"
    assert env["EXTRA"] == "1"


def test_configmap_never_holds_a_secret(docs: list[Doc]) -> None:
    secrets = chart_values()["secrets"] or {}
    assert not set(config_data(docs)) & set(secrets)
    assert not set(config_data(docs)) & secret_settings()
    for key in config_data(docs):
        assert not re.search(r"API_KEY|^ARENA_TARGET_TOKEN_|^ARENA_API_|_TOKEN$|PASSWORD|SECRET", key), key


def _secret_holding(docs: list[Doc], key: str) -> Doc:
    (secret,) = [doc for doc in of_kind(docs, "Secret") if key in (doc.get("data") or {})]
    return secret


def test_target_tokens_reach_the_attacker_only(tools_bin: Path) -> None:
    docs = render(
        tools_bin, "--set", "secrets.GEMINI_API_KEY=k", "--set", "secrets.ARENA_TARGET_TOKEN_ACME=t"
    )
    tokens = _secret_holding(docs, "ARENA_TARGET_TOKEN_ACME")
    keys = _secret_holding(docs, "GEMINI_API_KEY")
    tokens_name, keys_name = tokens["metadata"]["name"], keys["metadata"]["name"]
    assert tokens_name != keys_name
    assert secret_data(tokens) == {"ARENA_TARGET_TOKEN_ACME": "t"}
    assert secret_data(keys) == {"GEMINI_API_KEY": "k"}
    workloads = {component(w): w for w in _workloads(docs)}
    # The token Secret: loaded whole by the attacker, referenced by no other pod in any way.
    assert tokens_name in env_from_secrets(workloads["attacker"])
    holders = {name for name, workload in workloads.items() if tokens_name in pod_secrets(workload)}
    assert holders == {"attacker"}
    # Model keys: the attacker and the defenders; the orchestrator has no use for them.
    for name in LOADS_SHARED_SECRET:
        assert keys_name in env_from_secrets(workloads[name]), name
    holders = {name for name, workload in workloads.items() if keys_name in pod_secrets(workload)}
    assert holders == set(LOADS_SHARED_SECRET)
    # No ConfigMap holds either value, or either key.
    for configmap in of_kind(docs, "ConfigMap"):
        data = configmap.get("data") or {}
        assert not {"GEMINI_API_KEY", "ARENA_TARGET_TOKEN_ACME"} & set(data), configmap["metadata"]["name"]
        assert not {"k", "t"} & set(data.values()), configmap["metadata"]["name"]


def test_secrets_are_split_by_who_needs_them(tools_bin: Path) -> None:
    value = "sk-sentinel-not-for-configmaps-7f3a"
    redis_url = "redis://:hunter2-sentinel@redis.example:6379/0"
    token = "tok-sentinel-attacker-only-91c2"
    text = render_text(
        tools_bin,
        "--set",
        f"secrets.GEMINI_API_KEY={value}",
        "--set-string",
        f"secrets.ARENA_REDIS_URL={redis_url}",
        "--set",
        f"secrets.ARENA_TARGET_TOKEN_EXAMPLE={token}",
    )
    assert value not in text and "hunter2" not in text and token not in text, "secret values in plain text"
    docs = [doc for doc in yaml.safe_load_all(text) if doc]
    secrets = {doc["metadata"]["name"]: secret_data(doc) for doc in without_auth(of_kind(docs, "Secret"))}
    shared, tokens = f"{RELEASE}-secrets", f"{RELEASE}-target-tokens"
    assert secrets == {
        shared: {"GEMINI_API_KEY": value, "ARENA_REDIS_URL": redis_url},
        tokens: {"ARENA_TARGET_TOKEN_EXAMPLE": token},
    }
    for name, data in secrets.items():
        if name != tokens:
            assert not [key for key in data if key.startswith(TARGET_TOKEN_PREFIX)], name
    data = config_data(docs)
    assert "GEMINI_API_KEY" not in data and "ARENA_TARGET_TOKEN_EXAMPLE" not in data
    assert "ARENA_REDIS_URL" not in data, "the Secret's Redis URL is the only one"
    deployments = by_component(docs, "Deployment")
    expected_env_from = {
        "orchestrator": [],
        "attacker": [shared, tokens],
        "defender": [shared],
        "defender-naive": [shared],
        "model": [],
    }
    for name in ARENA:
        assert env_from_secrets(deployments[name]) == expected_env_from[name], name
        sources = env_from(deployments[name])
        # The Secrets come after the ConfigMap, so their values win.
        assert "configMapRef" in sources[0] and all("secretRef" in source for source in sources[1:]), name
    # The orchestrator gets exactly one key of the shared Secret: the Redis URL (and its API token).
    assert env_refs(deployments["orchestrator"], shared) == {
        "ARENA_REDIS_URL": {"name": shared, "key": "ARENA_REDIS_URL"}
    }
    assert pod_secrets(deployments["orchestrator"]) == {shared, AUTH_SECRET}
    assert pod_secrets(deployments["model"]) == set()
    annotations = {name: deployments[name]["spec"]["template"]["metadata"]["annotations"] for name in ARENA}
    for name in REDIS_CLIENTS:
        assert "checksum/secret" in annotations[name], name
    assert [name for name in ARENA if "checksum/target-tokens" in annotations[name]] == ["attacker"]


def test_a_token_change_rolls_the_attacker_only(tools_bin: Path) -> None:
    def annotations(token: str) -> dict[str, Doc]:
        docs = render(
            tools_bin,
            "--set",
            "secrets.GEMINI_API_KEY=k",
            "--set",
            f"secrets.ARENA_TARGET_TOKEN_ACME={token}",
        )
        deployments = by_component(docs, "Deployment")
        found = {name: deployments[name]["spec"]["template"]["metadata"]["annotations"] for name in ARENA}
        # Without a cluster every render makes a new API token: leave its checksum out.
        return {
            name: {k: v for k, v in items.items() if k != "checksum/auth"} for name, items in found.items()
        }

    before, after = annotations("one"), annotations("two")
    changed = {name for name in ARENA if before[name] != after[name]}
    assert changed == {"attacker"}
    assert before["attacker"]["checksum/target-tokens"] != after["attacker"]["checksum/target-tokens"]


def test_no_secret_but_the_auth_one_without_secrets(default_docs: list[Doc]) -> None:
    assert [doc["metadata"]["name"] for doc in of_kind(default_docs, "Secret")] == [AUTH_SECRET]
    for workload in _workloads(default_docs):
        expected = {AUTH_SECRET} if component(workload) in AUTH_ENV else set()
        assert pod_secrets(workload) == expected, workload["metadata"]["name"]


def test_existing_secrets_are_loaded_instead(tools_bin: Path) -> None:
    docs = render(
        tools_bin, "--set", "existingSecret=arena-keys", "--set", "existingTargetTokenSecret=arena-tokens"
    )
    assert not without_auth(of_kind(docs, "Secret"))
    deployments = by_component(docs, "Deployment")
    assert env_from_secrets(deployments["attacker"]) == ["arena-keys", "arena-tokens"]
    for name in DEFENDERS:
        assert env_from_secrets(deployments[name]) == ["arena-keys"], name
        assert "arena-tokens" not in pod_secrets(deployments[name]), name
    # The orchestrator: the existing Secret's Redis URL if it has one, nothing else.
    orchestrator = deployments["orchestrator"]
    assert env_from_secrets(orchestrator) == []
    assert pod_secrets(orchestrator) == {"arena-keys", AUTH_SECRET}
    assert env_refs(orchestrator, "arena-keys") == {
        "ARENA_REDIS_URL": {"name": "arena-keys", "key": "ARENA_REDIS_URL", "optional": True}
    }
    holders = {component(w) for w in _workloads(docs) if "arena-tokens" in pod_secrets(w)}
    assert holders == {"attacker"}


def test_existing_secret_with_tokens_from_values(tools_bin: Path) -> None:
    docs = render(
        tools_bin, "--set", "existingSecret=arena-keys", "--set", "secrets.ARENA_TARGET_TOKEN_ACME=t"
    )
    (tokens,) = without_auth(of_kind(docs, "Secret"))
    assert secret_data(tokens) == {"ARENA_TARGET_TOKEN_ACME": "t"}
    holders = {component(w) for w in _workloads(docs) if tokens["metadata"]["name"] in pod_secrets(w)}
    assert holders == {"attacker"}
    for name in DEFENDERS:
        assert env_from_secrets(by_component(docs, "Deployment")[name]) == ["arena-keys"], name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "existingSecret=arena-keys", "--set", "secrets.OPENAI_API_KEY=x"], "existingSecret"),
        (
            ["--set", "existingTargetTokenSecret=arena-tokens", "--set", "secrets.ARENA_TARGET_TOKEN_ACME=t"],
            "existingTargetTokenSecret",
        ),
        (
            ["--set", "existingSecret=arena-keys", "--set", "existingTargetTokenSecret=arena-keys"],
            "existingTargetTokenSecret must not be existingSecret",
        ),
    ],
    ids=["keys-twice", "tokens-twice", "same-secret"],
)
def test_conflicting_secret_sources_are_refused(tools_bin: Path, args: list[str], message: str) -> None:
    done = _helm_template(tools_bin, *args)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


# --- authentication -----------------------------------------------------------------------------


def _auth_annotations(docs: list[Doc]) -> dict[str, str]:
    """Component -> its pods' checksum/auth annotation, for the workloads that have one."""
    found = {}
    for workload in _workloads(docs):
        annotations = workload["spec"]["template"]["metadata"].get("annotations") or {}
        if "checksum/auth" in annotations:
            found[component(workload)] = annotations["checksum/auth"]
    return found


def test_auth_is_on_by_default() -> None:
    assert chart_values()["auth"] == {
        "enabled": True,
        "existingSecret": "",
        "targetTokenKey": "ARENA_API_TOKENS",
    }


def test_the_auth_secret_reaches_exactly_the_services_that_check_or_send_the_token(docs: list[Doc]) -> None:
    (secret,) = [doc for doc in of_kind(docs, "Secret") if doc["metadata"]["name"] == AUTH_SECRET]
    data = secret_data(secret)
    assert set(data) == {"ARENA_API_TOKENS"}
    token = data["ARENA_API_TOKENS"]
    assert re.fullmatch(r"[A-Za-z0-9]{48}", token), "one random 48-character token"
    assert parse_tokens(token) == (token,), "a token the services accept"
    workloads = {component(w): w for w in _workloads(docs)}
    for name, workload in workloads.items():
        refs = env_refs(workload, AUTH_SECRET)
        assert set(refs) == AUTH_ENV.get(name, set()), name
        for ref in refs.values():
            assert ref == {"name": AUTH_SECRET, "key": "ARENA_API_TOKENS"}, name
        if name not in AUTH_ENV:  # the model, Redis, Jaeger: not referenced in any way
            assert AUTH_SECRET not in pod_secrets(workload), name
        # Probes carry no token: they stay on the public /healthz and /readyz.
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert "httpHeaders" not in (the_container(workload).get(probe) or {}).get("httpGet", {}), name
    # The target token for the release's own defenders: the attacker's only.
    holders = {
        name
        for name, w in workloads.items()
        if STACK_TARGET_TOKEN in {e["name"] for e in the_container(w).get("env") or []}
    }
    assert holders == {"attacker"}
    # Never in a ConfigMap; no pod sets ARENA_ATTACKER_TOKEN or ARENA_ORCHESTRATOR_TOKEN.
    for configmap in of_kind(docs, "ConfigMap"):
        assert token not in yaml.safe_dump(configmap), configmap["metadata"]["name"]
    for workload in workloads.values():
        names = {item["name"] for item in the_container(workload).get("env") or []}
        assert not names & {"ARENA_ATTACKER_TOKEN", "ARENA_ORCHESTRATOR_TOKEN", "ARENA_API_READ_TOKENS"}
    # Pods roll when the Secret (its name or, from the cluster, its token) changes.
    assert set(_auth_annotations(docs)) == set(AUTH_ENV)


def test_without_a_cluster_every_render_makes_a_new_token(tools_bin: Path) -> None:
    """`helm template` cannot look the Secret up (install and upgrade keep it: `lookup`)."""
    tokens = set()
    for _ in range(2):
        (secret,) = of_kind(render(tools_bin), "Secret")
        tokens.add(secret_data(secret)["ARENA_API_TOKENS"])
    assert len(tokens) == 2
    text = (CHART / "templates" / "_helpers.tpl").read_text(encoding="utf-8")
    assert 'lookup "v1" "Secret" .Release.Namespace (include "arena.authSecretName" .)' in text


def test_an_existing_auth_secret_is_used_instead(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "auth.existingSecret=arena-api-auth")
    assert not of_kind(docs, "Secret"), "the chart makes no token when given a Secret"
    workloads = {component(w): w for w in _workloads(docs)}
    for name, workload in workloads.items():
        refs = env_refs(workload, "arena-api-auth")
        expected = AUTH_ENV.get(name, set())
        # Its read-only tokens too, when it has them; and the orchestrator the token for an
        # attacker outside the release, when the Secret has one.
        optional = {"ARENA_API_READ_TOKENS"} | ({"ARENA_ATTACKER_TOKEN"} if name == "orchestrator" else set())
        assert set(refs) == (expected | optional if expected else set()), name
        for variable, ref in refs.items():
            if variable in optional:
                assert ref == {"name": "arena-api-auth", "key": variable, "optional": True}
            else:
                assert ref == {"name": "arena-api-auth", "key": "ARENA_API_TOKENS"}, (name, variable)
        expected_secrets = {"arena-api-auth"} if expected else set()
        assert pod_secrets(workload) == expected_secrets, name
    # Deterministic now: the same values give the same checksum, another Secret another one.
    again = render(tools_bin, "--set", "auth.existingSecret=arena-api-auth")
    other = render(tools_bin, "--set", "auth.existingSecret=arena-api-auth-2")
    assert _auth_annotations(again) == _auth_annotations(docs)
    assert set(_auth_annotations(docs)) == set(AUTH_ENV)
    assert not set(_auth_annotations(other).values()) & set(_auth_annotations(docs).values())


def test_the_stack_target_token_can_come_from_another_key(tools_bin: Path) -> None:
    """While ARENA_API_TOKENS lists several tokens, the attacker sends one: another key holds it."""
    docs = render(
        tools_bin,
        "--set",
        "auth.existingSecret=arena-api-auth",
        "--set",
        "auth.targetTokenKey=ARENA_TARGET_TOKEN",
    )
    attacker = by_component(docs, "Deployment")["attacker"]
    assert env_refs(attacker, "arena-api-auth")[STACK_TARGET_TOKEN] == {
        "name": "arena-api-auth",
        "key": "ARENA_TARGET_TOKEN",
    }
    assert env_refs(attacker, "arena-api-auth")["ARENA_API_TOKENS"]["key"] == "ARENA_API_TOKENS"


@pytest.mark.parametrize("extra", [[], ["-f", str(SCALED)]], ids=["default", "scaled"])
def test_auth_disabled_removes_the_secret_and_the_variables(tools_bin: Path, extra: list[str]) -> None:
    text = render_text(tools_bin, "--set", "auth.enabled=false", *extra)
    docs = [doc for doc in yaml.safe_load_all(text) if doc]
    assert not of_kind(docs, "Secret")
    assert "ARENA_API_TOKENS" not in text and STACK_TARGET_TOKEN not in text
    assert not _auth_annotations(docs)
    for workload in _workloads(docs):
        assert not pod_secrets(workload), workload["metadata"]["name"]


@pytest.mark.parametrize("where", ["config", "secrets"])
@pytest.mark.parametrize("key", sorted(secret_settings()))
def test_authentication_secrets_are_refused_in_config_and_secrets(
    tools_bin: Path, where: str, key: str
) -> None:
    done = _helm_template(tools_bin, "--set", f"{where}.{key}=tok-0123456789abcdef")
    assert done.returncode != 0
    assert f"{where}.{key}" in done.stderr and "auth.existingSecret" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "secrets.ARENA_TARGET_TOKEN_ARENA=t"], "secrets.ARENA_TARGET_TOKEN_ARENA"),
        (
            ["--set", "auth.existingSecret=arena-tokens", "--set", "existingTargetTokenSecret=arena-tokens"],
            "auth.existingSecret must not be existingTargetTokenSecret",
        ),
        (["--set", "auth.targetTokenKey=OTHER"], "auth.targetTokenKey names a key of auth.existingSecret"),
    ],
    ids=["stack-token-in-secrets", "auth-is-the-token-secret", "key-of-no-secret"],
)
def test_conflicting_auth_settings_are_refused(tools_bin: Path, args: list[str], message: str) -> None:
    done = _helm_template(tools_bin, *args)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


def test_with_auth_off_a_stack_target_token_may_come_from_secrets(tools_bin: Path) -> None:
    docs = render(tools_bin, "--set", "auth.enabled=false", "--set", "secrets.ARENA_TARGET_TOKEN_ARENA=t")
    (tokens,) = of_kind(docs, "Secret")
    assert secret_data(tokens) == {STACK_TARGET_TOKEN: "t"}


def test_external_redis_replaces_the_statefulset(tools_bin: Path) -> None:
    url = "redis://ext:6379/0"
    docs = render(tools_bin, "--set", "redis.enabled=false", "--set", f"config.ARENA_REDIS_URL={url}")
    assert not of_kind(docs, "StatefulSet")
    assert "redis" not in by_component(docs, "Service")
    assert "redis" not in by_component(docs, "NetworkPolicy")
    assert config_data(docs)["ARENA_REDIS_URL"] == url
    for client in REDIS_CLIENTS:
        assert (client, ANY, 6379) in egress_flows(docs), client


def test_no_redis_at_all_refuses_several_replicas(tools_bin: Path) -> None:
    done = _helm_template(tools_bin, "--set", "redis.enabled=false")
    assert done.returncode != 0
    assert "no Redis" in done.stderr, done.stderr


def test_an_existing_secret_alone_is_not_a_redis(tools_bin: Path) -> None:
    """The chart cannot see inside existingSecret: only externalRedis=true vouches for a URL there."""
    done = _helm_template(tools_bin, "--set", "redis.enabled=false", "--set", "existingSecret=arena-keys")
    assert done.returncode != 0
    assert "may run more than one replica but there is no Redis" in done.stderr, done.stderr
    assert "externalRedis=true when ARENA_REDIS_URL is in existingSecret" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--set", "existingSecret=arena-keys", "--set", "externalRedis=true"],
        ["--set-string", "secrets.ARENA_REDIS_URL=redis://:pw@ext:6379/0"],
        ["--set", "config.ARENA_REDIS_URL=redis://ext:6379/0"],
    ],
    ids=["existingSecret+externalRedis", "secrets", "config"],
)
def test_an_external_redis_allows_several_replicas(tools_bin: Path, args: list[str]) -> None:
    docs = render(tools_bin, "--set", "redis.enabled=false", *args)
    assert _min_replicas(docs, "defender") >= 2
    for client in REDIS_CLIENTS:
        assert (client, ANY, 6379) in egress_flows(docs), client


def test_an_external_redis_cluster_opens_every_node_port(tools_bin: Path) -> None:
    docs = render(
        tools_bin,
        "--set",
        "redis.enabled=false",
        "--set",
        "config.ARENA_REDIS_URL=redis+cluster://ext-0:7000\\,ext-1:7001",
        "--set",
        "networkPolicy.egress.externalRedis.port=7000",
        "--set",
        "networkPolicy.egress.externalRedis.extraPorts={7001,7002}",
    )
    flows = egress_flows(docs)
    for client in REDIS_CLIENTS:
        for port in (7000, 7001, 7002):
            assert (client, ANY, port) in flows, (client, port)
    assert not [flow for flow in flows if flow[2] == 6379]


def test_notes_warn_when_there_is_no_redis(tools_bin: Path) -> None:
    single = [
        "--set",
        "redis.enabled=false",
        "--set",
        "existingSecret=arena-keys",
        "--set",
        "attacker.autoscaling.enabled=false",
        "--set",
        "defender.autoscaling.enabled=false",
        "--set",
        "defender.replicas=1",
    ]
    done = _run([str(tools_bin / "helm"), "install", RELEASE, str(CHART), "--dry-run=client", *single])
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split("NOTES:", 1)[1]
    assert "WARNING: no Redis" in notes and "set externalRedis=true" in notes
    # Without NetworkPolicy egress to a Redis nobody declared.
    docs = render(tools_bin, *single)
    assert not [flow for flow in egress_flows(docs) if flow[2] == 6379]
    done = _run(
        [
            str(tools_bin / "helm"),
            "install",
            RELEASE,
            str(CHART),
            "--dry-run=client",
            *single,
            "--set",
            "externalRedis=true",
        ]
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING: no Redis" not in done.stdout


def test_tracing_goes_to_the_in_chart_jaeger(scaled_docs: list[Doc]) -> None:
    data = config_data(scaled_docs)
    assert data["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"http://{RELEASE}-jaeger:4318"
    assert data["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    # The attacker reads the match traces back from the same Jaeger to judge actions.
    assert data["ARENA_TRACE_QUERY_URL"] == f"http://{RELEASE}-jaeger:16686"
    for workload in _workloads(scaled_docs):
        for container in containers(workload):
            names = {item["name"] for item in container.get("env") or []}
            assert "OTEL_SERVICE_NAME" not in names, workload["metadata"]["name"]
    assert "OTEL_SERVICE_NAME" not in data


def test_tracing_to_an_existing_collector(tools_bin: Path) -> None:
    endpoint = "http://otel-collector.observability:4318"
    data = config_data(render(tools_bin, "--set", f"otel.endpoint={endpoint}"))
    assert data["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
    assert "ARENA_TRACE_QUERY_URL" not in data  # no in-chart Jaeger: config.ARENA_TRACE_QUERY_URL says where


# --- the example campaign and the notes ----------------------------------------------------


def test_example_campaign_targets_the_release_defenders(default_docs: list[Doc]) -> None:
    spec = load_campaign_spec((CHART / "campaign.yaml").read_bytes(), source="deploy/k8s/campaign.yaml")
    services = by_component(default_docs, "Service")
    urls = {defender.name: urlsplit(str(defender.url)) for defender in spec.defenders}
    assert set(urls) == {"hardened", "naive"}
    for label, name in (("hardened", "defender"), ("naive", "defender-naive")):
        service = services[name]
        assert urls[label].hostname == service["metadata"]["name"] == f"{RELEASE}-{name}"
        assert urls[label].port == service["spec"]["ports"][0]["port"]
    # Auth is on by default: both name the token the attacker (only) holds for them.
    assert {defender.credentials.bearer_token_env for defender in spec.defenders if defender.credentials} == {
        STACK_TARGET_TOKEN
    }
    assert all(defender.credentials for defender in spec.defenders)
    holders = {
        component(w) for w in _workloads(default_docs) if STACK_TARGET_TOKEN in env_refs(w, AUTH_SECRET)
    }
    assert holders == {"attacker"}
    # The naive one is the naive profile, the hardened one the default profile.
    deployments = by_component(default_docs, "Deployment")
    assert env_of(deployments["defender-naive"])["ARENA_DEFENDER_PROFILE"] == "naive"
    assert config_data(default_docs)["ARENA_DEFENDER_PROFILE"] == "hardened"


def test_notes_say_how_to_reach_the_dashboard_and_run_the_campaign(tools_bin: Path) -> None:
    done = _run([str(tools_bin / "helm"), "install", RELEASE, str(CHART), "--dry-run=client"])
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split("NOTES:", 1)[1]
    assert f"port-forward svc/{RELEASE}-orchestrator 8080:8080" in notes
    assert "/dashboard" in notes
    assert "arena campaign run deploy/k8s/campaign.yaml --orchestrator http://127.0.0.1:8080" in notes

    # Authentication on (the default): how to read the token and hand it to the CLI.
    assert (
        f"kubectl -n default get secret {AUTH_SECRET} -o jsonpath='{{.data.ARENA_API_TOKENS}}' | base64 -d"
        in notes
    )
    assert (
        "ARENA_ORCHESTRATOR_TOKEN=$TOKEN uv run arena campaign run deploy/k8s/campaign.yaml "
        "--orchestrator http://127.0.0.1:8080" in notes
    )
    assert "ARENA_ORCHESTRATOR_TOKEN=$TOKEN uv run arena report" in notes


@pytest.mark.parametrize(
    ("args", "expected", "absent"),
    [
        (["--set", "auth.existingSecret=arena-api-auth"], "get secret arena-api-auth ", "credentials:/d"),
        (
            ["--set", "auth.enabled=false"],
            "sed -e '/credentials:/d' deploy/k8s/campaign.yaml",
            "ARENA_ORCHESTRATOR_TOKEN",
        ),
    ],
    ids=["existing-secret", "auth-off"],
)
def test_notes_follow_the_auth_settings(tools_bin: Path, args: list[str], expected: str, absent: str) -> None:
    done = _run([str(tools_bin / "helm"), "install", RELEASE, str(CHART), "--dry-run=client", *args])
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split("NOTES:", 1)[1]
    assert expected in notes
    assert absent not in notes

"""The service images: each Dockerfile lints clean and keeps what the deployment relies on.

No Docker engine is needed: hadolint checks the files, and the rest is read from their text with a
small Dockerfile reader (line continuations, stages) and a ``.dockerignore`` matcher that follows
Docker's rules (``*`` and ``?`` stay within a path segment, ``**`` crosses them, a pattern that
matches a parent directory matches everything below it, ``!`` lets a path back in, the last
matching pattern wins).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from arena_core.service_ports import ATTACKER_PORT, DEFENDER_PORT, MODEL_PORT, ORCHESTRATOR_PORT

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Service:
    name: str
    port: int

    @property
    def package(self) -> str:
        return f"arena-{self.name}"

    @property
    def dockerfile(self) -> Path:
        return REPO / "services" / self.name / "Dockerfile"


# The default ports of the console scripts and of `arena serve` (one place: arena_core.service_ports).
SERVICES = [
    Service("orchestrator", ORCHESTRATOR_PORT),
    Service("defender", DEFENDER_PORT),
    Service("attacker", ATTACKER_PORT),
    Service("model", MODEL_PORT),
]


def test_the_service_list_is_every_service_dockerfile() -> None:
    found = {path.parent.name for path in (REPO / "services").glob("*/Dockerfile")}
    assert found == {service.name for service in SERVICES}, (
        "services/*/Dockerfile and SERVICES differ: add the new service (name, default port) above"
    )


# --- reading Dockerfiles ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    args: str  # continuation lines joined with a space
    line: int  # 1-based line of the keyword
    stage: int  # index of its FROM stage (-1 before the first FROM)


@dataclass(frozen=True)
class Stage:
    index: int
    image: str  # what FROM names: an image reference or an earlier stage's name
    name: str | None


class Dockerfile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.text = path.read_text(encoding="utf-8")
        self.lines = self.text.splitlines()
        self.instructions = _parse(self.lines)
        # ARGs before the first FROM: the only ones a FROM line may use (by their defaults here).
        self.global_args = dict(
            _arg_default(i.args) for i in self.instructions if i.keyword == "ARG" and i.stage == -1
        )
        froms = [i for i in self.instructions if i.keyword == "FROM"]
        self.stages = [_stage(_expand(i.args, self.global_args), i.stage) for i in froms]

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    def in_stage(self, stage: Stage, keyword: str | None = None) -> list[Instruction]:
        return [
            i
            for i in self.instructions
            if i.stage == stage.index and i.keyword != "FROM" and (keyword is None or i.keyword == keyword)
        ]

    def stage_named(self, name: str) -> Stage | None:
        named = [s for s in self.stages if s.name is not None and s.name.lower() == name.lower()]
        return named[-1] if named else None

    def base_image(self, stage: Stage) -> str:
        """The image a stage starts from, following ``FROM <earlier stage>`` back to an image."""
        seen: set[int] = set()
        while (earlier := self.stage_named(stage.image)) is not None and earlier.index < stage.index:
            assert earlier.index not in seen, f"{self.path}: stage loop at {stage.image}"
            seen.add(earlier.index)
            stage = earlier
        return stage.image

    def uv_syncs(self) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == "RUN" and re.search(r"\buv\s+sync\b", i.args)]

    def builder(self) -> Stage:
        syncs = self.uv_syncs()
        assert syncs, f"{self.path}: no `uv sync`"
        assert len({i.stage for i in syncs}) == 1, f"{self.path}: `uv sync` runs in more than one stage"
        return self.stages[syncs[0].stage]


def _parse(lines: list[str]) -> list[Instruction]:
    instructions: list[Instruction] = []
    stage = -1
    n = 0
    while n < len(lines):
        text = lines[n].strip()
        if not text or text.startswith("#"):
            n += 1
            continue
        first = n
        parts = []
        while text.endswith("\\"):
            parts.append(text[:-1].strip())
            n += 1
            # Docker drops comment and empty lines inside a continued instruction.
            while n < len(lines) and (not lines[n].strip() or lines[n].strip().startswith("#")):
                n += 1
            text = lines[n].strip() if n < len(lines) else ""
        parts.append(text)
        n += 1
        keyword, _, args = " ".join(p for p in parts if p).partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instructions.append(Instruction(keyword, args.strip(), first + 1, stage))
    return instructions


def _arg_default(args: str) -> tuple[str, str]:
    name, _, default = args.partition("=")
    return name.strip(), default.strip().strip('"')


def _expand(text: str, args: dict[str, str]) -> str:
    """``${NAME}`` and ``$NAME`` replaced by the build argument's default (left as is if unknown)."""
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)",
        lambda m: args.get(m.group(1) or m.group(2), m.group(0)),
        text,
    )


def _stage(args: str, index: int) -> Stage:
    words = [w for w in args.split() if not w.startswith("--")]
    name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
    return Stage(index=index, image=words[0], name=name)


def _flags_and_operands(args: str) -> tuple[dict[str, str], list[str]]:
    """``COPY``/``ADD`` arguments: leading ``--flag[=value]`` options, then sources and destination."""
    flags: dict[str, str] = {}
    rest = args
    while match := re.match(r"--([a-z-]+)(?:=(\S*))?\s+", rest):
        flags[match.group(1)] = match.group(2) or ""
        rest = rest[match.end() :]
    operands = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    return flags, [str(o) for o in operands]


def _exec_form(instruction: Instruction) -> list[str]:
    assert instruction.args.startswith("["), (
        f"line {instruction.line}: {instruction.keyword} must use the JSON (exec) form so signals "
        f"reach the service: {instruction.args}"
    )
    value = json.loads(instruction.args)
    assert isinstance(value, list), instruction.args
    return [str(v) for v in value]


def _seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts, f"not a duration: {duration}"
    return sum(float(amount) * units[unit] for amount, unit in parts)


def _is_pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    return bool(tag) and tag != "latest" and "$" not in tag


# --- .dockerignore ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class IgnoreRule:
    pattern: str
    regex: re.Pattern[str]
    keep: bool  # a `!pattern`: lets matching paths back in


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = []
    n = 0
    while n < len(pattern):
        char = pattern[n]
        if pattern.startswith("**/", n):
            out.append("(?:.*/)?")
            n += 3
            continue
        if pattern.startswith("**", n):
            out.append(".*")
            n += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := pattern.find("]", n + 1)) != -1:
            body = pattern[n + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith(("!", "^")) else body) + "]")
            n = end
        elif char == "\\" and n + 1 < len(pattern):
            n += 1
            out.append(re.escape(pattern[n]))
        else:
            out.append(re.escape(char))
        n += 1
    return re.compile("".join(out))


@cache
def dockerignore_rules() -> tuple[IgnoreRule, ...]:
    rules = []
    for raw in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = line[1:].strip() if keep else line
        pattern = pattern.strip("/")
        while pattern.startswith("./"):
            pattern = pattern[2:]
        rules.append(IgnoreRule(pattern, _pattern_regex(pattern), keep))
    return tuple(rules)


def is_excluded(path: str) -> bool:
    """Whether ``path`` (relative to the repository root, ``/``-separated) stays out of the context."""
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[: k + 1]) for k in range(len(parts))]
    excluded = False
    for rule in dockerignore_rules():
        if any(rule.regex.fullmatch(candidate) for candidate in candidates):
            excluded = not rule.keep
    return excluded


def is_sent_by_the_classic_builder(path: str) -> bool:
    """Whether the classic builder (DOCKER_BUILDKIT=0, Compose on podman) sends ``path``.

    Beyond :func:`is_excluded`, its walker skips an excluded directory unless the text of some
    ``!`` pattern starts with the directory's path: a wildcard in a re-included path
    (``!services/*/src``) lets nothing under ``services/`` back in (moby's ``TarWithOptions``).
    """
    parts = path.strip("/").split("/")
    keeps = [rule.pattern for rule in dockerignore_rules() if rule.keep]
    for k in range(1, len(parts)):
        directory = "/".join(parts[:k])
        if is_excluded(directory) and not any((keep + "/").startswith(directory + "/") for keep in keeps):
            return False
    return not is_excluded(path)


# --- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(params=SERVICES, ids=lambda service: service.name)
def service(request: pytest.FixtureRequest) -> Service:
    chosen: Service = request.param
    return chosen


@pytest.fixture
def dockerfile(service: Service) -> Dockerfile:
    assert service.dockerfile.is_file(), f"missing {service.dockerfile.relative_to(REPO)}"
    return Dockerfile(service.dockerfile)


# --- lint ------------------------------------------------------------------------------------------


def _hadolint(tools_bin: Path, home: Path, dockerfile: Path) -> subprocess.CompletedProcess[str]:
    """hadolint with its default rules: a HOME and XDG_CONFIG_HOME of its own (so no user's
    ``~/.config/hadolint.yaml`` or ``~/.hadolint.yaml`` can relax them) and no ``HADOLINT_*``
    variables (they can ignore rules or turn failures off)."""
    home.mkdir(exist_ok=True)
    (home / "config").mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config")}
    return subprocess.run(
        [str(tools_bin / "hadolint"), "--no-color", str(dockerfile)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hadolint_passes(tools_bin: Path, service: Service, tmp_path: Path) -> None:
    done = _hadolint(tools_bin, tmp_path / "home", service.dockerfile.relative_to(REPO))
    findings = (done.stdout + done.stderr).strip()
    assert done.returncode == 0, f"hadolint findings:\n{findings}"
    assert not findings, f"hadolint printed findings below the failure threshold:\n{findings}"


def test_hadolint_as_run_here_still_fails_a_bad_dockerfile(tools_bin: Path, tmp_path: Path) -> None:
    """The lint above is not toothless: the same invocation fails on a rule it must enforce."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /tmp && echo hi\n", encoding="utf-8")
    done = _hadolint(tools_bin, tmp_path / "home", bad)
    assert done.returncode != 0 and "DL3007" in done.stdout, done.stdout + done.stderr


def test_every_hadolint_ignore_is_justified(dockerfile: Dockerfile) -> None:
    """Each ``# hadolint ignore=`` has a comment right above it that names and explains every rule."""
    for number, line in enumerate(dockerfile.lines):
        directive = re.match(r"\s*#\s*hadolint\s+(?:global\s+)?ignore\s*=\s*(\S+)", line)
        if not directive:
            continue
        where = f"line {number + 1} `{line.strip()}`"
        reason: list[str] = []
        above = number - 1
        while above >= 0 and dockerfile.lines[above].strip().startswith("#"):
            text = dockerfile.lines[above].strip().lstrip("#").strip()
            if re.match(r"(hadolint\b|syntax\s*=|escape\s*=)", text):
                break
            reason.insert(0, text)
            above -= 1
        assert reason, f"{where}: needs a comment directly above saying why"
        assert len(" ".join(reason).split()) >= 6, f"{where}: `{' '.join(reason)}` does not explain it"
        for rule in directive.group(1).split(","):
            assert rule in " ".join(reason), f"{where}: the comment above must name {rule} and say why"


# --- structure -------------------------------------------------------------------------------------


def test_header_gives_the_build_command(dockerfile: Dockerfile, service: Service) -> None:
    header = []
    for line in dockerfile.lines:
        if not line.startswith("#"):
            break
        header.append(line)
    command = re.compile(rf"#\s+docker build -f services/{service.name}/Dockerfile( .*)? \.$")
    assert any(command.match(line) for line in header), (
        f"the comment at the top must give `docker build -f services/{service.name}/Dockerfile ... .`"
    )


def test_multi_stage_on_one_pinned_python_base(dockerfile: Dockerfile) -> None:
    assert len(dockerfile.stages) >= 2, "a builder stage and a final stage are needed"
    for stage in dockerfile.stages:
        if dockerfile.stage_named(stage.image) is None:
            assert _is_pinned(stage.image), f"FROM {stage.image}: pin a tag (not latest) or a digest"
    builder = dockerfile.builder()
    assert builder.index != dockerfile.final.index, "the final stage must not be the builder"
    runtime_base = dockerfile.base_image(dockerfile.final)
    assert runtime_base == dockerfile.base_image(builder), (
        "the final stage must start from the builder's base image, or the venv's interpreter path breaks"
    )
    assert re.match(r"(.*/)?python:", runtime_base), f"{runtime_base} is not a Python image"


# The base images are build arguments with the real images as defaults: a user's build uses these,
# tests/system/test_compose_engine.py passes local stand-ins (no registry on the test machines).
BASE_IMAGE_ARGS = {"UV_IMAGE": r"ghcr\.io/astral-sh/uv:", "PYTHON_IMAGE": r"python:3\.12-slim-bookworm$"}


def test_base_images_are_build_arguments_defaulting_to_the_real_images(dockerfile: Dockerfile) -> None:
    for name, default in BASE_IMAGE_ARGS.items():
        assert name in dockerfile.global_args, f"ARG {name}=... before the first FROM"
        assert re.match(default, dockerfile.global_args[name]), f"ARG {name}={dockerfile.global_args[name]}"
    for instruction in dockerfile.instructions:
        if instruction.keyword == "FROM" and dockerfile.stage_named(instruction.args.split()[0]) is None:
            assert re.match(r"\$\{(UV|PYTHON)_IMAGE\}\s", instruction.args), (
                f"line {instruction.line}: FROM {instruction.args}: name the base by its build argument"
            )


def test_final_stage_runs_as_a_non_root_user(dockerfile: Dockerfile) -> None:
    users = dockerfile.in_stage(dockerfile.final, "USER")
    assert users, "the final stage must set USER"
    user, _, group = users[-1].args.partition(":")
    assert user not in {"root", "0", ""}, f"USER {users[-1].args} is root"
    assert group not in {"root", "0"}, f"USER {users[-1].args} runs with the root group"
    if user.isdigit():
        assert int(user) >= 1000, f"USER {user}: use a fixed uid outside the system range"


def test_final_stage_holds_only_the_venv(dockerfile: Dockerfile) -> None:
    builder = dockerfile.builder()
    assert not dockerfile.in_stage(dockerfile.final, "ADD")
    copies = dockerfile.in_stage(dockerfile.final, "COPY")
    assert copies, "the final stage must copy the venv from the builder"
    for copy in copies:
        flags, operands = _flags_and_operands(copy.args)
        assert flags.get("from", "").lower() in {str(builder.index), (builder.name or "").lower()}, (
            f"line {copy.line}: the final stage copies only from the builder: COPY {copy.args}"
        )
        assert operands == ["/app/.venv", "/app/.venv"], f"line {copy.line}: COPY {copy.args}"
    env = " ".join(i.args for i in dockerfile.in_stage(dockerfile.final, "ENV"))
    assert re.search(r"\bPATH=/app/\.venv/bin:\$\{?PATH\}?", env), "PATH must start with /app/.venv/bin"
    assert re.search(r"\bPYTHONUNBUFFERED=1\b", env)


def test_healthcheck_probes_healthz_on_the_exposed_port(dockerfile: Dockerfile, service: Service) -> None:
    exposed = " ".join(i.args for i in dockerfile.in_stage(dockerfile.final, "EXPOSE")).split()
    assert exposed, "the final stage must EXPOSE the service port"
    assert {p.split("/")[0] for p in exposed} == {str(service.port)}, f"EXPOSE {exposed}"

    checks = dockerfile.in_stage(dockerfile.final, "HEALTHCHECK")
    assert len(checks) == 1, "the final stage needs one HEALTHCHECK"
    options, _, command = checks[0].args.partition("CMD")
    assert command.strip(), f"HEALTHCHECK {checks[0].args} has no CMD"
    assert re.search(rf"http://(127\.0\.0\.1|localhost):{service.port}/healthz\b", command), (
        f"the HEALTHCHECK must request /healthz on port {service.port}: {command.strip()}"
    )
    # python:*-slim has neither curl nor wget; the probe must use the interpreter in the image,
    # in an exec form with no spaces inside an argument (podman 4.3's Docker API splits them).
    assert json.loads(command.strip())[:3] == ["python", "-m", "arena_core.healthcheck"], command
    assert not any(" " in arg for arg in json.loads(command.strip())), command
    assert not re.search(r"\b(curl|wget)\b", command)

    given = dict(re.findall(r"--([a-z-]+)=(\S+)", options))
    timings = {}
    for option in ("interval", "timeout", "start-period"):
        assert option in given, f"HEALTHCHECK needs --{option}"
        timings[option] = _seconds(given[option])
    assert timings["timeout"] < timings["interval"]
    if service.name == "model":
        assert timings["start-period"] >= 60, "the model loads its weights first: give it a longer start"


def test_uv_sync_is_frozen_and_installs_only_this_service(dockerfile: Dockerfile, service: Service) -> None:
    syncs = dockerfile.uv_syncs()
    assert len(syncs) >= 2, "dependencies first (--no-install-workspace), then the workspace packages"
    for sync in syncs:
        assert re.search(r"--frozen\b", sync.args), f"line {sync.line}: uv sync needs --frozen"
        assert re.search(r"--no-dev\b", sync.args), f"line {sync.line}: uv sync needs --no-dev"
        assert re.search(r"--no-editable\b", sync.args), f"line {sync.line}: uv sync needs --no-editable"
        assert re.findall(r"--package[= ](\S+)", sync.args) == [service.package], (
            f"line {sync.line}: uv sync must install --package {service.package} only"
        )
        assert not re.search(r"--all-packages\b|--all-extras\b|--extra\b|--group\b", sync.args)
    assert "--no-install-workspace" in syncs[0].args, "the first uv sync installs the dependencies only"
    assert "--no-install-workspace" not in syncs[-1].args, "the last uv sync installs the service"
    # uv keys its cached wheels of local packages on pyproject.toml alone: built from a warm cache,
    # the image would get stale workspace code (astral-sh/uv#13685).
    assert re.search(r"--no-cache\b|--reinstall\b", syncs[-1].args), (
        f"line {syncs[-1].line}: install the workspace packages with --no-cache (or --reinstall)"
    )


def test_uv_is_the_projects_version(dockerfile: Dockerfile) -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    pinned = re.search(r"uv==(\d+\.\d+\.\d+)", ci)
    assert pinned, ".ci/run no longer pins uv"
    version = re.escape(pinned.group(1))
    sources = [
        rf"astral-sh/uv:{version}(\s|$|@)",  # FROM / COPY --from the official image
        rf"\buv=={version}\b",  # pip install
    ]
    assert any(re.search(p, dockerfile.text, re.MULTILINE) for p in sources), (
        f"the builder must get uv {pinned.group(1)}, the version .ci/run uses"
    )


def test_dependency_layer_sees_only_the_workspace_manifests(dockerfile: Dockerfile, service: Service) -> None:
    """The expensive layer depends on the lock and manifests only, and has every member's manifest."""
    first_sync = dockerfile.uv_syncs()[0]
    builder = dockerfile.builder()
    before = [c for c in dockerfile.in_stage(builder, "COPY") if c.line < first_sync.line]
    copied: set[str] = set()
    for copy in before:
        flags, operands = _flags_and_operands(copy.args)
        if "from" in flags:
            continue
        for source in operands[:-1]:
            assert Path(source).name in {"pyproject.toml", "uv.lock", "README.md"}, (
                f"line {copy.line}: only manifests belong before the dependency install, not {source}"
            )
            copied.add(source.strip("/"))
    root = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    members = root["tool"]["uv"]["workspace"]["members"]
    needed = {"pyproject.toml", "uv.lock"} | {f"{m}/pyproject.toml" for m in members}
    assert needed <= copied, f"uv needs these to load the workspace: {sorted(needed - copied)}"

    after = [c for c in dockerfile.in_stage(builder, "COPY") if c.line > first_sync.line]
    sources = {s.strip("/") for c in after for s in _flags_and_operands(c.args)[1][:-1]}
    assert f"services/{service.name}/src" in sources
    others = {f"services/{s.name}/src" for s in SERVICES if s != service}
    assert not sources & others, f"other services' sources would bust this image's cache: {sources & others}"


def test_entrypoint_is_the_console_script_and_cmd_binds_all_interfaces(
    dockerfile: Dockerfile, service: Service
) -> None:
    entrypoints = dockerfile.in_stage(dockerfile.final, "ENTRYPOINT")
    assert entrypoints, "the final stage needs an ENTRYPOINT"
    assert _exec_form(entrypoints[-1]) == [service.package]

    cmds = dockerfile.in_stage(dockerfile.final, "CMD")
    assert cmds, "the final stage needs a CMD"
    cmd = _exec_form(cmds[-1])
    options = dict(zip(cmd[::2], cmd[1::2], strict=False))
    assert options.get("--host") == "0.0.0.0", f"CMD {cmd}: bind 0.0.0.0 in a container"
    assert options.get("--port") == str(service.port), f"CMD {cmd}: serve on {service.port}"


def test_labels(dockerfile: Dockerfile, service: Service) -> None:
    labels = " ".join(i.args for i in dockerfile.in_stage(dockerfile.final, "LABEL"))
    for key in ("title", "description", "source", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels, f"missing label org.opencontainers.image.{key}"
    assert re.search(rf'org\.opencontainers\.image\.title="?{service.package}\b', labels)
    assert re.search(r'org\.opencontainers\.image\.licenses="?Apache-2\.0\b', labels)


def test_console_script_is_declared(dockerfile: Dockerfile, service: Service) -> None:
    script = _exec_form(dockerfile.in_stage(dockerfile.final, "ENTRYPOINT")[-1])[0]
    manifest = REPO / "services" / service.name / "pyproject.toml"
    pyproject = tomllib.loads(manifest.read_text(encoding="utf-8"))
    scripts = pyproject.get("project", {}).get("scripts", {})
    assert script in scripts, f"services/{service.name}/pyproject.toml declares no [project.scripts] {script}"


def test_model_compiles_llama_cpp_portably() -> None:
    dockerfile = Dockerfile(REPO / "services" / "model" / "Dockerfile")
    builder = dockerfile.builder()
    first_sync = dockerfile.uv_syncs()[0]
    before_sync = [i for i in dockerfile.in_stage(builder) if i.line < first_sync.line]
    settings = " ".join(i.args for i in before_sync if i.keyword in {"ARG", "ENV"})
    assert re.search(r"CMAKE_ARGS=\S*-DGGML_NATIVE=OFF", settings), "llama.cpp must not target the build host"
    runs = " ".join(i.args for i in dockerfile.in_stage(builder, "RUN"))
    assert re.search(r"\bbuild-essential\b", runs)
    assert re.search(r"\bcmake\b", runs)
    final_runs = " ".join(i.args for i in dockerfile.in_stage(dockerfile.final, "RUN"))
    assert re.search(r"\blibgomp1\b", final_runs), "llama.cpp links OpenMP at run time"
    assert not re.search(r"\b(build-essential|cmake|gcc|g\+\+)\b", final_runs), "no toolchain at run time"


# --- build context ---------------------------------------------------------------------------------


def _context_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    return [
        p
        for p in sorted(source.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}
    ]


def test_copy_sources_are_in_the_build_context(dockerfile: Dockerfile) -> None:
    for instruction in dockerfile.instructions:
        if instruction.keyword not in {"COPY", "ADD"}:
            continue
        flags, operands = _flags_and_operands(instruction.args)
        if "from" in flags:
            continue
        for source in operands[:-1]:
            matches = sorted(REPO.glob(source.strip("/"))) if source.strip("/") else [REPO]
            assert matches, f"line {instruction.line}: COPY source {source} is not in the repository"
            for match in matches:
                files = _context_files(match)
                assert files, f"line {instruction.line}: {source} holds no files"
                paths = [str(f.relative_to(REPO)) for f in files]
                left_out = [path for path in paths if not is_sent_by_the_classic_builder(path)]
                assert not left_out, f"line {instruction.line}: .dockerignore leaves out {left_out[:5]}"


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        ".tools/bin/hadolint",
        ".pytest_cache/README.md",
        "tests/conftest.py",
        "docs/architecture.md",
        "out/report.json",
        "bench/results.json",
        "deploy/.env",
        "src/arena/cli.py",
        "services/model/src/arena_model/.env",
        "libs/core/src/arena_core/__pycache__/settings.cpython-312.pyc",
        "services/orchestrator/src/arena_orchestrator/__pycache__/app.cpython-312.pyc",
    ],
)
def test_dockerignore_keeps_local_state_out(path: str) -> None:
    assert is_excluded(path), f"{path} would be sent to the Docker daemon"


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "uv.lock",
        "libs/core/pyproject.toml",
        "services/model/pyproject.toml",
        "libs/core/src/arena_core/settings.py",
        "services/orchestrator/src/arena_orchestrator/dashboard_static/dashboard.js",
    ],
)
def test_dockerignore_keeps_what_the_builds_read(path: str) -> None:
    assert not is_excluded(path), f"{path} is needed by the image builds"
    assert is_sent_by_the_classic_builder(path), f"{path}: the classic builder would not send it"

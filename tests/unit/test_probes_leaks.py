"""The leak checks' patterns: what is a stack trace, a server path, an internal address, and what is not."""

from __future__ import annotations

import json

import pytest

from arena_core.probes.checks.leaks import (
    HEAD_CHARS,
    MAX_MATCHES,
    TAIL_CHARS,
    Leak,
    bounded,
    file_paths,
    internal_addresses,
    json_strings,
    stack_traces,
    texts_of,
)
from arena_core.probes.wire import Exchange

MIB = 1_048_576


def _kinds(leaks: list[Leak]) -> set[str]:
    return {leak.kind for leak in leaks}


def _values(leaks: list[Leak]) -> list[str]:
    return [leak.value for leak in leaks]


# -- stack traces -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('Traceback (most recent call last):\n  File "/app/x.py", line 3, in <module>', "Python traceback"),
        ('error:   File "<agent>", line 12, in handle\n    task = TASKS[id]', "Python traceback"),
        ("java.lang.NullPointerException\n\tat com.example.Foo.bar(Foo.java:12)", "Java stack trace"),
        ("\tat java.base/java.lang.Thread.run(Native Method)", "Java stack trace"),
        ("\tat org.acme.Svc$Inner.<init>(Svc.kt:7)", "Java stack trace"),
        ("TypeError: x is undefined\n    at fn (file.js:1:2)", "Node.js stack trace"),
        ("    at Object.<anonymous> (/srv/app/index.js:10:5)", "Node.js stack trace"),
        ("    at async handler (node:internal/process/task_queues:95:5)", "Node.js stack trace"),
        ("    at /app/dist/server.mjs:33:17", "Node.js stack trace"),
        ("panic: boom\n\ngoroutine 1 [running]:\nmain.main()", "Go goroutine dump"),
    ],
)
def test_stack_traces_are_found(text: str, kind: str) -> None:
    assert kind in _kinds(stack_traces(text))


@pytest.mark.parametrize(
    "text",
    [
        "We met at noon (room 4) to talk about the file.",
        "Look at this (see the docs: section 1:2).",
        "at com.example.Foo.bar and nothing else",
        'The File "notes.txt" is attached.',
        "a traceback was not included",
        "Meeting at 10:30 (UTC), and at 11:00:00 (CET).",
        "goroutines are cheap",
        "what: format(at)",
        "chat fn (file.js:1:2)",
    ],
)
def test_ordinary_text_is_no_stack_trace(text: str) -> None:
    assert stack_traces(text) == []


# -- file paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("failed (in /srv/agent/handlers.py)", "/srv/agent/handlers.py"),
        ("open('/home/deploy/.config/app.toml')", "/home/deploy/.config/app.toml"),
        ("loaded /usr/lib/python3.11/json/decoder.py.", "/usr/lib/python3.11/json/decoder.py"),
        ('"/app/main.py"', "/app/main.py"),
        ("cwd=/opt/agent", "/opt/agent"),
        ("spool /var/lib/agent/queue", "/var/lib/agent/queue"),
        ("at C:\\Users\\bob\\agent\\app.py line 3", "C:\\Users\\bob\\agent\\app.py"),
        ("see file:///opt/agent/config.yaml", "file:///opt/agent/config.yaml"),
    ],
)
def test_server_paths_are_found(text: str, value: str) -> None:
    assert value in _values(file_paths(text))


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/app/index.html",
        "http://127.0.0.1:8080/var/x",
        "content type application/json or text/plain",
        "POST /v1/tasks/abc:cancel",
        "/rest/v1/message:send",
        "dated 2024/01/02",
        "/apple/pie and /usr",
        "the users/home/app folder",
        "C:\\ alone, or a:b\\c",
        "~/home/me",
    ],
)
def test_urls_and_media_types_are_no_paths(text: str) -> None:
    assert file_paths(text) == []


# -- internal addresses -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("upstream 10.20.30.40 refused", "private IPv4 address", "10.20.30.40"),
        ("peer=172.16.0.5:443", "private IPv4 address", "172.16.0.5"),
        ("host 172.31.255.254", "private IPv4 address", "172.31.255.254"),
        ("(192.168.1.10)", "private IPv4 address", "192.168.1.10"),
        ("listen [fd12:3456:789a::1]:80", "private IPv6 address", "fd12:3456:789a::1"),
        ("node FC00:0:0:0:0:0:0:7", "private IPv6 address", "fc00::7"),
        ("backend redis://10.20.30.40:6379 unavailable", "internal service URL", "redis://10.20.30.40:6379"),
        ("dsn postgresql://app@db:5432/main", "internal service URL", "postgresql://app@db:5432/main"),
        ("jdbc:mysql://db.local:3306/x", "internal service URL", "jdbc:mysql://db.local:3306/x"),
        ("calling metadata.google.internal now", "internal host name", "metadata.google.internal"),
        (
            "GET http://api.payments.svc.cluster.local/x",
            "internal host name",
            "api.payments.svc.cluster.local",
        ),
    ],
)
def test_internal_addresses_are_found(text: str, kind: str, value: str) -> None:
    leaks = internal_addresses(text)
    assert (kind, value) in [(leak.kind, leak.value) for leak in leaks]


def test_an_address_inside_a_service_url_is_reported_once() -> None:
    leaks = internal_addresses("backend redis://10.20.30.40:6379 unavailable")
    assert [(leak.kind, leak.value) for leak in leaks] == [
        ("internal service URL", "redis://10.20.30.40:6379")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "task 123e4567-e89b-12d3-a456-426614174000",
        "id fdab3c0ffee1234567890abcdef",
        "version 1.10.2.3 and v10.1.2.3 and 10.2.3",
        "build 10.0.19041.1",
        "10.256.1.1 or 192.168.1.300",
        "172.32.0.1 and 172.15.9.9 are public",
        "127.0.0.1, ::1 and localhost",
        "8.8.8.8 and 2001:db8::1",
        "mac fc:aa:bb:cc:dd:ee",
        "at com.example.internal.Foo.bar(Foo.java:1)",
        "the internal error",
        "time 2024-10-01T10:20:30.400Z",
        "https://agent.example.com/rest",
    ],
)
def test_ordinary_numbers_and_names_are_no_addresses(text: str) -> None:
    assert internal_addresses(text) == []


def test_the_targets_own_hosts_are_excluded() -> None:
    text = "served by 10.0.0.5:8080 and gw.corp.internal, backend 10.0.0.6"
    leaks = internal_addresses(text, {"10.0.0.5", "GW.corp.internal"})
    assert _values(leaks) == ["10.0.0.6"]
    assert internal_addresses("[fd00::1]:9000", {"[fd00::1]"}) == []


# -- what is read -------------------------------------------------------------------------------


def test_json_bodies_are_read_as_their_strings() -> None:
    # JSON may escape "/" and doubles every backslash: read raw, neither path would be whole.
    body = '{"message": "in \\/srv\\/x.py and C:\\\\srv\\\\app\\\\a.py"}'
    exchange = Exchange("POST", "http://t/", {}, "", status=500, body=body)
    (text,) = texts_of(exchange)
    assert _values(file_paths(text)) == ["/srv/x.py", "C:\\srv\\app\\a.py"]
    plain = Exchange("GET", "http://t/", {}, "", status=500, body="<pre>/opt/app/x.py</pre>")
    assert _values(file_paths(next(texts_of(plain)))) == ["/opt/app/x.py"]


def test_stream_events_and_errors_are_read() -> None:
    exchange = Exchange(
        "POST",
        "http://t/",
        {},
        "",
        status=200,
        events=[json.dumps({"result": {"m": "at /opt/x/y.py"}}), "not json /home/u/z"],
        error="ReadError: peer 10.1.2.3",
    )
    texts = list(texts_of(exchange))
    assert len(texts) == 3
    assert _values(file_paths("\n".join(texts))) == ["/opt/x/y.py", "/home/u/z"]
    assert _values(internal_addresses(texts[2])) == ["10.1.2.3"]


def test_json_too_deep_to_parse_is_read_as_text() -> None:
    body = "[" * 100_000 + '"/srv/deep.py"' + "]" * 100_000
    exchange = Exchange("POST", "http://t/", {}, "", status=200, body=body, events=[body])
    assert [_values(file_paths(text)) for text in texts_of(exchange)] == [["/srv/deep.py"]] * 2


def test_json_strings_holds_keys_and_deep_values() -> None:
    deep: object = "/srv/deep.py"
    for _ in range(5_000):
        deep = [deep]
    assert json_strings({"k/home/x": deep}) == "k/home/x\n/srv/deep.py"


def test_long_texts_are_read_at_both_ends() -> None:
    text = "A" * (HEAD_CHARS + TAIL_CHARS + 10)
    assert bounded("short") == "short"
    cut = bounded("/srv/head.py " + text + " /srv/tail.py")
    assert len(cut) == HEAD_CHARS + TAIL_CHARS + 1
    assert _values(file_paths(cut)) == ["/srv/head.py", "/srv/tail.py"]


def test_matches_per_text_are_capped() -> None:
    text = "\n".join(f"/srv/file{i}.py" for i in range(500))
    assert len(file_paths(text)) == MAX_MATCHES


# -- adversarial input ---------------------------------------------------------------------------

ADVERSARIAL = {
    "at-words": "at " * (MIB // 3),
    "at-names": ("at " + "a" * 149 + " ") * (MIB // 153),
    "at-parens": ("at a (" + "b" * 299 + " ") * (MIB // 306),
    "at-paths": ("at /" + "a" * 299 + " ") * (MIB // 304),
    "dots": "a." * (MIB // 2),
    "spaced-dots": (" " + "a." * 100) * (MIB // 201),
    "roots": "/home/" * (MIB // 6),
    "deep-paths": ("/usr/" + "a/" * 100 + " ") * (MIB // 206),
    "drives": ("C:\\" + "a" * 100 + " ") * (MIB // 104),
    "dotted-numbers": "10.1.1." * (MIB // 7),
    "hextets": ("fd00:" + "a" * 40 + " ") * (MIB // 46),
    "quotes": 'File "' * (MIB // 6),
    "digits": "1" * MIB,
    "labels": (" a" + "-" * 199 + ".internalx") * (MIB // 211),
    "goroutines": "goroutine 1 [" * (MIB // 13),
    "schemes": "redis://" * (MIB // 8),
    "colons": ":" * MIB,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_a_megabyte_of_adversarial_text_is_read(name: str) -> None:
    text = ADVERSARIAL[name]
    assert len(text) > 0.9 * MIB
    for find in (stack_traces, file_paths, internal_addresses):
        assert len(find(text)) <= 4 * MAX_MATCHES

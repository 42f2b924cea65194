"""``python -m bench``: run the benchmarks, write bench/results.json and the table in
docs/performance.md.

    uv run --group bench python -m bench                 # everything (about half an hour)
    uv run --group bench python -m bench --only campaign,ageing
    uv run --group bench python -m bench --quick         # smoke run, written to out/bench/

A recorded run (not ``--quick``) with every benchmark rewrites docs/performance.md between
its markers; a run of some benchmarks merges its outcomes into bench/results.json and the
table, keeping the others. Exit status: 0 when every benchmark ran (goals met or not), 1 when
one could not run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time
import traceback
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import BenchError
from bench.machine import describe, speed_ms
from bench.report import write_doc
from bench.scenario import BenchOptions, Outcome

BENCHMARKS = (
    "turn_overhead",
    "throughput",
    "ageing",
    "long_conversation",
    "campaign",
    "embedded_model",
    "scaling",
    "held_conversations",
    "ratings",
)
REPO = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    return subprocess.run(  # noqa: S603 - git with our own fixed arguments
        ["git", *args],  # noqa: S607
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _commit() -> str:
    """The commit measured; ``-dirty`` when tracked files had changes."""
    try:
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        return _git("rev-parse", "--short", "HEAD") + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: small loads, written to out/bench/"
    )
    parser.add_argument("--rounds", type=int, default=2, help="interleaved repetitions (at least 2)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()] or list(BENCHMARKS)
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: every comparison is repeated")
    args.chosen = chosen
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    options = BenchOptions(quick=args.quick, rounds=args.rounds)
    out_dir = REPO / "out" / "bench" if args.quick else REPO / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.json"
    previous: dict[str, Any] = {}
    if results_path.exists() and len(args.chosen) < len(BENCHMARKS):
        previous = json.loads(results_path.read_text())
    outcomes: dict[str, dict[str, Any]] = {o["id"]: o for o in previous.get("outcomes", [])}
    started = datetime.now(UTC)
    commit = _commit()
    failed = False
    for name in args.chosen:
        print(f"[bench] {name} ...", flush=True)  # noqa: T201
        speed = speed_ms()
        began = time.monotonic()
        try:
            outcome: Outcome = importlib.import_module(f"bench.{name}").run(options)
        except (BenchError, OSError, RuntimeError, subprocess.SubprocessError) as exc:
            failed = True
            print(f"[bench] {name} could not run: {exc}", file=sys.stderr)  # noqa: T201
            traceback.print_exc()
            outcome = Outcome(
                id=name, title=name, goal="", measured="could not run", met=False, explanation=str(exc)
            )
        record = asdict(outcome)
        record["seconds"] = round(time.monotonic() - began, 1)
        record["machine_speed_ms"] = round(speed, 1)
        record["commit"] = commit
        record["ran_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        outcomes[name] = record
        verdict = {True: "met", False: "MISSED", None: "reported"}[outcome.met]
        print(f"[bench] {name}: {outcome.measured} [{verdict}] ({record['seconds']} s)", flush=True)  # noqa: T201
    document = {
        "machine": describe(),
        "commit": commit,
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "options": {"quick": options.quick, "rounds": options.rounds},
        "outcomes": [outcomes[name] for name in BENCHMARKS if name in outcomes],
    }
    results_path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    doc_path = out_dir / "performance.md" if args.quick else REPO / "docs" / "performance.md"
    write_doc(doc_path, document)
    print(f"[bench] wrote {results_path.relative_to(REPO)} and {doc_path.relative_to(REPO)}")  # noqa: T201
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

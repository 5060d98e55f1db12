"""The benchmark's results file and the README region rendered from it (standard library only,
Python 3.9+: test_readme.py imports this with nothing installed).

``bench/results.json`` holds what the benches measured, never typed by hand:

- ``runs``: one entry per run whose rows are still in the file: ``id``, ``command``, ``date``
  (UTC, ISO 8601), ``commit`` (short hash, ``+ uncommitted changes`` when the measured modules
  differed from it), ``machine``, ``cores``, ``python``, ``peers`` (distribution -> version),
  ``load_start`` and ``load_end`` (``os.getloadavg()``: 1, 5 and 15 minutes), ``quick``;
- ``rows``: one per figure, in the order of ``SECTIONS`` and then of measurement: ``run`` (the
  id of its run), ``section``, ``id``, ``what``, ``ours``, ``against``, ``ratio`` (display
  text), ``target`` (display text, ``""`` for none), ``met`` (true, false, or null for a row
  with no target) and ``note`` (shown after the verdict, ``""`` for none).

A run replaces the rows of the sections it measured and keeps the others (``bench/run --only
mcp`` leaves the import rows alone; ``python bench/isolation.py`` writes only its own), and
runs no row refers to any more are dropped.  ``bench/run --readme`` rewrites the README's
region between ``BEGIN`` and ``END`` from the file; test_readme.py holds the two equal.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results.json")
README = os.path.join(ROOT, "README.md")
BEGIN = "<!-- bench:begin: generated from bench/results.json by `bench/run --readme` -->"
END = "<!-- bench:end -->"

# The table's order: bench.py's sections, with the journal and isolation benches where a reader
# of the executor's rows looks for them, and scaleout.py's (the server under uvicorn's workers,
# the conformance run's time) after the MCP ones.
SECTIONS = [
    "import",
    "schema",
    "validation",
    "patterns",
    "executor",
    "journal",
    "isolation",
    "mcp",
    "http",
    "scaleout",
    "conformance",
]

FIELDS = ("what", "ours", "against", "ratio", "target", "met", "note")


def row(
    section: str,
    id: str,
    what: str,
    ours: str,
    against: str = "",
    ratio: str = "",
    target: str = "",
    met: bool | None = None,
    note: str = "",
) -> dict[str, Any]:
    """One figure of the table (``met`` None: information, no target)."""
    if section not in SECTIONS:
        raise ValueError(f"bench: unknown section {section!r}")
    return {
        "section": section,
        "id": id,
        "what": what,
        "ours": ours,
        "against": against,
        "ratio": ratio,
        "target": target,
        "met": met,
        "note": note,
    }


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, *args], capture_output=True, text=True, timeout=10
        ).stdout
    except Exception:
        return ""
    return out.strip()


def commit() -> str:
    """The short commit measured, saying so when the measured modules differ from it."""
    head = _git("rev-parse", "--short", "HEAD") or "?"
    modules = ["agenttool.py", "agenttool_mcp.py", "agenttool_adapters.py", "bench"]
    dirty = _git("status", "--porcelain", "--", *modules)
    # the results file itself is rewritten by every run: it does not make the code differ
    dirty = "\n".join(ln for ln in dirty.splitlines() if not ln.endswith("results.json"))
    return head + (" + uncommitted changes" if dirty else "")


def cpu() -> str:
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return name


def load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return []


def start_run(command: str, peers: Sequence[str] = (), quick: bool = False) -> dict[str, Any]:
    """A run's description, taken when it starts (``finish_run`` adds the end's load)."""
    versions = {}
    if peers:
        import importlib.metadata

        for p in peers:
            try:
                versions[p] = importlib.metadata.version(p)
            except importlib.metadata.PackageNotFoundError:
                versions[p] = "absent"
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return {
        "id": f"{command} {now.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        "command": command,
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "machine": f"{platform.system()} {platform.release()}, {cpu()}",
        "cores": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "peers": versions,
        "load_start": load(),
        "load_end": [],
        "quick": quick,
    }


def finish_run(run: dict[str, Any]) -> None:
    run["load_end"] = load()


def read(path: str = RESULTS) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
    except FileNotFoundError:
        data = {"format": 1, "runs": [], "rows": []}
    return data


def merge(
    data: dict[str, Any],
    run: dict[str, Any],
    rows: list[dict[str, Any]],
    sections: Sequence[str] = (),
) -> None:
    """The rows of one run in place of those of the sections it measured (``sections``, or
    those of its rows): a section the run measured and found nothing in loses its old rows."""
    measured = set(sections) | {r["section"] for r in rows}
    kept = [r for r in data["rows"] if r["section"] not in measured]
    new = [dict(r, run=run["id"]) for r in rows]
    order = {s: i for i, s in enumerate(SECTIONS)}
    every = kept + new
    every.sort(key=lambda r: order[r["section"]])  # stable: measurement order within a section
    data["rows"] = every
    used = {r["run"] for r in every}
    runs = [r for r in data["runs"] if r["id"] != run["id"]] + [run]
    data["runs"] = [r for r in runs if r["id"] in used]


def write(
    run: dict[str, Any],
    rows: list[dict[str, Any]],
    path: str = RESULTS,
    sections: Sequence[str] = (),
) -> dict[str, Any]:
    """Merge one run's rows into the results file and write it."""
    data = read(path)
    merge(data, run, rows, sections)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return data


# ----------------------------------------------------------------------------------------------
# The README region
# ----------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _load(values: list[float]) -> str:
    return " / ".join(f"{x:.2f}" for x in values) if values else "unknown"


def _run_line(run: dict[str, Any], sections: list[str]) -> str:
    peers = run.get("peers") or {}
    against = ""
    if peers:
        against = "; peers " + ", ".join(f"{p} {v}" for p, v in peers.items())
    quick = " with `--quick` (fewer rounds, rougher figures)" if run.get("quick") else ""
    return (
        f"- `{run['command']}`{quick} ({', '.join(sections)}): {run['date'][:16].replace('T', ' ')}"
        f" UTC at commit {run['commit']}; {run['machine']}, {run['cores']} cores, {run['python']}"
        f"{against}; load average {_load(run['load_start'])} at the start and"
        f" {_load(run['load_end'])} at the end (1, 5 and 15 minutes)"
    )


def verdict(r: dict[str, Any]) -> str:
    if r["met"] is None:
        text = r["target"]
    else:
        text = (r["target"] + ": " if r["target"] else "") + ("met" if r["met"] else "**missed**")
    if r["note"]:
        text += f" ({r['note']})" if text else r["note"]
    return text


def render(data: dict[str, Any]) -> str:
    """The README's region, markers included, from the results file's contents."""
    runs = {r["id"]: r for r in data["runs"]}
    sections: dict[str, list[str]] = {}
    for r in data["rows"]:
        got = sections.setdefault(r["run"], [])
        if r["section"] not in got:
            got.append(r["section"])
    lines = [
        BEGIN,
        "",
        "Every figure below is the committed `bench/results.json`, written by the runs it lists "
        "(machine, date, commit and the load on the machine while it ran: a load above the core "
        "count means other work shared the cores and the figures are noisier, in-process ones "
        "being best rounds):",
        "",
    ]
    lines += [_run_line(runs[i], s) for i, s in sections.items()]
    missed = [r for r in data["rows"] if r["met"] is False]
    met = [r for r in data["rows"] if r["met"] is True]
    lines += [
        "",
        f"{len(met)} targets met and {len(missed)} missed"
        + (": " + "; ".join(r["what"] for r in missed) + "." if missed else "."),
        "",
        "| what | agenttool | against | ratio | target |",
        "|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        cells = [r["what"], r["ours"], r["against"], r["ratio"], verdict(r)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", END]
    return "\n".join(lines)


def region(readme_text: str) -> str:
    """The README's generated region as it stands, markers included."""
    start = readme_text.index(BEGIN)
    end = readme_text.index(END, start) + len(END)
    return readme_text[start:end]


def rewrite_readme(results: str = RESULTS, readme: str = README) -> bool:
    """Rewrite the README's region from the results file; whether anything changed."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    old = region(text)
    new = render(read(results))
    if old == new:
        return False
    with open(readme, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))
    return True


if __name__ == "__main__":
    changed = rewrite_readme()
    print("README.md: region rewritten" if changed else "README.md: region already current")
    sys.exit(0)

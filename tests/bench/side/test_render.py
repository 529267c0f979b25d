"""From a result file to the RESULTS.md section and plots: tables with ratios to the best peer
in the same state and to the raw local read, goals met, missed or not checkable, and a section
that replaces the previous one and keeps the rest of the document."""

from pathlib import Path

from bench.side import render
from bench.side.results import Figure, Profile, RunResult

NOT_BUILT = "n/a (not built): DoraFileSystem has no short_circuit= option"


def figure(row: str, kind: str, state: str, reps: list[float], **extra: object) -> Figure:
    defaults: dict[str, object] = {"metric": "MiB/s", "unit": "MiB/s", "better": "higher"}
    fields = {**defaults, **extra}
    return Figure(
        "seq-read",
        row,
        str(fields["metric"]),
        str(fields["unit"]),
        str(fields["better"]),
        0,
        reps=reps,
        params={"size_mb": 32},
        contender=row.split(",", maxsplit=1)[0],
        kind=kind,
        state=state,
        na=fields.get("na"),  # type: ignore[arg-type]
        command=".venv/bin/python -m bench.side --quick --workload seq-read --latency-ms 0",
    )


def run() -> RunResult:
    result = RunResult(
        mode="quick",
        command=".venv/bin/python -m bench.side --quick",
        settings={"reps": 3, "latencies_ms": [0]},
        machine={"cpus": 2, "load_before": [9.0], "load_after": [11.0], "commit": "abc"},
        started="2026-11-23T18:00:00+00:00",
        finished="2026-11-23T18:05:00+00:00",
        label="smoke run",
        contenders={"dora fsspec": "ok", "dora fsspec + short-circuit": NOT_BUILT},
    )
    result.figures = [
        figure("raw local file", "limit", "", [1000, 900, 1100]),
        figure("s3fs", "peer", "", [50, 40, 60]),
        figure("blockcache::s3, cold", "peer", "cold", [20, 25, 30]),
        figure("blockcache::s3, warm", "peer", "warm", [400, 500, 450]),
        figure("dora fsspec, cold", "dora", "cold", [40, 45, 50]),
        figure("dora fsspec, warm", "dora", "warm", [100, 100, 120]),
        figure("dora fsspec + short-circuit, warm", "dora", "warm", [], na=NOT_BUILT),
    ]
    return result


def test_table_has_medians_ranges_and_ratios_to_peers_in_the_same_state() -> None:
    lines = render.table(run().figures)
    rows = {line.split(" | ")[0].strip("| "): line for line in lines if line.startswith("| ")}
    assert rows["contender"].endswith("| MiB/s | MiB/s / best peer | MiB/s / raw local |")
    # warm against the best warm peer (blockcache 450), cold against s3fs (50, beats 25)
    assert rows["dora fsspec, warm"] == "| dora fsspec, warm | 100 (100-120) | 0.222x | 0.1x |"
    assert (
        rows["dora fsspec, cold"] == "| dora fsspec, cold | 45.00 (40.00-50.00) | 0.9x | 0.045x |"
    )
    assert "| n/a (not built) |" in rows["dora fsspec + short-circuit, warm"]
    assert lines[-1] == "Best peer (MiB/s, same state): blockcache::s3, warm, s3fs."


def test_goals_are_met_missed_or_not_checkable() -> None:
    result = run()
    result.profiles = [
        Profile("p1", "seq-read", "dora fsspec, warm", 0, "worker", 1, 10, "x.raw",
                [("send (h11/_conn.py)", 0.4)], [("run (asyncio/events.py)", 0.9)])
    ]  # fmt: skip
    result.figures[5].profile = "p1"
    text = "\n".join(render.goals_section(result, {"seq-warm": "socket sends dominate"}))
    seq_warm = next(line for line in text.splitlines() if "warm sequential read" in line)
    assert "| **no** |" in seq_warm
    assert "socket sends dominate<br>py-spy (worker): send (h11/_conn.py) 40%" in seq_warm
    cold = next(line for line in text.splitlines() if "cold sequential read" in line)
    assert "90% (45 vs 50 MiB/s, 32 MB)" in cold and "| yes |" in cold
    near = next(line for line in text.splitlines() if "near-cache" in line and "info" in line)
    assert "| n/a |" in near


def test_render_replaces_its_section_and_keeps_the_rest(tmp_path: Path) -> None:
    result_path = tmp_path / "run.json"
    run().save(result_path)
    results_md = tmp_path / "RESULTS.md"
    results_md.write_text("# Benchmark results\n\nIntro.\n\n## Page store\n\nhand-written\n")
    for _ in range(2):
        render.render_run(result_path, results_md, tmp_path / "plots", tmp_path / "none.json")
    text = results_md.read_text()
    assert text.count(render.BEGIN) == 1 and text.count(render.END) == 1
    assert text.index("Intro.") < text.index(render.BEGIN) < text.index("## Page store")
    assert "hand-written" in text and "> smoke run" in text
    assert "Not available in this build: *dora fsspec + short-circuit*" in text
    assert (tmp_path / "plots" / "seq-read.png").stat().st_size > 0
    assert "![seq-read](plots/seq-read.png)" in text


def test_a_count_measured_once_shows_without_a_range() -> None:
    count = Figure(
        "growth-status", "dora memory tier", "memory/status", "B", "lower", None, [752.0]
    )
    assert render.cell(count) == "752"
    assert render.cell(figure("s3fs", "peer", "", [50, 40, 60])) == "50.00 (40.00-60.00)"

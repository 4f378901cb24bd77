"""Run Snakemake with one progress line a person can follow; its job records go to a log file.

    python -m workflow_scripts.console [--verbose] [--log FILE] [--report FILE] -- SNAKEMAKE_ARGS...

e.g. ``python -m workflow_scripts.console --report demo/results/report.html -- --directory demo
--workflow-profile profiles/local`` (what ``make demo`` runs). While Snakemake runs, the terminal
shows one line: jobs done out of the total, the stages of the jobs running (the ``rules/<stage>.smk``
that defines their rules) and the time elapsed. Everything Snakemake prints goes to the log file
(default ``<directory>/results/logs/snakemake.log``); ``--verbose`` shows it on the terminal as
well. A failure is still shown whole: the failing job's error block and its log (the profile's
``show-failed-logs``). At the end: where the report, the tables and the log are, and the study's
first three findings (``results/tables/findings.md``). The exit status is Snakemake's.
"""

from __future__ import annotations

import argparse
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

INCLUDE = re.compile(r'^include:\s*"rules/(\w+)\.smk"')
RULE = re.compile(r"^(?:rule|checkpoint) (\w+):")
STAMP = re.compile(r"^\[\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\]$")
JOB_START = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
JOB_ID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")
STEPS = re.compile(r"^(\d+) of (\d+) steps")
TOTAL = re.compile(r"^total\s+(\d+)$")
FAILURE = re.compile(r"^(Error|RuleException|WorkflowError|Logfile |Exiting because|\w+(Error|Exception)\b)")
COMPLETE_LOG = re.compile(r"^Complete log\(s\): (.+)$")
FINDINGS = "results/tables/findings.md"
TABLES = "results/tables"


def rule_stages(snakefile: Path) -> dict[str, str]:
    """Each rule's stage: the ``rules/<stage>.smk`` the Snakefile includes that defines it; the
    rules writing a step's resolved settings (``*_settings``) are the stage "settings"."""
    stages: dict[str, str] = {}
    if not snakefile.is_file():
        return stages
    for line in snakefile.read_text().splitlines():
        smk = snakefile.parent / "rules" / f"{m.group(1)}.smk" if (m := INCLUDE.match(line)) else None
        if smk is not None and smk.is_file():
            for rule_line in smk.read_text().splitlines():
                if r := RULE.match(rule_line):
                    stages.setdefault(r.group(1), "settings" if r.group(1).endswith("_settings") else smk.stem)
    return stages


@dataclass
class Progress:
    """What Snakemake's output has said so far: jobs done, total, running jobs, failure text."""

    stages: dict[str, str]
    activity: str | None = None  # shown instead of the stages (the report's run)
    total: int | None = None
    done: int = 0
    running: dict[int, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    complete_log: str | None = None
    failed: bool = False
    _starting: str | None = None
    _shown: str = "starting"
    _echo: bool = False

    def stage(self, rule: str) -> str:
        return self.stages.get(rule, rule)

    def feed(self, line: str) -> bool:
        """Take one line of Snakemake's output; True if it belongs to a failure shown on the terminal."""
        text = line.rstrip("\n")
        if m := JOB_START.match(text):
            self._starting, self._echo = m.group(1), False
            if self.stage(m.group(1)) not in self.order:
                self.order.append(self.stage(m.group(1)))
        elif (m := JOB_ID.match(text)) and self._starting is not None:
            self.running[int(m.group(1))] = self._starting
            self._starting = None
        elif m := FINISHED.match(text):
            self.running.pop(int(m.group(1)), None)
            self._echo = False
        elif m := STEPS.match(text):
            self.done, self.total = int(m.group(1)), int(m.group(2))
        elif (m := TOTAL.match(text)) and self.total is None:
            self.total = int(m.group(1))
        elif m := COMPLETE_LOG.match(text):
            self.complete_log = m.group(1)
        elif FAILURE.match(text):
            self._echo = self.failed = True
        return self._echo and not STAMP.match(text)

    def now_running(self) -> str:
        """The stages of the running jobs, in the order the run reached them."""
        if self.activity is not None:
            return self.activity
        running = {self.stage(rule) for rule in self.running.values()}
        # between one job's end and the next one's start, the stages shown stay
        self._shown = "+".join(s for s in self.order if s in running) or self._shown
        return self._shown

    def line(self, elapsed: float) -> str:
        total = self.total if self.total is not None else "?"
        share = f" {self.done / self.total:.0%}" if self.total else ""
        return f"[{self.done}/{total}{share}] {self.now_running()} | {clock(elapsed)} elapsed"


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


class Display:
    """The progress line: redrawn in place on a terminal; elsewhere a line when the stages change
    (at most every ``gap`` seconds) or every ``interval`` seconds, so a CI log stays short."""

    def __init__(self, out: TextIO, interval: float = 30.0, gap: float = 5.0) -> None:
        self.out, self.interval, self.gap = out, interval, gap
        self.tty = out.isatty()
        self.shown, self.last, self.last_text = "", 0.0, ""

    def show(self, text: str, key: str) -> None:
        now = time.monotonic()
        if self.tty:
            self.out.write("\r\033[K" + text)
        elif (key != self.shown and now - self.last >= self.gap) or now - self.last >= self.interval:
            self.out.write(text + "\n")
            self.last, self.last_text = now, text
        else:
            return
        self.shown = key
        self.out.flush()

    def finish(self, text: str) -> None:
        """The last state, on a line of its own."""
        if self.tty:
            self.out.write("\r\033[K" + text + "\n")
        elif text != self.last_text:
            self.out.write(text + "\n")
        self.shown = ""
        self.out.flush()

    def echo(self, text: str) -> None:
        self.clear()
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    def clear(self) -> None:
        if self.tty and self.shown:
            self.out.write("\r\033[K")
            self.shown = ""


def follow(command: list[str], log: TextIO, progress: Progress, display: Display | None, started: float) -> int:
    """Run ``command``, every line to ``log``; the progress line (time counted from ``started``) and
    failures to ``display`` (None: every line to the terminal). Returns the exit status."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            line = ""
        except KeyboardInterrupt:  # Snakemake got the same SIGINT: let it stop its jobs and say so
            continue
        if line is None:
            break
        if line:
            log.write(line)
            log.flush()
            if progress.feed(line) and display is not None:
                display.echo(line)
            elif display is None:
                sys.stdout.write(line)
        if display is not None:
            display.show(progress.line(time.monotonic() - started), progress.now_running())
    if display is not None:
        display.finish(progress.line(time.monotonic() - started))
    return proc.wait()


def headline_findings(path: Path, n: int = 3) -> list[str]:
    """The first ``n`` findings of findings.md's first section (its ``- `` items)."""
    if not path.is_file():
        return []
    items = [line[2:].strip() for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("- ")]
    return items[:n]


def option(args: Sequence[str], names: tuple[str, str], default: str) -> Path:
    """The value of Snakemake's option ``names`` (long, short) among its arguments."""
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith(names[0] + "="):
            return Path(arg.split("=", 1)[1])
    return Path(default)


def closing(directory: Path, report: Path | None, log: Path, progress: Progress, elapsed: float) -> str:
    if progress.total is None:
        lines = ["Nothing to be done: every output is up to date."]
    else:
        lines = [f"Finished {progress.done} of {progress.total} jobs in {clock(elapsed)}."]
    if report is not None and report.is_file():
        lines.append(f"Report:  {report}")
    if (directory / TABLES).is_dir():
        lines.append(f"Tables:  {directory / TABLES}/")
    lines.append(f"Log:     {log}" + (f" (Snakemake's own: {progress.complete_log})" if progress.complete_log else ""))
    findings = headline_findings(directory / FINDINGS)
    if findings:
        lines += ["Findings:", *(f"  {i}. {text}" for i, text in enumerate(findings, 1))]
        lines.append(f"  (all of them: {directory / FINDINGS})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.console", description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="show Snakemake's job records on the terminal too")
    parser.add_argument("--log", type=Path, default=None, help="file for Snakemake's output")
    parser.add_argument("--report", type=Path, default=None, help="write Snakemake's HTML report here after the run")
    parser.add_argument("--snakemake", default="snakemake", help="the Snakemake command")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="Snakemake's arguments, after --")
    args = parser.parse_args(argv)
    smk_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    directory = option(smk_args, ("--directory", "-d"), ".")
    log_path = args.log or directory / "results" / "logs" / "snakemake.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    progress = Progress(rule_stages(option(smk_args, ("--snakefile", "-s"), "Snakefile")))
    display = None if args.verbose else Display(sys.stdout)
    print(f"Snakemake's output: {log_path}" + ("" if args.verbose else " (--verbose shows it here)"), flush=True)
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        status = follow([args.snakemake, *smk_args], log, progress, display, started)
        if status == 0 and args.report is not None:
            report = args.report.resolve()
            status = follow(
                [args.snakemake, *smk_args, "--report", str(report)], log, Progress({}, "report"), display, started
            )
    if status != 0:
        if not progress.failed:
            print("".join(log_path.read_text(encoding="utf-8").splitlines(keepends=True)[-40:]), end="")
        print(f"Snakemake stopped (exit status {status}); its whole output: {log_path}", file=sys.stderr)
        sys.exit(status)
    print(closing(directory, args.report, log_path, progress, time.monotonic() - started))


if __name__ == "__main__":
    main()

"""Run a step's CLI in a fork of an interpreter that has already imported torch and transformers.

    python -m workflow_scripts.preload workflow_scripts.finetune.finetune --settings S.yaml ...

Importing torch and transformers costs about 3 CPU seconds per process, as much as a small
fine-tuning run itself. With ``WORKFLOW_PRELOAD=1`` the first such command starts a server that
imports them once (no model, no thread pool, no CUDA) and waits on a Unix socket; every command
then sends it its module, arguments, working directory, environment, ``sys.path`` and its own
stdin/stdout/stderr, and the server forks a process that runs the module as ``python -m`` would.
Our own modules are imported anew in each fork, from the caller's ``sys.path``, so code edits
apply at once; the server leaves when idle. Signals sent to the command reach the fork, and the
command exits with the fork's status. Without the variable (the default) the module simply runs in
this process.

Inside the job step of a Slurm group job (the workflow puts fine-tuning runs in a group, and the
allocation's Snakemake sets ``WORKFLOW_PRELOAD_GROUP_JOB=1``) preloading is on unless
``WORKFLOW_PRELOAD=0``, and the server belongs to the step: its socket is keyed to ``SLURM_JOB_ID``
and ``SLURM_STEP_ID``, so no run of another allocation or step ever reaches it. It starts with the
step's first run, in its own session (Snakemake, stopping a failed run's process group, never
reaches it), and leaves within seconds of the step's task (``SLURM_TASK_PID``, the group job's
Snakemake) exiting, whatever way Slurm tracks the step's processes: it cannot outlive the group
job, and nothing but its idle timeout ends it earlier.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .unix_messages import receive_message, send_message

ENABLE = "WORKFLOW_PRELOAD"
# Set in every fork of the server, for the run's provenance.
PRELOADED = "WORKFLOW_PRELOADED"
GROUP_JOB = "WORKFLOW_PRELOAD_GROUP_JOB"
SLURM_STEP = ("SLURM_JOB_ID", "SLURM_STEP_ID")
IDLE_SECONDS = float(os.environ.get("WORKFLOW_PRELOAD_IDLE", "120"))
START_SECONDS = 120.0
# sockaddr_un's sun_path on Linux, its closing NUL included
SUN_PATH_BYTES = 108
LIFELINE_SECONDS = 2.0
POLL_SECONDS = 0.2  # how often a run's end is looked for where no pidfd tells it at once
# Variables read while torch and transformers import: a server started under other values is another server.
IMPORT_TIME_PREFIXES = (
    *("OMP_", "MKL_", "OPENBLAS_", "ATEN_", "ONEDNN_", "DNNL_", "CUBLAS_", "WORKFLOW_DETERMINISTIC"),
    *("TORCH", "PYTORCH", "CUDA", "HF_", "TRANSFORMERS", "LD_"),
)
# Read when CUDA initialises, never in the server: runs on different cards (workflow_scripts/cards) share one.
PER_RUN = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
# Under ``python -m`` this module's __name__ is __main__; its spec keeps the real name.
MODULE = __spec__.name
PACKAGE = MODULE.split(".")[0]


def preloads() -> None:
    """What every fine-tuning run imports (measured with ``python -X importtime``). Nothing here may
    run a parallel torch operation: a fork of a process whose thread pool has started can hang."""
    import seqeval.metrics  # noqa: F401  (with scikit-learn: 1.3 s, for every tagging run)
    import torch
    import transformers  # noqa: F401
    from transformers import (  # noqa: F401
        AutoConfig,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
    )
    from transformers.models.bert import modeling_bert, tokenization_bert  # noqa: F401
    from transformers.models.modernbert import modeling_modernbert  # noqa: F401
    from transformers.models.roberta import modeling_roberta, tokenization_roberta  # noqa: F401

    # The first optimizer imports torch._dynamo and sympy (2.6 s).
    torch.optim.AdamW(torch.nn.Linear(1, 1).parameters())
    # AutoTokenizer's and every tokenizer's modules, and transformers' table of checkpoint key
    # renamings (hundreds of regular expressions) that the first from_pretrained of a process
    # builds: together about 0.1 CPU s, and 0.3-0.6 s of a run's time on a busy 2-core machine.
    from transformers import (  # noqa: F401
        AutoTokenizer,
        convert_slow_tokenizer,
        tokenization_utils_tokenizers,
    )
    from transformers.conversion_mapping import get_checkpoint_conversion_mapping

    get_checkpoint_conversion_mapping("bert")


def socket_path() -> Path:
    keyed = [k for k in os.environ if (k.startswith(IMPORT_TIME_PREFIXES) and k not in PER_RUN) or k in SLURM_STEP]
    env = sorted((k, os.environ[k]) for k in keyed)
    key = json.dumps([os.path.realpath(sys.executable), sys.prefix, env])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"workflow-preload-{os.getuid()}-{digest}.sock"


def run_module(module: str, args: list[str]) -> None:
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def worker(request: dict, fds: list[int]) -> None:
    """In the fork: become the caller's process (stdio, directory, environment, path), then run."""
    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ[PRELOADED] = "1"
    sys.path[:] = request["path"]
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    code = 0
    try:
        run_module(request["module"], request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        atexit._run_exitfuncs()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code)


def supervise(conn: socket.socket) -> None:
    """In the fork that holds the connection: start the worker, report its pid, then its status."""
    request, fds = receive_message(conn, with_fds=3)
    if request is None:
        os._exit(1)
    pid = os.fork()
    if pid == 0:
        conn.close()
        worker(request, fds)
    for fd in fds:
        os.close(fd)
    send_message(conn, {"pid": pid})
    with exit_notice(pid) as exit_fd:
        status = wait_for(pid, conn, exit_fd)
    with contextlib.suppress(OSError):
        send_message(conn, {"status": os.waitstatus_to_exitcode(status)})
    os._exit(0)


@contextlib.contextmanager
def exit_notice(pid: int):
    """A descriptor that becomes readable when ``pid`` exits (Linux's pidfd), or None where there is none."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def wait_for(pid: int, conn: socket.socket, exit_fd: int | None) -> int:
    """The run's wait status once it exits; if ``conn`` closes first (the command was SIGKILLed), the run is ended."""
    watched: list = [conn] if exit_fd is None else [conn, exit_fd]
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        readable, _, _ = select.select(watched, [], [], None if exit_fd is not None else POLL_SECONDS)
        if conn in readable and not conn.recv(1):
            watched.remove(conn)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


def step_alive() -> bool:
    """Whether the Slurm job step the server belongs to still runs: its task (a group job's
    Snakemake) is ``SLURM_TASK_PID``. A server started outside a step has no step to outlive."""
    pid = int(os.environ.get("SLURM_TASK_PID", "0"))
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve(path: Path) -> None:
    # an import asking torch for a GPU asks NVML: CUDA initialised here would fail in every fork
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    preloads()
    sys.stdout.flush()
    sys.stderr.flush()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with address(path) as name:
        server.bind(name)
    bound = path.stat().st_ino
    server.listen(64)
    # In a Slurm job step, look every few seconds whether the step's task still runs.
    server.settimeout(min(IDLE_SECONDS, LIFELINE_SECONDS) if "SLURM_TASK_PID" in os.environ else IDLE_SECONDS)
    children: set[int] = set()
    last = time.monotonic()
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if not step_alive():
                    return
                children = {pid for pid in children if os.waitpid(pid, os.WNOHANG) == (0, 0)}
                if not children and time.monotonic() - last >= IDLE_SECONDS:
                    return
                continue
            last = time.monotonic()
            conn.settimeout(None)
            pid = os.fork()
            if pid == 0:
                try:
                    server.close()
                    supervise(conn)
                finally:
                    os._exit(1)
            conn.close()
            children.add(pid)
            children = {p for p in children if os.waitpid(p, os.WNOHANG) == (0, 0)}
    finally:
        # Unlink first: a command that connects after this starts a new server instead of waiting here.
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_ino == bound:
                path.unlink()
        server.close()


@contextlib.contextmanager
def address(path: Path):
    """``path`` as a Unix socket address. One longer than the 108 bytes an address holds (a deep TMPDIR, as a
    Slurm job's or a pytest-xdist worker's) is reached through an open descriptor of its folder."""
    if len(os.fsencode(path)) < SUN_PATH_BYTES:
        yield str(path)
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


def connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with address(path) as name:
            sock.connect(name)
    except OSError:
        sock.close()
        return None
    return sock


def server_connection(path: Path) -> socket.socket | None:
    """A connection to the running server, started first if none answers; None if none starts."""
    sock = connect(path)
    if sock is not None:
        return sock
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = connect(path)
        if sock is not None:
            return sock
        with open(f"{path}.log", "ab") as server_log:
            server = subprocess.Popen(
                [sys.executable, "-m", MODULE, "--serve", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=server_log,
                stderr=server_log,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and server.poll() is None:
            sock = connect(path)
            if sock is not None:
                return sock
            time.sleep(0.05)
    return None


def delegate(sock: socket.socket, module: str, args: list[str]) -> int | None:
    """The run's exit status, or None if the server closed before starting it."""
    request = {"module": module, "args": args, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path}
    try:
        send_message(sock, request, fds=[0, 1, 2])
        started, _ = receive_message(sock)
    except OSError:
        return None
    if started is None:
        return None
    pid = started["pid"]

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    finished, _ = receive_message(sock)
    if finished is None:
        print(f"error: the preloaded process running {module} vanished without a status", file=sys.stderr)
        return 1
    return finished["status"]


def exit_like(status: int) -> None:
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def enabled(env: dict[str, str]) -> bool:
    """Preloading on: by ``WORKFLOW_PRELOAD``; under Slurm by default in a group job's step, whose
    end bounds the server's life, and never in any other Slurm job."""
    setting = env.get(ENABLE, "")
    if "SLURM_JOB_ID" in env:
        return env.get(GROUP_JOB) == "1" and "SLURM_STEP_ID" in env and setting != "0"
    return setting not in ("", "0")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--serve"]:
        serve(Path(argv[1]))
        return
    if not argv:
        sys.exit("usage: python -m workflow_scripts.preload MODULE [ARGS...]")
    module, args = argv[0], argv[1:]
    if enabled(dict(os.environ)):
        # A second try covers a server that was closing for idleness as this command connected.
        path = socket_path()
        for _ in range(2):
            sock = server_connection(path)
            if sock is None:
                print(
                    f"warning: the preloaded interpreter did not start (its log: {path}.log); "
                    f"{module} runs in this process",
                    file=sys.stderr,
                )
                break
            with sock:
                status = delegate(sock, module, args)
            if status is not None:
                exit_like(status)
    run_module(module, args)


if __name__ == "__main__":
    main(sys.argv[1:])

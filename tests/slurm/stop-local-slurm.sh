#!/usr/bin/env bash
# stop-local-slurm.sh DIR [--purge]
#
# Stop what start-local-slurm.sh DIR started, and only that. Every PID comes from
# DIR/pids/NAME.pid and is signalled only if it is NAME and carries
# LOCAL_SLURM_DIR=DIR in its environment; nothing is killed by name. Order: cancel
# the queue, slurmd, slurmctld, slurmdbd, mariadbd, munged; then leftover slurmstepd
# processes of this cluster (they ignore SIGTERM), then the /etc/slurm/slurm.conf
# symlink if it points into DIR. --purge also deletes DIR (only if start made it).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [--purge]" >&2; exit 2; }
DIR=$(realpath -m -- "$1"); PURGE=${2:-}
export SLURM_CONF=$DIR/slurm.conf
[ -d "$DIR/pids" ] || { echo "nothing to stop: no $DIR/pids"; exit 0; }

# ours PID [NAME]: a live process started for this DIR (and called NAME)
ours() {
    local pid=$1 name=${2:-} exe
    [ -r "/proc/$pid/environ" ] || return 1
    tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qxF "LOCAL_SLURM_DIR=$DIR" || return 1
    [ -z "$name" ] && return 0
    exe=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | head -1)
    [ "$(basename -- "$exe")" = "$name" ]
}
# stop_pid PID DESC: SIGTERM, up to 30 s for it to exit, then SIGKILL
stop_pid() {
    local pid=$1 desc=$2 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || { echo "stopped $desc (pid $pid)"; return 0; }
        sleep 0.3
    done
    echo "$desc (pid $pid) ignored SIGTERM for 30 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
}
# descendants PID: every process below PID in the process tree
descendants() {
    ps -eo pid=,ppid= | awk -v root="$1" '
        { parent[$1] = $2 }
        END { for (p in parent) { q = p; while (q in parent && q > 1) {
                  q = parent[q]; if (q == root) { print p; break } } } }' | tr '\n' ' '
}

# 1. the queue: every job of this private cluster is a test's
if [ -s "$DIR/pids/slurmctld.pid" ] && ours "$(cat "$DIR/pids/slurmctld.pid")" slurmctld; then
    jobs=$(/usr/bin/squeue -h -o %i 2>/dev/null)
    if [ -n "$jobs" ]; then
        /usr/bin/scancel --full $jobs 2>/dev/null
        for _ in $(seq 40); do [ -z "$(/usr/bin/squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
fi
# 2. the daemons, last started first
for n in slurmd slurmctld slurmdbd mariadbd munged; do
    pf=$DIR/pids/$n.pid
    [ -s "$pf" ] || continue
    pid=$(cat "$pf")
    if ours "$pid" "$n"; then stop_pid "$pid" "$n"; else echo "$n (pid $pid) not running"; fi
    rm -f "$pf"
done
# 3. slurmstepd of this cluster left behind: it rewrites its process title, so it is
#    recognised by its working directory (DIR, from slurmd) or DIR/log/slurmd.log held
#    open; its job processes go first, so nothing is orphaned
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    exe=$(tr '\0' '\n' < "$p/cmdline" 2>/dev/null | head -1)
    case "$exe" in slurmstepd*) ;; *) continue ;; esac
    if [ "$(readlink "$p/cwd" 2>/dev/null)" = "$DIR" ] ||
       ls -l "$p/fd" 2>/dev/null | grep -qF -- "-> $DIR/log/slurmd.log"; then
        kids=$(descendants "$pid")
        echo "leftover $exe (pid $pid), job processes: ${kids:-none}: SIGKILL"
        [ -n "$kids" ] && kill -KILL $kids 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
    fi
done
# 4. the /etc/slurm/slurm.conf symlink, if it is this cluster's
if [ -L /etc/slurm/slurm.conf ] && [ "$(readlink /etc/slurm/slurm.conf)" = "$DIR/slurm.conf" ]; then
    rm -f /etc/slurm/slurm.conf && echo "removed /etc/slurm/slurm.conf -> $DIR/slurm.conf"
fi
if [ "$PURGE" = "--purge" ]; then
    if [ -f "$DIR/.local-slurm" ]; then rm -rf -- "$DIR" && echo "purged $DIR"
    else echo "not purging $DIR: it has no .local-slurm marker" >&2; fi
fi
exit 0

#!/usr/bin/env bash
# start-local-slurm.sh DIR
#
# A real one-node Slurm cluster on localhost (Debian's slurm-wlm 22.05, munge,
# slurmdbd + MariaDB) for testing the `slurm` profile with the unmodified
# snakemake-executor-plugin-slurm. Runs as root: it installs the Debian packages
# it needs (apt-get update first) and the daemons run as root.
#
# Idempotent: installs only missing packages, rewrites the configs under DIR,
# starts only the daemons not already running from DIR, waits until the node is
# idle and accounting answers. stop-local-slurm.sh DIR stops exactly the PIDs
# recorded in DIR/pids/.
#
# DIR holds everything:
#   slurm.conf slurmdbd.conf env.sh   configs; `source DIR/env.sh` for the clients
#   bin/        sbatch, srun, sacct, ... wrappers that set SLURM_CONF
#   etc/        munge key of this cluster
#   munge/ db/ mysql/ state/          sockets, MariaDB data, Slurm state and spool
#   log/        every daemon's log    pids/   PIDs of the daemons started here
#
# Environment (defaults in brackets):
#   LOCAL_SLURM_PARTITIONS ["debug gpu"]  partitions over the one node; the first is
#                                         the default partition
#   LOCAL_SLURM_CLUSTER    [localcluster]
#   LOCAL_SLURM_ETC_LINK   [1]   symlink /etc/slurm/slurm.conf -> DIR/slurm.conf: the
#                                jobstep plugin drops SLURM_CONF from srun's
#                                environment inside a batch job, so srun there only
#                                finds the config where real clusters keep it. A
#                                regular file there is never replaced.
#   LOCAL_SLURM_CTLD_PORT [6817] LOCAL_SLURM_SLURMD_PORT [6818]
#   LOCAL_SLURM_DBD_PORT  [6819] LOCAL_SLURM_DB_PORT     [16033]
#   LOCAL_SLURM_TIMEOUT   [60]   seconds to wait for each daemon
set -euo pipefail
# No job control: a background `setsid cmd` keeps our process group, so setsid
# execs in place and $! is the daemon's own PID.
set +m

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "error: start-local-slurm.sh must run as root (it installs packages and runs the Slurm daemons)" >&2; exit 1; }

T0=$(date +%s.%N)
DIR=$(realpath -m -- "$1")
read -r -a PARTITIONS <<< "${LOCAL_SLURM_PARTITIONS:-debug gpu}"
CLUSTER=${LOCAL_SLURM_CLUSTER:-localcluster}
ETC_LINK=${LOCAL_SLURM_ETC_LINK:-1}
CTLD_PORT=${LOCAL_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${LOCAL_SLURM_SLURMD_PORT:-6818}
DBD_PORT=${LOCAL_SLURM_DBD_PORT:-6819}
DB_PORT=${LOCAL_SLURM_DB_PORT:-16033}
TIMEOUT=${LOCAL_SLURM_TIMEOUT:-60}
ETC_CONF=/etc/slurm/slurm.conf

log() { printf '[local-slurm %5ss] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN{printf "%.1f", a-b}')" "$*"; }
die() { echo "error: $*" >&2; exit 1; }

# ---------------------------------------------------------------- packages --
PKGS=(munge slurm-wlm slurm-client slurmctld slurmd slurmdbd mariadb-server mariadb-client)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    # Package scripts would start the system's munge/slurm/mariadb services; in
    # containers policy-rc.d prevents that, and we start our own below anyway.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
log "packages ok ($(slurmd -V))"

# ------------------------------------------------------------------ layout --
mkdir -p "$DIR"/{bin,etc,munge,mysql,log,pids,state/ctld,state/d}
chmod 755 "$DIR" "$DIR/munge" "$DIR/bin"
chmod 700 "$DIR/etc"
touch "$DIR/.local-slurm"   # stop-local-slurm.sh --purge deletes only marked dirs
[ -s "$DIR/etc/munge.key" ] || dd if=/dev/urandom of="$DIR/etc/munge.key" bs=1024 count=1 status=none
chmod 600 "$DIR/etc/munge.key"
MUNGE_SOCK=$DIR/munge/munge.socket.2
MYSOCK=$DIR/mysql/mysqld.sock
export SLURM_CONF=$DIR/slurm.conf
# Inherited by every daemon (and slurmstepd): the stop script checks it before it
# signals a recorded PID, so it never touches another cluster's processes.
export LOCAL_SLURM_DIR=$DIR

# ----------------------------------------------------------------- configs --
HOST=$(hostname -s)
# e.g. "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
NODE_LINE=$(slurmd -C | head -1)
case "$NODE_LINE" in NodeName=*) ;; *) die "unexpected 'slurmd -C' output: $NODE_LINE" ;; esac
NODE=${NODE_LINE#NodeName=}; NODE=${NODE%% *}

PARTITION_LINES=""
default=YES
for p in "${PARTITIONS[@]}"; do
    PARTITION_LINES+="PartitionName=$p Nodes=$NODE Default=$default MaxTime=INFINITE State=UP"$'\n'
    default=NO
done

cat > "$DIR/slurm.conf.new" <<CONF
# Written by tests/slurm/start-local-slurm.sh: one-node test cluster on localhost.
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d
SlurmctldPidFile=$DIR/state/slurmctld.pid
SlurmdPidFile=$DIR/state/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without it a job that asks for no memory takes the whole node.
DefMemPerCPU=1024
ReturnToService=2
MinJobAge=300
# The plugin reads job states from sacct: accounting must be real.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# With a private munge socket, slurmdbd connections take the socket from here.
AccountingStoragePass=$MUNGE_SOCK
JobCompType=jobcomp/none
$NODE_LINE NodeAddr=127.0.0.1 State=UNKNOWN
$PARTITION_LINES
CONF
CONF_CHANGED=0
cmp -s "$DIR/slurm.conf.new" "$DIR/slurm.conf" || CONF_CHANGED=1
mv "$DIR/slurm.conf.new" "$DIR/slurm.conf"
chmod 644 "$DIR/slurm.conf"

# slurmdbd has no option for its config: it reads slurmdbd.conf beside $SLURM_CONF,
# and refuses it unless it is mode 600.
cat > "$DIR/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/state/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
CONF
chmod 600 "$DIR/slurmdbd.conf"

for c in sbatch srun salloc squeue sacct sacctmgr scancel scontrol sinfo; do
    printf '#!/bin/sh\n: "${SLURM_CONF:=%s}"\nexport SLURM_CONF\nexec /usr/bin/%s "$@"\n' \
        "$DIR/slurm.conf" "$c" > "$DIR/bin/$c"
    chmod 755 "$DIR/bin/$c"
done
cat > "$DIR/env.sh" <<ENV
# source me: the Slurm client commands then talk to this test cluster
export SLURM_CONF=$DIR/slurm.conf
case ":\$PATH:" in *":$DIR/bin:"*) ;; *) export PATH=$DIR/bin:\$PATH ;; esac
ENV

if [ "$ETC_LINK" = 1 ]; then
    if [ -L "$ETC_CONF" ] || [ ! -e "$ETC_CONF" ]; then
        mkdir -p /etc/slurm
        ln -sfn "$DIR/slurm.conf" "$ETC_CONF"
    elif [ "$(realpath "$ETC_CONF")" != "$DIR/slurm.conf" ]; then
        echo "warning: $ETC_CONF is a regular file and is left alone; srun inside jobs will read it" >&2
    fi
fi
log "configs in $DIR ($NODE_LINE; partitions ${PARTITIONS[*]})"

# ------------------------------------------------------------------ daemons --
# running NAME: DIR/pids/NAME.pid holds a live process whose argv[0] is NAME
running() {
    local pf="$DIR/pids/$1.pid" pid exe
    [ -s "$pf" ] || return 1
    pid=$(cat "$pf")
    [ -r "/proc/$pid/cmdline" ] || return 1
    exe=$(tr '\0' '\n' < "/proc/$pid/cmdline" | head -1)
    [ "$(basename -- "$exe")" = "$1" ]
}
# start NAME CMD...: in its own session, no terminal, output to DIR/log/NAME.out
start() {
    local name=$1; shift
    if running "$name"; then
        log "$name already running (pid $(cat "$DIR/pids/$name.pid"))"
        return 0
    fi
    ( cd "$DIR" && exec setsid "$@" </dev/null >>"$DIR/log/$name.out" 2>&1 ) &
    echo $! > "$DIR/pids/$name.pid"
    sleep 0.2
    running "$name" || { tail -20 "$DIR/log/$name.out" >&2; die "$name did not start (see $DIR/log/)"; }
    log "started $name (pid $(cat "$DIR/pids/$name.pid"))"
}
# wait_for DESC CMD...: retry CMD until it succeeds, at most TIMEOUT seconds
wait_for() {
    local desc=$1; shift
    local end=$(( $(date +%s) + TIMEOUT ))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || die "timed out waiting for $desc (see $DIR/log/)"
        sleep 0.3
    done
    log "$desc ok"
}
# check_port NAME PORT: the port must be free unless our NAME already holds it
check_port() {
    running "$1" && return 0
    command -v ss >/dev/null || return 0
    if ss -Hltn "sport = :$2" | grep -q .; then die "port $2 (for $1) is in use by another process; set LOCAL_SLURM_*_PORT"; fi
}

check_port slurmctld "$CTLD_PORT"; check_port slurmd "$SLURMD_PORT"
check_port slurmdbd "$DBD_PORT"; check_port mariadbd "$DB_PORT"

start munged munged -F --force --socket="$MUNGE_SOCK" --key-file="$DIR/etc/munge.key" \
    --log-file="$DIR/log/munged.log" --pid-file="$DIR/state/munged.pid" \
    --seed-file="$DIR/etc/munged.seed"
wait_for "munge" sh -c "munge -n -S '$MUNGE_SOCK' | unmunge -S '$MUNGE_SOCK'"

if [ ! -d "$DIR/db/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$DIR/db" --user=root \
        --auth-root-authentication-method=socket --skip-test-db \
        >"$DIR/log/mariadb-install.log" 2>&1 || { tail -20 "$DIR/log/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
fi
start mariadbd mariadbd --no-defaults --datadir="$DIR/db" --socket="$MYSOCK" \
    --bind-address=127.0.0.1 --port="$DB_PORT" --user=root --skip-name-resolve \
    --pid-file="$DIR/state/mariadbd.pid" --log-error="$DIR/log/mariadbd.log" \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900
wait_for "mariadb" mariadb-admin --no-defaults -S "$MYSOCK" -u root ping
mariadb --no-defaults -S "$MYSOCK" -u root -e \
    "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
     GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
start slurmdbd slurmdbd -D
wait_for "slurmdbd" sacctmgr -n list cluster

CTLD_WAS_RUNNING=0; running slurmctld && CTLD_WAS_RUNNING=1
start slurmctld slurmctld -D
wait_for "slurmctld" sh -c "scontrol ping | grep -q 'is UP'"
if [ "$CTLD_WAS_RUNNING" = 1 ] && [ "$CONF_CHANGED" = 1 ]; then
    log "slurm.conf changed: scontrol reconfigure"
    scontrol reconfigure || true
fi
start slurmd slurmd -D

# The node may come back drained or down from an earlier run: resume it once.
end=$(( $(date +%s) + TIMEOUT )); resumed=0
while :; do
    st=$(sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -1 || true)
    case "$st" in
        idle|mixed|allocated|completing) break ;;
        *drain*|down*|fail*)
            if [ "$resumed" = 0 ]; then
                log "node state '$st' ($(sinfo -h -N -n "$NODE" -o '%E')): resuming it"
                scontrol update nodename="$NODE" state=resume || true; resumed=1
            fi ;;
    esac
    [ "$(date +%s)" -lt "$end" ] || die "node $NODE is '$st', not idle (see $DIR/log/)"
    sleep 0.3
done
log "node $NODE is $st"
# slurmctld registers the cluster with slurmdbd itself; sacct answers once it has.
wait_for "cluster registration" sh -c "sacctmgr -n -P list cluster format=cluster | grep -qx '$CLUSTER'"

sinfo
echo "PIDs (in $DIR/pids/):"
for n in munged mariadbd slurmdbd slurmctld slurmd; do
    running "$n" && printf '  %-10s %s\n' "$n" "$(cat "$DIR/pids/$n.pid")"
done
echo "SLURM_CONF=$DIR/slurm.conf   (or: source $DIR/env.sh)"
log "cluster ready"

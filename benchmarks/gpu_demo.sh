#!/usr/bin/env bash
# The bundled demo on one GPU server, end to end and measured: what `make demo-gpu` runs, as one command
# for a one-card, 16-core device lease (Python 3.12 with torch and transformers of its own, no network).
#
#   bash benchmarks/gpu_demo.sh                  # on the GPU machine, from the repository root
#   bash benchmarks/gpu_demo.sh --cpu            # the same run on this machine's CPU (one fake card)
#   bash benchmarks/gpu_demo.sh --budget-s 420   # stop the demo after this many seconds (default 420)
#
# The lease, with the wheels made first where the package registry is reachable (27 MB of the 64 MiB
# a call carries; the machine's image has the rest):
#   echo /.whl/ >> .git/info/exclude && bash benchmarks/gpu_demo_wheels.sh
#   run(command="bash benchmarks/gpu_demo.sh", carry=[".whl"], timeout_s=540)
#
# Installs .whl/*.whl (where there) into /tmp/site, then runs the demo through profiles/gpu-server with
# profiles/gpu-server/demo.yaml (the training rules on one card each, fine-tuning runs sharing it) in
# its own working directory results/demo-gpu (--cpu: results/demo-gpu-cpu; demo/results stays the
# CPU demo's). Writes JSON as it goes, every 20 s and at the end, into $OUT where set (else
# benchmarks/results/gpu_demo/): gpu_demo_<mode>.json, with the install's and the run's wall time, the
# wall time and the card's busy share per stage (nvidia-smi sampled every 0.5 s into card_<mode>.csv),
# runs per card, and the tables (benchmarks/gpu_demo_report.py); Snakemake's log beside it.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode=gpu
budget_s=420
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu) mode=cpu ;;
    --budget-s) budget_s="$2"; shift ;;
    *) echo "usage: bash benchmarks/gpu_demo.sh [--cpu] [--budget-s SECONDS]" >&2; exit 2 ;;
  esac
  shift
done
out="${OUT:-$root/benchmarks/results/gpu_demo}"
mkdir -p "$out"
json="$out/gpu_demo_$mode.json"
samples="$out/card_$mode.csv"
work="$root/results/demo-$([[ $mode == gpu ]] && echo gpu || echo gpu-cpu)"
python="${PYTHON:-python3}"
started=$(date +%s)

if [[ -d .whl ]] && compgen -G ".whl/*.whl" > /dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "error: installing .whl/ failed" >&2; exit 1; }
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH"
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
# the rules call `python`: the interpreter that holds torch, where the image has only python3
if [[ "$(command -v python)" != "$(command -v "$python")" ]]; then
  mkdir -p /tmp/gpu-demo-bin && ln -sfn "$(command -v "$python")" /tmp/gpu-demo-bin/python
  export PATH="/tmp/gpu-demo-bin:$PATH"
fi
installed=$(date +%s)

if [[ $mode == gpu ]]; then
  device="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 > "$samples" &
  sampler=$!
else
  device=cpu
  export WORKFLOW_FAKE_CARDS=0
  : > "$samples"
  sampler=
fi
facts=(--set "mode=$mode" --set "device=$device" --set "cores=$(nproc)" --set "budget_s=$budget_s"
  --set "install_s=$((installed - started))" --set "python=$("$python" -c 'import sys; print(sys.version.split()[0])')"
  --set "torch=$("$python" -c 'import torch; print(torch.__version__)')")
report() {
  "$python" benchmarks/gpu_demo_report.py --directory "$work" --out "$json" --samples "$samples" "${facts[@]}" "$@"
}
(while sleep 20; do report --set status=running --set "run_s=$(($(date +%s) - installed))"; done) &
reporter=$!

mkdir -p "$work"
ln -sfn "$root/demo/raw_source" "$work/raw_source"
# as make demo-gpu runs it (without the HTML report)
timeout --signal=INT --kill-after=60 "$budget_s" env WORKFLOW_PRELOAD=1 "$python" -m workflow_scripts.console -- \
  --directory "$work" --workflow-profile profiles/gpu-server \
  --configfile "$root/demo/config.yaml" "$root/profiles/gpu-server/demo.yaml"
status=$?
finished=$(date +%s)
kill "$reporter" ${sampler:+"$sampler"} 2> /dev/null
wait 2> /dev/null
case $status in
  0) outcome=finished ;;
  124) outcome="stopped at the budget of $budget_s s" ;;
  *) outcome="failed (exit status $status)" ;;
esac
# the CPU golden of this processor's vendor (tests/workflow/test_demo.py, COMMITTED_MEDIANS)
golden=demo/medians.csv
grep -q GenuineIntel /proc/cpuinfo 2> /dev/null && golden=demo/medians-intel.csv
same=false
cmp -s "$work/results/tables/medians.csv" "$golden" && same=true
report --set "status=$outcome" --set "run_s=$((finished - installed))" --set "cpu_golden=$golden" \
  --set "medians_equal_cpu_golden=$same"
cp "$work/results/logs/snakemake.log" "$out/snakemake_$mode.log" 2> /dev/null
echo "gpu_demo ($mode): $outcome in $((finished - started)) s; $json"
exit "$status"

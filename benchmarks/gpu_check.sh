#!/usr/bin/env bash
# The first-GPU check: one command, at most 8 minutes on one H100 or H200, nothing downloaded.
#
#   bash benchmarks/gpu_check.sh              # on the GPU machine, from any directory
#   bash benchmarks/gpu_check.sh --cpu-smoke  # every section for a step or two on the CPU
#   bash benchmarks/gpu_check.sh --variants [NAME ...]  # and the pretraining step's A/B variants (longer)
#
# Imports the package from this working tree (PYTHONPATH), whatever is installed; needs Python 3.12
# with torch >= 2.11 and transformers >= 5.17. Writes JSON into $OUT when set, else
# benchmarks/results/gpu/. $PYTHON picks the interpreter (default: python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
python="${PYTHON:-python3}"
# --variants and the names after it are the pretraining half's alone
finetune_args=()
skipping=0
for arg in "$@"; do
  if [[ "$arg" == "--variants" ]]; then skipping=1; continue; fi
  if [[ $skipping == 1 && "$arg" != --* ]]; then continue; fi
  skipping=0
  finetune_args+=("$arg")
done
status=0
"$python" benchmarks/gpu_check_pretrain.py "$@" || status=$?
"$python" benchmarks/gpu_check_finetune.py ${finetune_args[@]+"${finetune_args[@]}"} || status=$?
exit "$status"

#!/usr/bin/env bash
# The first-GPU check: one command, at most 8 minutes on one H100 or H200, nothing downloaded.
#
#   bash benchmarks/gpu_check.sh              # on the GPU machine, from any directory
#   bash benchmarks/gpu_check.sh --cpu-smoke  # every section for a step or two on the CPU
#   bash benchmarks/gpu_check.sh --variants [NAME ...]  # and the pretraining step's A/B variants (longer)
#   bash benchmarks/gpu_check.sh --only SECTION ...     # these pretraining sections, no fine-tuning part
#   bash benchmarks/gpu_check.sh --parts PART ...       # these fine-tuning parts, no pretraining section
#
# Each half gets the options it knows: --only and --variants the pretraining half's, --parts, --steps,
# --runs and --budget-s the fine-tuning half's, the rest (--cpu-smoke, --out-dir) both.
#
# Imports the package from this working tree (PYTHONPATH), whatever is installed; needs Python 3.12
# with torch >= 2.11 and transformers >= 5.17. Writes JSON into $OUT when set, else
# benchmarks/results/gpu/. $PYTHON picks the interpreter (default: python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
python="${PYTHON:-python3}"
pretrain_args=()
finetune_args=()
owner=both
only=0
variants=0
parts=0
for arg in "$@"; do
  # an option and the values after it go to the half that owns the option
  case "$arg" in
    --only | --only=*) owner=pretrain only=1 ;;
    --variants | --variants=*) owner=pretrain variants=1 ;;
    --parts | --parts=*) owner=finetune parts=1 ;;
    --steps | --steps=* | --runs | --runs=* | --budget-s | --budget-s=*) owner=finetune ;;
    --*) owner=both ;;
  esac
  if [[ $owner != finetune ]]; then pretrain_args+=("$arg"); fi
  if [[ $owner != pretrain ]]; then finetune_args+=("$arg"); fi
done
status=0
# naming one half's sections or parts, and not the other's, runs that half alone; --variants asks for
# the pretraining half too
if [[ $parts == 0 || $only == 1 || $variants == 1 ]]; then
  "$python" benchmarks/gpu_check_pretrain.py ${pretrain_args[@]+"${pretrain_args[@]}"} || status=$?
fi
if [[ $only == 0 || $parts == 1 ]]; then
  "$python" benchmarks/gpu_check_finetune.py ${finetune_args[@]+"${finetune_args[@]}"} || status=$?
fi
exit "$status"

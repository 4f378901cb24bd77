#!/usr/bin/env bash
# The wheels benchmarks/gpu_demo.sh installs on the GPU machine, which has no network: what the workflow
# needs beyond the machine's own image (Python 3.12 with torch 2.11, transformers 5.17, numpy, pandas,
# pyarrow, lxml, scipy, scikit-learn, matplotlib, pyyaml, ...), at this checkout's pinned versions, for
# CPython 3.12 on x86-64 Linux. Run it here, where the package registry is reachable:
#
#   bash benchmarks/gpu_demo_wheels.sh     # into .whl/ (git ignores it once: echo /.whl/ >> .git/info/exclude)
#
# then hand .whl to the lease (`carry`), which counts it against 64 MiB; the script prints the total.
# Snakemake's own needs as 9.27.1 names them; seqeval and datasets with theirs; our pinned transformers
# and tokenizers: about 26 MB. Left behind: the Slurm executor plugins (a GPU server runs its jobs itself),
# pulp (16 MB of solver binaries for Snakemake's ILP scheduler; the profiles choose the greedy one) and
# pubmed_parser (55 MB, mostly its test data; the workflow never imports it, its own parsers replaced it).
# connection-pool and seqeval publish no wheel: pip builds theirs here (pure Python).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/.whl}"
wheels=(
  annotated-types==0.8.0 argparse-dataclass==2.0.0 conda-inject==1.3.2 configargparse==1.10.2
  datasets==5.2.0 dill==0.4.1 docutils==0.22.4 dpath==2.2.0 fastjsonschema==2.22.3
  gitdb==4.0.12 gitpython==3.2.1 greenlet==3.5.6 humanfriendly==10.0 immutables==0.21 jsonschema==4.26.0
  jsonschema-specifications==2025.9.1 jupyter-core==5.9.1 multiprocess==0.70.19 nbformat==5.11.1
  platformdirs==4.14.9 pydantic==2.14.4 pydantic-core==2.50.5
  referencing==0.37.0 rpds-py==2026.9.1 smart-open==7.7.1 smmap==5.0.3 snakemake==9.27.1
  snakemake-interface-common==1.23.0 snakemake-interface-executor-plugins==9.4.0
  snakemake-interface-logger-plugins==2.1.0 snakemake-interface-report-plugins==1.3.0
  snakemake-interface-scheduler-plugins==2.0.2 snakemake-interface-storage-plugins==4.4.1
  sqlalchemy==2.0.59 sqlmodel==0.0.37 tenacity==9.2.1 throttler==1.2.3 tokenizers==0.23.3
  traitlets==5.16.1 transformers==5.23.0 typing-inspection==0.4.5 unidecode==1.4.0 yte==1.9.4
)
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$dest" "${wheels[@]}"
python3 -m pip wheel --quiet --no-deps -w "$dest" connection-pool==0.0.3 seqeval==1.2.2
du -ch "$dest"/*.whl | tail -1

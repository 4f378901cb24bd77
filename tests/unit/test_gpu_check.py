"""benchmarks/gpu_check.sh --cpu-smoke: the first-GPU check runs end to end, so it cannot rot unnoticed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# not in the GPU machine's image: the check must not import them
ABSENT_ON_THE_GPU_MACHINE = ("snakemake", "pubmed_parser", "seqeval", "datasets", "jsonschema")


@pytest.mark.slow
def test_cpu_smoke_runs_every_section_without_the_pipelines_extra_packages(tmp_path):
    blocker = tmp_path / "site" / "sitecustomize.py"
    blocker.parent.mkdir()
    blocker.write_text(
        "import importlib.abc, sys\n"
        f"ABSENT = {ABSENT_ON_THE_GPU_MACHINE!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ABSENT:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (absent on the GPU machine)')\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "PYTHONPATH")}
    env.update(PYTHON=sys.executable, PYTHONPATH=str(blocker.parent), CUDA_VISIBLE_DEVICES="")
    out = tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--cpu-smoke", "--out-dir", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "gpu_check_pretrain.json").read_text())
    assert result["mode"] == "cpu-smoke" and result["errors"] == {}
    sections = result["sections"]
    assert set(sections) == {
        "compile",
        "micro_batch",
        "profile",
        "bandwidth",
        "distill",
        "data_path",
        "pipeline_graphs",
        "variants",
    }
    assert sections["bandwidth"]["triton_kernels"] == 0  # the CPU compiles no Triton kernel
    assert sections["compile"]["eager"]["tokens_per_s"] > 0 and sections["compile"]["compiled"]["tokens_per_s"] > 0
    assert "6 x W_enc" in sections["compile"]["formula"]
    micro = sections["micro_batch"]
    assert micro["paper"]["micro"] < micro["auto"]["micro"] == micro["share"]  # a tiny model: the whole share fits
    profile = sections["profile"]
    assert profile["compiled"] and all(0 <= v <= 1 for v in profile["shares"].values())
    assert profile["shares"]["gemm"] > 0 and sum(profile["shares"].values()) == pytest.approx(1.0)
    distill = sections["distill"]
    assert distill["paper"]["micro"] == distill["compiled"]["micro"] < distill["auto"]["micro"]
    assert distill["compiled"]["compiled"] and distill["compiled"]["kl"] == "whole"  # tiny: the whole KL fits
    assert all(distill[k]["estimated_peak_gb"] > 0 and distill[k]["step_s"] > 0 for k in ("paper", "compiled", "auto"))
    variants = sections["variants"]
    assert set(variants) == {
        "papers",
        "fused_attention",
        "micro_64_cuda_graphs",
        "residual_autocast",
        "large_512_micro_64",
    }
    assert variants["papers"]["speedup"] == 1.0
    large = variants["large_512_micro_64"]  # the micro-64 goal's model and length; no ratio against base's step
    assert large["seq_len"] > variants["papers"]["seq_len"] and large["micro"] < variants["papers"]["micro"]
    assert "speedup" not in large and "(goal 35.0%), BERT-large" in proc.stdout
    assert variants["residual_autocast"]["residual_stream"] == "autocast" != variants["papers"]["residual_stream"]
    assert variants["micro_64_cuda_graphs"]["micro"] < variants["papers"]["micro"]
    assert "(goal 40.0%)" in proc.stdout and "compiled step: gemm" in proc.stdout  # the one-screen summary
    data = sections["data_path"]
    assert data.get("serial", data.get("prefetch_on", {})).get("tokens_per_s", 0) > 0
    graphs = sections["pipeline_graphs"]
    assert graphs["graphs_on"]["tokens_per_s"] > 0 and graphs["micro"] < graphs["share"]


def _check_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check_pretrain

    return gpu_check_pretrain


# kernel names as H100 profiles of torch 2.x print them (cuBLAS, cuBLASLt nvjet, inductor, flash, ATen, CUPTI)
KERNELS = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    "__5x_cublas": "gemm",
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT": "gemm",
    "triton_tem_fused_addmm_gelu_3": "gemm",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, "
    "false, true, true, false, false>(pytorch_flash::Flash_fwd_params)": "attention",
    "fmha_cutlassB_bf16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::"
    "Sm80, cutlass::bfloat16_t, true, false, false, 64, 64, 64, false>::Params)": "attention",
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x64x128_4x1x1_kernel0_0": "attention",
    "triton_red_fused_add_embedding_native_layer_norm_0": "embedding",
    "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>"
    "(long const*, float const*, float*, int, long, int, int)": "embedding",
    "triton_per_fused__log_softmax__to_copy_nll_loss_forward_2": "loss",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)": "loss",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
    "(at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*>"
    "(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, "
    "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, "
    "double*, double, double, double, double, double, bool, float*, float*)": "optimiser",
    "void at::native::lpnorm_cleanup<float, (at::native::(anonymous namespace)::NormType)1, float, float>"
    "(float const*, at::native::TensorListAddresses, int)": "optimiser",
    "triton_red_fused_native_layer_norm_native_layer_norm_backward_5": "normalisation_elementwise",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl"
    "(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)": "normalisation_elementwise",
    "Memcpy HtoD (Pinned -> Device)": "memcpy",
    "Memset (Device)": "memcpy",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "other",
    # CPU operators, as --cpu-smoke profiles them
    "aten::addmm": "gemm",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
    "aten::_fused_adamw_": "optimiser",
    "aten::native_layer_norm": "normalisation_elementwise",
}


def test_kernels_are_grouped_by_what_they_compute():
    check = _check_module()
    assert {name: check.kernel_group(name) for name in KERNELS} == KERNELS


def test_group_shares_and_idle_add_up_to_the_wall_time():
    check = _check_module()
    shares = check.group_shares([("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", 50.0), ("Memset (Device)", 10.0)], 100.0)
    assert shares["gemm"] == 0.5 and shares["memcpy"] == 0.1 and shares["idle"] == pytest.approx(0.4)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_inductors_bandwidth_file_is_read_kernel_by_kernel_slowest_first(tmp_path):
    """The file torch writes with profile_bandwidth (one block per compiled graph), written here by torch itself."""
    from torch._inductor.runtime import triton_heuristics

    check, out = _check_module(), tmp_path / "bandwidth.txt"
    graphs = [
        [
            (0.5, 0.2, 400.0, "triton_per_fused_add_native_dropout_native_layer_norm_0"),
            (2.0, 4.0, 2000.0, "triton_poi_fused_gelu_1"),
        ],
        [(1.0, 3.0, 3000.0, "triton_red_fused_nll_loss_backward_2")],
    ]
    for calls in graphs:
        triton_heuristics.start_graph()
        triton_heuristics.collected_calls.extend(calls)
        triton_heuristics.end_graph(str(out))
    triton_heuristics.collected_calls.clear()
    kernels = check.read_bandwidth(out.read_text())
    assert [(k["ms"], k["gb"], k["gb_s"], k["group"]) for k in kernels] == [
        (2.0, 4.0, 2000.0, "normalisation_elementwise"),
        (1.0, 3.0, 3000.0, "loss"),
        (0.5, 0.2, 400.0, "normalisation_elementwise"),
    ]
    assert kernels[0]["name"] == "triton_poi_fused_gelu_1"


def test_each_section_writes_the_json_when_it_ends(tmp_path, monkeypatch):
    """A time cap that kills the check mid-section keeps the finished sections and their errors on disk."""
    check = _check_module()
    out = tmp_path / "gpu_check_pretrain.json"
    seen = []

    def first(sh, device):
        return {"tokens_per_s": 1.0}

    def broken(sh, device):
        raise RuntimeError("out of memory")

    def third(sh, device):
        seen.append(json.loads(out.read_text()))  # what a kill here would leave behind
        return {}

    monkeypatch.setattr(check, "SECTIONS", {"first": first, "broken": broken, "third": third})
    with pytest.raises(SystemExit) as exit_code:
        check.main(["--cpu-smoke", "--out-dir", str(tmp_path)])
    assert exit_code.value.code == 1
    assert seen[0]["sections"] == {"first": {"tokens_per_s": 1.0}}
    assert "out of memory" in seen[0]["errors"]["broken"]
    final = json.loads(out.read_text())
    assert set(final["sections"]) == {"first", "third"} and set(final["seconds"]) == {"first", "broken", "third"}


def test_a_failing_variant_is_recorded_and_the_finished_ones_are_on_disk_before_the_next(tmp_path, monkeypatch):
    """The variants run one after another for minutes each: a cap or a failure keeps the finished ones."""
    check = _check_module()
    out = tmp_path / "gpu_check_pretrain.json"
    seen = []

    def variant(name, sh, device):
        if name == "cuda_graphs":
            raise RuntimeError("accessing tensor output of CUDAGraphs that has been overwritten")
        if name == "micro_64":
            seen.append(json.loads(out.read_text())["sections"]["variants"])  # what a kill here would leave
        rate = {"papers": 2.0, "micro_64": 1.0}[name]
        return {"tokens_per_s": rate, "mfu": None, "micro": 1, "accumulated": 1, "model": "base", "shares": {}}

    monkeypatch.setattr(check, "variant", variant)
    with pytest.raises(SystemExit) as exit_code:
        check.main(
            ["--cpu-smoke", "--only", "variants", "--variants", "cuda_graphs", "micro_64", "--out-dir", str(tmp_path)]
        )
    assert exit_code.value.code == 0
    assert set(seen[0]) == {"papers", "cuda_graphs"} and "overwritten" in seen[0]["cuda_graphs"]["error"]
    final = json.loads(out.read_text())["sections"]["variants"]
    assert final["micro_64"]["speedup"] == 0.5 and "error" in final["cuda_graphs"]


def test_device_annotations_are_not_counted_as_kernels():
    """The optimiser's record_function range spans its own kernels on the device: counting it too would
    double the optimiser's share."""
    from torch.autograd import DeviceType

    check = _check_module()

    def event(key, annotation=False, device=DeviceType.CUDA, us=5.0):
        return types.SimpleNamespace(
            key=key, is_user_annotation=annotation, device_type=device, self_device_time_total=us
        )

    assert check.is_kernel(event("multi_tensor_apply_kernel<...>"))
    assert not check.is_kernel(event("Optimizer.step#AdamW.step"))
    assert not check.is_kernel(event("my_range", annotation=True))
    assert not check.is_kernel(event("aten::mm", device=DeviceType.CPU))
    assert not check.is_kernel(event("idle_kernel", us=0.0))


def _halves(tmp_path: Path, *args: str, fail: str = "") -> tuple[int, dict[str, list[str]]]:
    """What gpu_check.sh hands each half: an interpreter that records its script and arguments."""
    log = tmp_path / "calls"
    recorder = tmp_path / "python"
    recorder.write_text(
        "#!/usr/bin/env bash\n"
        f'name=$(basename "$1" .py); shift; echo "$name $*" >> {log}\n'
        f'[[ "$name" == "{fail}" ]] && exit 3; exit 0\n'
    )
    recorder.chmod(0o755)
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), *args],
        env={**os.environ, "PYTHON": str(recorder)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    calls = (line.split(" ", 1) for line in log.read_text().splitlines()) if log.exists() else ()
    return proc.returncode, {name: rest.split() for name, rest in calls}


PRE, FINE = "gpu_check_pretrain", "gpu_check_finetune"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {PRE: [], FINE: []}),
        (
            ["--cpu-smoke", "--out-dir", "o"],
            {PRE: ["--cpu-smoke", "--out-dir", "o"], FINE: ["--cpu-smoke", "--out-dir", "o"]},
        ),
        # the next lease's commands: one half each, and nothing the other half would refuse
        (
            ["--only", "variants", "--variants", "fused_attention", "micro_64"],
            {PRE: ["--only", "variants", "--variants", "fused_attention", "micro_64"]},
        ),
        (["--parts", "cuda_graphs", "--budget-s", "60"], {FINE: ["--parts", "cuda_graphs", "--budget-s", "60"]}),
        (["--variants", "--cpu-smoke"], {PRE: ["--variants", "--cpu-smoke"], FINE: ["--cpu-smoke"]}),
        # variants asked beside fine-tuning parts: both halves, each with its own
        (
            ["--parts", "cuda_graphs", "--variants", "micro_64"],
            {PRE: ["--variants", "micro_64"], FINE: ["--parts", "cuda_graphs"]},
        ),
        (
            ["--only", "compile", "--steps", "5", "--parts", "runs_per_card", "--out-dir", "o"],
            {
                PRE: ["--only", "compile", "--out-dir", "o"],
                FINE: ["--steps", "5", "--parts", "runs_per_card", "--out-dir", "o"],
            },
        ),
    ],
)
def test_each_half_gets_its_own_options_and_naming_one_halfs_sections_runs_it_alone(tmp_path, args, expected):
    status, calls = _halves(tmp_path, *args)
    assert status == 0 and calls == expected


def test_a_failing_half_does_not_stop_the_other_and_fails_the_check(tmp_path):
    status, calls = _halves(tmp_path, "--cpu-smoke", fail=PRE)
    assert status == 3 and set(calls) == {PRE, FINE}

"""Nothing in a fine-tuning step waits for the device: the loop's modules are scanned for the
calls that synchronise (``.item()``, ``.cpu()``, ``float(tensor)``, a ``.to(`` without
``non_blocking``); the few that remain sit outside the step and are listed here, and a new one fails."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

from workflow_scripts.finetune import batching, heads

PACKAGE = Path(__file__).resolve().parents[2] / "workflow_scripts" / "finetune"
MODULES = ("loop.py", "batching.py", "heads.py", "chunks.py", "execution.py", "buckets.py")

# (module, function, call): each waits for the device once per evaluation, never per step
OUTSIDE_THE_STEP = {
    ("loop.py", "fit", ".item()"),  # the mean training loss of a log step
    ("loop.py", "predict", ".cpu()"),  # a split's logits, in one copy
    ("loop.py", "Tracker.record", ".to("),  # the best state, kept on the host
    ("loop.py", "selection_value", "float("),  # a metric, already a Python number
}


def is_dtype_cast(call: ast.Call) -> bool:
    """``x.to(other.dtype)`` or ``x.to(torch.float32)``: a cast on the device, no copy to wait for."""
    arg = call.args[0] if call.args else None
    return isinstance(arg, ast.Attribute) and (arg.attr == "dtype" or getattr(arg.value, "id", "") == "torch")


def waits(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("item", "cpu"):
        return f".{func.attr}()"
    if isinstance(func, ast.Attribute) and func.attr == "to":
        asynchronous = any(k.arg == "non_blocking" for k in call.keywords)
        return None if asynchronous or is_dtype_cast(call) else ".to("
    if isinstance(func, ast.Name) and func.id == "float" and call.args:
        return None if isinstance(call.args[0], ast.Constant) else "float("
    return None


def synchronising_calls(module: str) -> set[tuple[str, str, str]]:
    found = set()

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, [*scope, child.name])
                continue
            if isinstance(child, ast.Call) and (kind := waits(child)):
                found.add((module, ".".join(scope), kind))
            visit(child, scope)

    visit(ast.parse((PACKAGE / module).read_text()), [])
    return found


def test_no_new_synchronising_call_in_the_fine_tuning_loop():
    found = set().union(*(synchronising_calls(m) for m in MODULES))
    new = found - OUTSIDE_THE_STEP
    assert not new, f"calls that make the host wait for the GPU, inside the step code: {sorted(new)}"
    assert found == OUTSIDE_THE_STEP, f"listed but gone (drop them from the list): {OUTSIDE_THE_STEP - found}"


def test_the_scan_sees_what_it_forbids():
    code = "def step(x, d):\n    a = x.item()\n    b = x.to(d)\n    c = float(x)\n    e = x.to(d, non_blocking=True)\n"
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)]
    assert [waits(c) for c in calls] == [".item()", ".to(", "float(", None]


def test_a_batch_without_padding_has_no_mask_and_the_next_batch_is_ready_first():
    features = [{"input_ids": [2, 7, 3], "label": 0}, {"input_ids": [2, 8, 3], "label": 1}]
    assert "attention_mask" not in batching.collate(features, 0, "nli", "cpu")
    padded = batching.collate([*features, {"input_ids": [2, 3], "label": 0}], 0, "nli", "cpu")
    assert padded["attention_mask"].tolist()[-1] == [1, 1, 0]
    handed = []
    for idx, batch in batching.ahead([[0], [1]], features, 0, "nli", "cpu"):
        handed.append((idx, batch["input_ids"].tolist()))
    assert handed == [([0], [[2, 7, 3]]), ([1], [[2, 8, 3]])]
    assert torch.equal(batching.to_device(padded, torch.device("cpu"))["input_ids"], padded["input_ids"])


def test_padded_batches_reach_attention_unchecked_and_give_the_same_logits(monkeypatch):
    from transformers import BertConfig, BertForTokenClassification

    config = BertConfig(
        vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=3
    )
    torch.manual_seed(0)
    model = BertForTokenClassification(config).eval()
    features = [{"input_ids": list(range(2, 2 + n)), "labels": [0] * n} for n in (9, 4, 6)]
    batch = batching.collate(features, 0, "ner", "cpu")
    plain = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits

    def no_waiting(self, *args, **kwargs):
        raise AssertionError("mask.all() would make the host wait for the device")

    monkeypatch.setattr(torch.Tensor, "all", no_waiting)
    assert torch.equal(heads.forward(model, batch), plain)

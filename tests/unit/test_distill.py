"""Distillation: loss terms against hand-computed values, student initialisation, layer maps, the CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, AutoTokenizer

from workflow_scripts.distill import distill as distill_cli
from workflow_scripts.distill import losses
from workflow_scripts.distill.objective import DistillObjective
from workflow_scripts.distill.settings import DistillSettings, LossWeights
from workflow_scripts.distill.student import from_teacher_layers, layer_map, teacher_layers
from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.report import heldout_table
from workflow_scripts.typed import parse

torch.set_num_threads(1)


# --- loss terms on tiny tensors -------------------------------------------------------


def test_kl_matches_hand_computation():
    student, teacher = torch.tensor([[0.0, 0.0]]), torch.tensor([[math.log(3.0), 0.0]])
    # T = 1: p_t = (3/4, 1/4), p_s = (1/2, 1/2)
    expected = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)
    assert losses.kl_logits(student, teacher, 1.0).item() == pytest.approx(expected, rel=1e-6)
    # T = 2: p_t = (sqrt3, 1) / (sqrt3 + 1), times T^2
    p = math.sqrt(3) / (math.sqrt(3) + 1)
    expected_t2 = 4 * (p * math.log(p / 0.5) + (1 - p) * math.log((1 - p) / 0.5))
    assert losses.kl_logits(student, teacher, 2.0).item() == pytest.approx(expected_t2, rel=1e-6)
    assert losses.kl_logits(teacher, teacher, 2.0).item() == pytest.approx(0.0, abs=1e-7)


def test_soft_cross_entropy_matches_hand_computation():
    student, teacher = (
        torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]]),
        torch.tensor([[math.log(3.0), 0.0], [0.0, 0.0]]),
    )
    # row 1: -(3/4 ln 1/2 + 1/4 ln 1/2) = ln 2; row 2: -(1/2 ln 3/4 + 1/2 ln 1/4)
    expected = math.log(2) - 0.5 * math.log(0.75) - 0.5 * math.log(0.25)
    assert losses.soft_cross_entropy(student, teacher, 1.0).item() == pytest.approx(expected, rel=1e-6)


def test_cosine_distance_matches_hand_computation():
    student = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    teacher = torch.tensor([[[1.0, 1.0], [0.0, -1.0]]])
    assert losses.cosine_distance(student, teacher).item() == pytest.approx((1 - 1 / math.sqrt(2)) + 2.0, rel=1e-6)


def test_squared_error_matches_hand_computation():
    assert (
        losses.squared_error(torch.tensor([[1.0, 2.0], [3.0, 0.0]]), torch.tensor([[0.0, 0.0], [1.0, 0.0]])).item()
        == 9.0
    )


def test_attention_kl_matches_hand_computation():
    teacher = torch.tensor([[[[0.5, 0.5], [1.0, 0.0]]]])  # [batch, heads, query, key]
    student = torch.tensor([[[[0.25, 0.75], [1.0, 0.0]]]])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert losses.attention_kl(student, teacher).item() == pytest.approx(expected, rel=1e-5)


# --- settings, student initialisation, layer maps -------------------------------------


def test_defaults_are_lewis_et_al():
    s = parse(DistillSettings, {}, "model.distill")
    assert (s.loss.mlm, s.loss.kl, s.loss.cosine, s.temperature) == (5.0, 2.0, 1.0, 2.0)
    assert s.betas == (0.9, 0.98)  # shared pretraining fields


def test_settings_errors_name_the_key():
    with pytest.raises(PipelineError, match=r"model\.distill\.loss\.kl: weights must be non-negative"):
        parse(DistillSettings, {"loss": {"kl": -1}}, "model.distill")
    with pytest.raises(PipelineError, match=r"model\.distill\.loss: every weight is 0"):
        parse(DistillSettings, {"loss": {"mlm": 0, "kl": 0, "cosine": 0}}, "model.distill")
    with pytest.raises(PipelineError, match=r"model\.distill\.loss: unknown key 'unknown'"):
        parse(DistillSettings, {"loss": {"unknown": 1}}, "model.distill")
    with pytest.raises(
        PipelineError, match=r"model\.distill\.objective: students are distilled with the MLM objective"
    ):
        parse(DistillSettings, {"objective": "electra", "architecture": "electra"}, "model.distill")


def test_layer_map_default_and_range_checks():
    s = parse(DistillSettings, {}, "d")
    assert layer_map(4, 12, s, "d") == [3, 6, 9, 12]
    assert layer_map(1, 2, s, "d") == [2]
    with pytest.raises(PipelineError, match=r"d\.layer_map\[1\]: teacher layer 5 is out of range 0\.\.4"):
        layer_map(2, 4, parse(DistillSettings, {"layer_map": [2, 5]}, "d"), "d")
    with pytest.raises(PipelineError, match=r"d\.layer_map: 3 entries for a student of 2 layers"):
        layer_map(2, 4, parse(DistillSettings, {"layer_map": [1, 2, 3]}, "d"), "d")


def test_teacher_layer_selection():
    s = parse(DistillSettings, {"student": {"num_layers": 3}}, "d")
    assert teacher_layers(6, s, "d") == [0, 2, 4]  # every other layer, as DistilBERT
    assert teacher_layers(12, parse(DistillSettings, {}, "d"), "d") == [0, 2, 4, 6, 8, 10]
    with pytest.raises(PipelineError, match=r"d\.student\.layers\[1\]: teacher layer 6 is out of range 0\.\.5"):
        teacher_layers(6, parse(DistillSettings, {"student": {"layers": [0, 6]}}, "d"), "d")
    with pytest.raises(PipelineError, match=r"d\.student\.num_layers: 8 exceeds the teacher's 6 layers"):
        teacher_layers(6, parse(DistillSettings, {"student": {"num_layers": 8}}, "d"), "d")


def _tiny_teacher(layers=4, hidden=32, heads=4):
    return fx.tiny_bert(hidden, layers, heads, 50, attention="eager").eval()


def test_student_from_teacher_layers_copies_those_layers():
    teacher = _tiny_teacher()
    student = from_teacher_layers(teacher, [1, 3])
    t, s = teacher.state_dict(), student.state_dict()
    assert student.config.num_hidden_layers == 2
    assert torch.equal(
        s["bert.encoder.layer.0.attention.self.query.weight"], t["bert.encoder.layer.1.attention.self.query.weight"]
    )
    assert torch.equal(s["bert.encoder.layer.1.output.dense.weight"], t["bert.encoder.layer.3.output.dense.weight"])
    assert torch.equal(s["bert.embeddings.word_embeddings.weight"], t["bert.embeddings.word_embeddings.weight"])
    assert student.get_output_embeddings().weight.data_ptr() == student.get_input_embeddings().weight.data_ptr()


ALL_TERMS = dict(
    mlm=1.0,
    kl=1.0,
    soft_ce=1.0,
    cosine=1.0,
    hidden_mse=1.0,
    hidden_cosine=1.0,
    attention_mse=1.0,
    attention_kl=1.0,
    embedding_mse=1.0,
)


def test_a_student_identical_to_its_teacher_has_zero_teacher_terms():
    teacher = _tiny_teacher()
    student = from_teacher_layers(teacher, [0, 1, 2, 3]).eval()
    objective = DistillObjective(student, teacher, LossWeights(**ALL_TERMS), 2.0, [1, 2, 3, 4])
    ids = torch.randint(5, 50, (2, 12))
    positions = torch.tensor([1, 5, 13, 20])
    loss, stats = objective(ids, positions, ids.reshape(-1)[positions], {"masked": 4.0, "tokens": 24.0})
    for key in ("kl", "cosine", "hidden_mse", "hidden_cosine", "attention_mse", "attention_kl", "embedding_mse"):
        assert abs(stats[key].item()) < 1e-5, key
    entropy = stats["soft_ce"].item()  # soft CE of identical distributions = their entropy
    assert 0 < entropy <= math.log(50)
    assert loss.item() == pytest.approx(sum(stats[k].item() for k in ALL_TERMS), rel=1e-5)


def test_weights_and_projection_combine_terms():
    teacher = _tiny_teacher(layers=4, hidden=32)
    student = fx.tiny_bert(16, 2, 4, 50, attention="eager", seed=1).eval()
    weights = LossWeights(mlm=2.0, kl=5.0, cosine=1.0, hidden_mse=0.5, attention_kl=3.0, embedding_mse=0.1)
    objective = DistillObjective(student, teacher, weights, 2.0, [2, 4])
    assert objective.proj.weight.shape == (32, 16) and objective.embedding_proj.weight.shape == (32, 16)
    ids = torch.randint(5, 50, (2, 12))
    positions = torch.tensor([0, 7, 19])
    loss, stats = objective(ids, positions, ids.reshape(-1)[positions], {"masked": 3.0, "tokens": 24.0})
    expected = sum(
        getattr(weights, k) * stats[k].item()
        for k in ("mlm", "kl", "cosine", "hidden_mse", "attention_kl", "embedding_mse")
    )
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    loss.backward()
    assert objective.proj.weight.grad is not None and objective.proj.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in teacher.parameters())
    assert not any(n.startswith("teacher") for n in objective.state_dict())


# --- the CLI --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("distill")
    texts = fx.documents(300)
    corpus = fx.make_corpus(root / "corpus", 300)
    vocab = fx.make_wordpiece(root / "wordpiece", texts)
    settings = fx.write_settings(root / "teacher.yaml", "teacher", max_steps=120, checkpoint_every=1000)
    teacher = root / "teacher"
    pretrain_cli.main(
        ["--settings", str(settings), "--corpus", str(corpus), "--tokenizer", str(vocab), "--out", str(teacher)]
    )
    return {"root": root, "corpus": corpus, "vocab": vocab, "teacher": teacher}


def _distill(setup, tmp_path, name, init=None, stop_after=None, **overrides) -> Path:
    settings = fx.write_settings(tmp_path / f"{name}.yaml", name, key="distill", **overrides)
    out = tmp_path / name
    argv = fx.flags(settings=settings, teacher=setup["teacher"], corpus=setup["corpus"], out=out)
    if init:
        argv += ["--init", str(init)]
    if stop_after:
        argv += ["--stop-after", str(stop_after)]
    distill_cli.main(argv)
    return out


def test_lewis_distillation_pulls_the_student_to_the_teacher(setup, tmp_path):
    common = dict(max_steps=40, student={"num_layers": 1}, log_every=5)
    student = _distill(setup, tmp_path, "student", **common)
    control = _distill(setup, tmp_path, "control", loss={"kl": 0, "cosine": 0}, **common)
    # a randomly initialised student starts far from the teacher and is pulled towards it
    scratch = _distill(
        setup,
        tmp_path,
        "scratch",
        **{**common, "student": {"init": "random"}, "size": "tiny", "hidden_size": 32, "num_layers": 1},
    )
    rows = [json.loads(line) for line in (student / "train_log.jsonl").read_text().splitlines()]
    assert {"loss", "loss_mlm", "loss_kl", "loss_cosine"} <= set(rows[0])
    assert rows[0]["loss"] == pytest.approx(
        5 * rows[0]["loss_mlm"] + 2 * rows[0]["loss_kl"] + rows[0]["loss_cosine"], rel=1e-4
    )
    far = [json.loads(line) for line in (scratch / "train_log.jsonl").read_text().splitlines()]
    assert far[-1]["loss_kl"] < far[0]["loss_kl"] / 2 and far[-1]["loss_cosine"] < far[0]["loss_cosine"]
    assert AutoModelForMaskedLM.from_pretrained(scratch).config.hidden_size == 32
    control_rows = [json.loads(line) for line in (control / "train_log.jsonl").read_text().splitlines()]
    assert "loss_kl" not in control_rows[0]  # the control never runs the teacher
    model = AutoModelForMaskedLM.from_pretrained(student)
    assert model.config.num_hidden_layers == 1 and model.config.hidden_size == 64
    assert (
        AutoTokenizer.from_pretrained(student).get_vocab()
        == AutoTokenizer.from_pretrained(setup["teacher"]).get_vocab()
    )
    prov = json.loads((student / "provenance.json").read_text())
    assert prov["step"] == "distill" and prov["inputs"]["teacher"]["path"] == str(setup["teacher"])
    assert prov["recipe"]["loss"]["kl"] == 2.0 and prov["recipe"]["student"] == {
        "init": "teacher_layers",
        "teacher_layers": [0],
    }
    assert (
        prov["recipe"]["control"] is False
        and json.loads((control / "provenance.json").read_text())["recipe"]["control"] is True
    )
    assert json.loads((student / "eval.json").read_text())["heldout_loss"] < math.log(model.config.vocab_size) - 1

    heldout_table.main(
        ["--model", str(setup["teacher"]), str(student), str(control), str(scratch), "--out", str(tmp_path / "tables")]
    )
    with open(tmp_path / "tables" / "heldout_mlm.csv", newline="") as fh:
        table = {r["model"]: r for r in csv.DictReader(fh)}
    losses_by_model = {
        name: json.loads((d / "eval.json").read_text())["heldout_loss"]
        for name, d in [("teacher", setup["teacher"]), ("student", student), ("control", control), ("scratch", scratch)]
    }
    assert [table[m]["role"] for m in ("teacher", "student", "control")] == ["pretrained", "distilled", "control"]
    # the student is paired with the control of the same init and steps, not with the random-init student
    assert table["student"]["control"] == "control" and table["scratch"]["control"] == ""
    assert float(table["student"]["gain_over_control"]) == pytest.approx(
        losses_by_model["control"] - losses_by_model["student"], abs=2e-4
    )
    assert float(table["teacher"]["heldout_loss"]) == pytest.approx(losses_by_model["teacher"], abs=1e-4)
    assert len({table[m]["heldout_masked_tokens"] for m in table}) == 1  # one held-out set for all
    assert "| student | distilled | teacher | 1 |" in (tmp_path / "tables" / "heldout_mlm.md").read_text()
    assert (tmp_path / "tables" / "heldout_mlm.provenance.json").is_file()
    with pytest.raises(PipelineError, match=r"tables/provenance\.json: not found; pretrain or distil tables first"):
        heldout_table.main(["--model", str(tmp_path / "tables"), "--out", str(tmp_path / "t2")])


def test_tinybert_student_resumes_with_its_projections(setup, tmp_path):
    recipe = dict(
        max_steps=8,
        student={"init": "random"},
        size="tiny",
        hidden_size=32,
        num_layers=1,
        architecture="bert",
        loss={
            "mlm": 0.0,
            "kl": 0.0,
            "cosine": 0.0,
            "soft_ce": 1.0,
            "hidden_mse": 1.0,
            "attention_mse": 1.0,
            "embedding_mse": 1.0,
        },
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    full = _distill(setup, tmp_path / "a", "tiny", **recipe)
    part = _distill(setup, tmp_path / "b", "tiny", stop_after=3, **recipe)
    state = torch.load(part / "training_state" / "step~00000003" / "state.pt", weights_only=False)
    assert state["trainable"]["proj.weight"].shape == (64, 32)
    _distill(setup, tmp_path / "b", "tiny", **recipe)
    a, b = load_file(full / "model.safetensors"), load_file(part / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert AutoModelForMaskedLM.from_pretrained(full).config.hidden_size == 32


def test_student_from_a_model_with_another_vocabulary_is_refused(setup, tmp_path):
    other_vocab = fx.make_wordpiece(tmp_path / "other", fx.documents(300, seed=5), vocab_size=260)
    settings = fx.write_settings(tmp_path / "o.yaml", "o", max_steps=2)
    other = tmp_path / "other_model"
    pretrain_cli.main(fx.flags(settings=settings, corpus=setup["corpus"], tokenizer=other_vocab, out=other))
    with pytest.raises(PipelineError, match="teacher/student vocabulary mismatch"):
        _distill(setup, tmp_path, "s", init=other, student={"init": "model"})
    with pytest.raises(
        PipelineError, match=r"student\.init: is 'teacher_layers'; --init is used exactly when it is 'model'"
    ):
        _distill(setup, tmp_path, "s", init=other)


def test_layer_map_out_of_range_is_refused(setup, tmp_path):
    with pytest.raises(PipelineError, match=r"model\.distill\.layer_map\[0\]: teacher layer 3 is out of range 0\.\.2"):
        _distill(setup, tmp_path, "s", student={"num_layers": 1}, layer_map=[3], loss={"hidden_mse": 1.0})

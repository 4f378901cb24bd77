"""Layer-wise learning-rate decay, frozen lower layers and re-initialised top layers, on a tiny
BERT and a tiny ELECTRA: which parameters move, and at which learning rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from test_finetune_run import make_bert, run_cli

from workflow_scripts import optim
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import heads, stability
from workflow_scripts.finetune.batching import collate
from workflow_scripts.finetune.settings import FinetuneSettings

ROOT = Path(__file__).resolve().parents[2]
LABELS = ["entailment", "contradiction", "neutral"]
LAYERS = 3


def marked(model):
    """Every LayerNorm weight at 2: a re-initialised layer shows its initialiser's 1."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.fill_(2.0)
    return model


def make_electra(path: Path, bert: Path) -> Path:
    """A 3-layer ELECTRA discriminator (embeddings narrower than the encoder, so with a
    projection) on the tiny BERT's vocabulary, its LayerNorms marked."""
    from transformers import AutoTokenizer, ElectraConfig, ElectraForPreTraining

    tokenizer = AutoTokenizer.from_pretrained(bert)
    tokenizer.save_pretrained(path)
    config = ElectraConfig(
        vocab_size=len(tokenizer),
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=LAYERS,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    marked(ElectraForPreTraining(config)).save_pretrained(path)
    return path


def make_bert_marked(path: Path, bert: Path) -> Path:
    """The tiny BERT grown to 3 layers, its LayerNorms marked."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    AutoTokenizer.from_pretrained(bert).save_pretrained(path)
    config = BertConfig.from_pretrained(bert, num_hidden_layers=LAYERS)
    torch.manual_seed(0)
    marked(BertForMaskedLM(config)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    bert = make_bert(root / "bert2")
    return {"bert": make_bert_marked(root / "bert", bert), "electra": make_electra(root / "electra", bert)}


def one_update(model, cfg: FinetuneSettings) -> dict[str, torch.Tensor]:
    """Each parameter's largest change in one AdamW update at the schedule's peak: Adam's first
    step moves every coordinate with a gradient by the lr of its group."""
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    update = optim.updater(
        model,
        lr=cfg.lr,
        weight_decay=0.0,
        eps=1e-20,
        total_steps=100,
        warmup_ratio=0.0,
        precision="fp32",
        device=torch.device("cpu"),
        groups=stability.lr_groups(model, cfg),
    )
    gen = torch.Generator().manual_seed(0)
    features = [
        {
            "input_ids": [2, *torch.randint(5, 60, (7,), generator=gen).tolist(), 3],
            "token_type_ids": [0] * 9,
            "label": i % 3,
        }
        for i in range(8)
    ]
    batch = collate(features, 0, "nli", "cpu")
    model.train()
    update.backward(heads.loss(heads.forward(model, batch), batch, "nli"))
    update.step(model.parameters(), 0.0)
    return {n: (p.detach() - before[n]).abs().max() for n, p in model.named_parameters()}


def build(path: Path, cfg: FinetuneSettings):
    torch.manual_seed(1)
    model = heads.build(str(path), "nli", LABELS, 0.0, "cls", 0)
    stability.apply(model, cfg, str(path))
    return model


@pytest.mark.parametrize("family", ["bert", "electra"])
def test_each_depth_trains_at_its_decayed_rate_and_frozen_layers_stay(models, family):
    cfg = FinetuneSettings(lr=1e-3, layerwise_lr_decay=0.5, freeze_layers=1)
    model = build(models[family], cfg)
    moved = one_update(model, cfg)
    seen = set()
    for name, param in model.named_parameters():
        d = stability.depth(name, LAYERS)
        seen.add(d)
        if d <= 1:  # the embeddings (with ELECTRA's projection) and layer 0
            assert not param.requires_grad and moved[name] == 0, name
        elif moved[name] > 0:
            assert moved[name].item() == pytest.approx(1e-3 * 0.5 ** (LAYERS - d), rel=0.02), name
    assert seen == {0, 1, 2, 3}
    # every trainable tensor of the top layer and the head moves at the full rate
    assert all(moved[n] > 0 for n, p in model.named_parameters() if p.requires_grad and "layer.2." in n)
    head = [n for n in moved if stability.depth(n, LAYERS) == LAYERS and "layer." not in n]
    assert head and all(moved[n].item() == pytest.approx(1e-3, rel=0.02) for n in head if moved[n] > 0)


@pytest.mark.parametrize("family", ["bert", "electra"])
def test_reinit_top_layers_uses_the_models_initialiser_and_leaves_lower_ones(models, family):
    loaded = build(models[family], FinetuneSettings())
    fresh = build(models[family], FinetuneSettings(reinit_top_layers=1))
    again = build(models[family], FinetuneSettings(reinit_top_layers=1))
    old, new = dict(loaded.named_parameters()), dict(fresh.named_parameters())
    for name, param in new.items():
        top = "layer.2." in name
        if name.endswith("bias"):  # zero in the checkpoint and after re-initialisation
            assert torch.all(param == 0) or not top, name
        else:
            assert torch.equal(param, old[name]) != top, name
        assert torch.equal(param, dict(again.named_parameters())[name]), "re-initialisation follows the seed"
        if top and name.endswith("LayerNorm.weight"):
            assert torch.all(param == 1.0)
        if top and name.endswith("dense.weight"):
            assert param.std().item() == pytest.approx(0.02, rel=0.3)
    # the checkpoint's LayerNorms (at 2) survive below the top layer
    assert torch.all(new[f"{family}.encoder.layer.1.output.LayerNorm.weight"] == 2.0)


def test_settings_that_make_no_sense_are_refused(models):
    with pytest.raises(PipelineError, match=r"finetune.freeze_layers: 4 layers, but .* has 3"):
        build(models["bert"], FinetuneSettings(freeze_layers=4))
    with pytest.raises(PipelineError, match="overlap"):
        build(models["electra"], FinetuneSettings(freeze_layers=2, reinit_top_layers=2))
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(PipelineError, match=r"x.layerwise_lr_decay: must be in \(0, 1\]"):
            FinetuneSettings(layerwise_lr_decay=bad).validate("x")
    with pytest.raises(PipelineError, match="x.reinit_top_layers: must be >= 0"):
        FinetuneSettings(reinit_top_layers=-1).validate("x")


def test_settings_resolve_like_lr_and_are_recorded(tmp_path, models):
    cfg = {
        "tasks": {"biosses": {"finetune": {"reinit_top_layers": 1}}, "mednli": {"source": {"local_dir": "/d"}}},
        "finetune": {"layerwise_lr_decay": 0.8},
    }
    study = load_config(cfg, ROOT / "schemas" / "config.schema.yaml")
    biosses, mednli = (study.resolved_tasks[t].finetune for t in ("biosses", "mednli"))
    assert (biosses.reinit_top_layers, biosses.layerwise_lr_decay) == (1, 0.8)
    assert (mednli.reinit_top_layers, mednli.freeze_layers) == (0, 0)
    with pytest.raises(PipelineError, match="tasks.biosses.finetune.freeze_layers: must be >= 0"):
        load_config({"tasks": {"biosses": {"finetune": {"freeze_layers": -2}}}}, ROOT / "schemas/config.schema.yaml")

    # a model's own keys (the full study's PubMedBERT-large, after Tinn et al.) sit below the tasks'
    full = yaml.safe_load((ROOT / "config.yaml").read_text())
    study = load_config(full, ROOT / "schemas/config.schema.yaml")
    assert study.run_finetune("pubmedbert-large", "chemprot").layerwise_lr_decay == 0.9
    assert study.run_finetune("pubmedbert", "chemprot").layerwise_lr_decay == 1.0
    full["tasks"]["biosses"] = {"finetune": {"layerwise_lr_decay": 0.7}}
    full["models"]["pubmedbert-large"]["finetune"]["freeze_layer"] = 2
    with pytest.raises(PipelineError, match=r"models.pubmedbert-large.finetune.freeze_layer: unknown key"):
        load_config(full, ROOT / "schemas/config.schema.yaml")
    del full["models"]["pubmedbert-large"]["finetune"]["freeze_layer"]
    study = load_config(full, ROOT / "schemas/config.schema.yaml")
    assert study.run_finetune("pubmedbert-large", "biosses").layerwise_lr_decay == 0.7

    chosen = {"layerwise_lr_decay": 0.9, "freeze_layers": 1, "reinit_top_layers": 1}
    metrics = run_cli(tmp_path, models["electra"], "nli", finetune=chosen)
    assert metrics["stability"] == chosen
    written = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["finetune"]
    assert {k: written[k] for k in chosen} == chosen
    assert json.loads((tmp_path / "run" / "provenance.json").read_text())["params"]["finetune"]["freeze_layers"] == 1

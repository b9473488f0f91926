"""trl's fused LM head scores only the labelled positions on CPU (judgeaudit.training.trainers):
the same loss and gradients as scoring every position, on a real small Llama."""

from __future__ import annotations

import torch
import trl.trainer.utils as fused
from transformers import LlamaConfig, LlamaForCausalLM

import judgeaudit.training.trainers  # noqa: F401  (applies the change)


def _loss_and_grads(model: LlamaForCausalLM, ids: torch.Tensor, labels: torch.Tensor):
    model.zero_grad()
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels, fused_lm_head=True)
    out.loss.backward()
    return out.loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_cpu_training_scores_only_the_labelled_positions_with_the_same_loss_and_gradients(monkeypatch):
    assert fused._use_triton(torch.device("cpu")), "trl scores every position on CPU again"
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128,
                                         num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64))
    fused.add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    ids = torch.randint(0, 300, (3, 24))
    labels = ids.clone()
    labels[:, :20] = -100  # a prompt the loss masks out, a four-token completion
    labels[1, 20:] = -100  # and a row with no label at all
    compact_loss, compact_grads = _loss_and_grads(model, ids, labels)
    monkeypatch.setattr(fused, "_use_triton", fused._use_triton.original)
    assert not fused._use_triton(torch.device("cpu"))
    full_loss, full_grads = _loss_and_grads(model, ids, labels)
    torch.testing.assert_close(compact_loss, full_loss, rtol=1e-6, atol=1e-7)
    assert compact_loss > 0
    for name, grad in full_grads.items():
        torch.testing.assert_close(compact_grads[name], grad, rtol=1e-5, atol=1e-7, msg=name)
    assert any(g.abs().sum() > 0 for g in full_grads.values())

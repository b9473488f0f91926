"""Training with trl's trainers: causal-LM pre-training and SFT (SFTTrainer, loss on
the completion only) and DPO (DPOTrainer). No hand-written loops."""

from __future__ import annotations

import functools
import gc
import logging
import os
import warnings
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, set_seed

from judgeaudit.config import TrainArgs
from judgeaudit.models.reward_input import reward_ids
from judgeaudit.tables import atomic_dir

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# trl reads a transformers attribute that transformers deprecates, once per trainer: a
# warning nobody here can act on, printed a dozen times per run
warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)


def _score_labelled_positions_only() -> None:
    """trl's fused LM head (SFT and DPO) scores only the positions that carry a label on
    Triton devices, and every position elsewhere: fixed tile shapes for compilers such as
    Neuron's. Eager CPU has nothing to recompile, and scoring every position computes the
    log-probs, entropies and their gradients of every prompt token the loss masks out,
    which with the one-token completions here (score_range's scores, BOAT's gold letters)
    was most of the head's work. Same loss and gradients (tests/test_trainers.py); SFT of
    BOAT's contamination 102 -> 61 s here."""
    import trl.trainer.utils as fused

    scores_everywhere = fused._use_triton
    if getattr(scores_everywhere, "judgeaudit", False):
        return

    def compact(device: torch.device) -> bool:
        return device.type == "cpu" or scores_everywhere(device)

    compact.judgeaudit, compact.original = True, scores_everywhere
    fused._use_triton = compact


_score_labelled_positions_only()


@functools.cache
def _settle_heap() -> None:
    """Once per process, after the trainers' imports: every object alive now (the imported
    libraries' modules and tables) leaves the cyclic collector's reach. The Trainer runs
    gc.collect() as each training starts and ends; over that heap (about 440,000 objects)
    each took 0.22 s here, 6% of a stage that trains 21 small students. Objects that
    reference counting frees are freed as before."""
    gc.collect()
    gc.freeze()


def _common(args: TrainArgs, seed: int, out: Path) -> dict:
    return dict(output_dir=str(out / "_trainer"), num_train_epochs=args.epochs,
                per_device_train_batch_size=args.batch_size, learning_rate=args.lr,
                lr_scheduler_type="cosine", warmup_steps=5, logging_steps=25, save_strategy="no",
                report_to=[], seed=seed, data_seed=seed, use_cpu=not torch.cuda.is_available(),
                dataloader_num_workers=0, disable_tqdm=True, bf16=False,
                log_level="error", activation_checkpointing=args.activation_checkpointing)


def _quiet(trainer):
    """The trainer without its printer (with tqdm off it prints every log dict to stdout);
    the losses stay in ``trainer.state.log_history``."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


def _save(trainer, tokenizer, tmp: Path) -> dict:
    history = [h for h in trainer.state.log_history if "loss" in h or "train_loss" in h]
    trainer.model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    final = history[-1] if history else {}
    return {"train_loss": final.get("train_loss"), "steps": trainer.state.global_step}


def _eos(tokenizer) -> str:
    return tokenizer.eos_token or ""


def sft(model: PreTrainedModel | str, tokenizer_path: str | Path, rows: list[dict], out: str | Path,
        args: TrainArgs, seed: int, max_length: int = 256) -> dict:
    """Supervised fine-tuning on {"prompt", "completion"} rows; saves to ``out``."""
    from trl import SFTConfig, SFTTrainer

    _settle_heap()
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path))
    if isinstance(model, (str, Path)):
        model = AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32)
    data = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"] + _eos(tokenizer)}
                              for r in rows])
    logging.getLogger("transformers").setLevel(logging.ERROR)
    with atomic_dir(out) as tmp:
        config = SFTConfig(max_length=max_length, completion_only_loss=True,
                           **_common(args, seed, tmp))
        trainer = _quiet(SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer))
        trainer.train()
        summary = _save(trainer, tokenizer, tmp)
        _rm_trainer_dir(tmp)
    return summary


def dpo(model: str | Path, rows: list[dict], out: str | Path, args: TrainArgs, beta: float,
        seed: int, max_length: int = 256) -> dict:
    """DPO on {"prompt", "chosen", "rejected"} rows from the checkpoint ``model``
    (also the frozen reference); saves to ``out``."""
    from trl import DPOConfig, DPOTrainer

    _settle_heap()
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(str(model))
    policy = AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32)
    eos = _eos(tokenizer)
    data = Dataset.from_list([{"prompt": r["prompt"], "chosen": r["chosen"] + eos,
                               "rejected": r["rejected"] + eos} for r in rows])
    logging.getLogger("transformers").setLevel(logging.ERROR)
    with atomic_dir(out) as tmp:
        config = DPOConfig(beta=beta, max_length=max_length, **_common(args, seed, tmp))
        trainer = _quiet(DPOTrainer(model=policy, args=config, train_dataset=data, processing_class=tokenizer))
        trainer.train()
        summary = _save(trainer, tokenizer, tmp)
        _rm_trainer_dir(tmp)
    return summary


def _rm_trainer_dir(tmp: Path) -> None:
    import shutil

    shutil.rmtree(tmp / "_trainer", ignore_errors=True)


def reward_model(base: str | Path, rows: list[dict], out: str | Path, args: TrainArgs, seed: int,
                 max_length: int = 256) -> dict:
    """A sequence-classification reward head on ``base``, trained with trl's RewardTrainer
    (loss -log sigmoid(S(chosen) - S(rejected))) on {"chosen", "rejected"} texts."""
    from transformers import AutoModelForSequenceClassification
    from trl import RewardConfig, RewardTrainer

    _settle_heap()
    set_seed(seed)
    # before the load: its report says the new score head is missing from the base, as it must be
    logging.getLogger("transformers").setLevel(logging.ERROR)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1, dtype=torch.float32)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    # pre-tokenized as the scorer tokenizes (judgeaudit.models.reward_input): trl then neither
    # appends its own EOS nor drops the pairs longer than max_length
    data = Dataset.from_list([{"chosen_ids": reward_ids(tokenizer, r["chosen"], max_length),
                               "rejected_ids": reward_ids(tokenizer, r["rejected"], max_length)}
                              for r in rows])
    with atomic_dir(out) as tmp:
        config = RewardConfig(max_length=max_length, **_common(args, seed, tmp))
        trainer = _quiet(RewardTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer))
        trainer.train()
        summary = _save(trainer, tokenizer, tmp)
        _rm_trainer_dir(tmp)
    return summary

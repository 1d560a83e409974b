"""A real TRL GRPOTrainer run on CPU with PtmonCallback and nothing else, scraped live over HTTP into the
monitor's Dashboard, against TRL's own numbers.

A tiny random Llama built from a config and a word-level tokenizer built here, saved to a temporary
directory (TRL loads its reference model from the path): fully offline. Skips with a reason when TRL is
not installed, and fails instead when PTMON_REQUIRE_TRL=1 (as .ci/run sets).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptmon.exporters.bridges.trl import PtmonCallback
from ptmon.exporters.schema import TRAINER_TOKENS
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target

pytestmark = pytest.mark.slow

MISSING = [m for m in ("torch", "transformers", "trl", "datasets", "tokenizers")
           if importlib.util.find_spec(m) is None]
WORDS = "a b c d e f g h i j k l m n o p q r s t u v w x y z".split()
STEPS = 6
EVAL_EVERY = 3


@pytest.fixture(scope="module")
def trl_present() -> None:
    if MISSING:
        reason = f"TRL's stack is not installed ({', '.join(MISSING)}); see README, Development"
        if os.environ.get("PTMON_REQUIRE_TRL") == "1":
            pytest.fail(f"PTMON_REQUIRE_TRL=1 but {reason}")
        pytest.skip(reason)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[name] = "1"


def tiny_model(directory: Path) -> str:
    """A 1-layer random Llama and a word-level tokenizer, saved to ``directory`` (nothing downloaded)."""
    torch, transformers = importlib.import_module("torch"), importlib.import_module("transformers")
    tokenizers = importlib.import_module("tokenizers")
    Tokenizer, decoders, models, pre_tokenizers = (tokenizers.Tokenizer, tokenizers.decoders, tokenizers.models,
                                                   tokenizers.pre_tokenizers)
    LlamaConfig, LlamaForCausalLM = transformers.LlamaConfig, transformers.LlamaForCausalLM
    PreTrainedTokenizerFast = transformers.PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>")
    tokenizer.padding_side = "left"
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                         pad_token_id=0, eos_token_id=1, bos_token_id=1)
    LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


class Observed:
    """What TRL itself says: the reward function's own completions and rewards, and each eval's score."""

    def __init__(self) -> None:
        self.completions: dict[str, int] = {"train": 0, "eval": 0}
        self.rewards: list[float] = []
        self.evals: list[tuple[int, float]] = []
        self.after_eval: Callable[[], None] = lambda: None

    def reward(self, completions: list[str], split: list[str], **kwargs: Any) -> list[float]:
        scores = [float(len(c.split()) % 2) for c in completions]
        self.completions[split[0]] += len(completions)
        if split[0] == "train":
            self.rewards.extend(scores)
        return scores

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, float], **kwargs: Any) -> None:
        self.evals.append((state.global_step, metrics["eval_reward"]))
        self.after_eval()  # runs after PtmonCallback's on_evaluate: its gauges now hold this eval

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)


def build(tmp_path: Path, observed: Observed, callback: PtmonCallback) -> Any:
    # Imported by name at run time: the static checks run where TRL's stack may not be installed.
    Dataset = importlib.import_module("datasets").Dataset
    trl = importlib.import_module("trl")
    GRPOConfig, GRPOTrainer = trl.GRPOConfig, trl.GRPOTrainer

    prompts = [" ".join(WORDS[i:i + 3]) for i in range(20)]
    train = Dataset.from_dict({"prompt": prompts, "split": ["train"] * len(prompts)})
    evals = Dataset.from_dict({"prompt": prompts[:4], "split": ["eval"] * 4})
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=6, max_steps=STEPS, logging_steps=1, report_to="none", use_cpu=True,
                      eval_strategy="steps", eval_steps=EVAL_EVERY, per_device_eval_batch_size=4,
                      save_strategy="no", learning_rate=1e-3, beta=0.04, seed=0, disable_tqdm=True)
    return GRPOTrainer(model=tiny_model(tmp_path / "tiny"), reward_funcs=observed.reward, args=args,
                       train_dataset=train, eval_dataset=evals, callbacks=[callback, observed])


async def test_a_real_grpo_run_reads_as_trl_counts_it(trl_present: None, tmp_path: Path) -> None:
    observed = Observed()
    callback = PtmonCallback(port=0, gpus=0, gpu_hour_price=3.0)
    trainer = build(tmp_path, observed, callback)
    assert callback.url is not None  # serving from the trainer's construction on
    feed = LiveFeed(Settings(targets=(Target(name="trl", url=callback.url),), interval_s=0.5, timeout_s=0.4))
    loop = asyncio.get_running_loop()
    # An eval is a gauge: two evals between scrapes leave only the second, as with any scraper. The run
    # here is so fast that a training thread holding the GIL can keep the 0.25 s scrapes off the CPU
    # across a whole eval interval, so each eval is scraped before training goes on.
    observed.after_eval = lambda: asyncio.run_coroutine_threadsafe(feed.collect_once(), loop).result(timeout=10)
    try:
        first = time.time()
        await feed.collect_once()
        training = asyncio.get_running_loop().run_in_executor(None, trainer.train)
        while not training.done():
            await asyncio.sleep(0.25)
            await feed.collect_once()
        await training
        await feed.collect_once()
        window = time.time() - first + 0.05  # every scrape of the run is inside (start, end]
        d = await feed.dashboard(window_s=window)
    finally:
        await feed.aclose()
        callback.close()
    steps = trainer.state.global_step
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert steps == STEPS and len(logs) == STEPS
    assert callback.trainer is trainer  # found at train start (it would time vLLM's weight syncs)

    # steps/s: ptmon's against TRL's own count over the same seconds
    trl_rate = steps / window
    print(f"\nTRL run: {steps} steps in {window:.1f} s; steps/s ptmon {d.steps_per_s:.4f} vs TRL {trl_rate:.4f}; "
          f"rollouts/step ptmon {(d.rollout_rate_per_s or 0) / (d.steps_per_s or 1):.3f} vs reward function "
          f"{observed.completions['train'] / steps:.3f}; mean reward ptmon "
          f"{({w.name: w for w in d.workers}['trl'].mean_reward or 0):.4f} vs TRL logs "
          f"{statistics.fmean(entry['reward'] for entry in logs):.4f}; evals {observed.evals}")
    assert d.steps_per_s == pytest.approx(trl_rate, rel=0.10)
    # rollouts per step: what the reward function was given to score, per TRL step
    per_step = observed.completions["train"] / steps
    assert per_step == 4
    assert d.rollout_rate_per_s is not None and d.steps_per_s is not None
    assert d.rollout_rate_per_s / d.steps_per_s == pytest.approx(per_step)
    # mean reward over the same steps: TRL's logged reward, and the reward function's own mean
    row = {w.name: w for w in d.workers}["trl"]
    trl_reward = statistics.fmean(entry["reward"] for entry in logs)
    assert row.mean_reward is not None
    assert abs(row.mean_reward - trl_reward) < 0.02
    assert abs(row.mean_reward - statistics.fmean(observed.rewards)) < 0.02
    # each on_evaluate score on the eval curve, at its step
    assert len(observed.evals) == STEPS // EVAL_EVERY
    assert [e.policy_version for e in d.eval_curve] == [float(step) for step, _ in observed.evals]
    assert [e.score for e in d.eval_curve] == pytest.approx([score for _, score in observed.evals])
    # the trainer card: TRL's last logged scalars, its running token total, a step time covering TRL's
    last = logs[-1]
    for field, key in (("loss", "loss"), ("kl", "kl"), ("entropy", "entropy"), ("grad_norm", "grad_norm"),
                       ("learning_rate", "learning_rate")):
        assert getattr(d, field) == pytest.approx(last[key], rel=1e-6, abs=1e-12), field
    tokens = [s.last() for s in feed.store.series("trl", TRAINER_TOKENS.name)]
    assert tokens and tokens[0] is not None and tokens[0][1] == last["num_tokens"]
    assert d.step_seconds is not None
    assert d.step_seconds >= 0.95 * statistics.fmean(entry["step_time"] for entry in logs)
    assert d.staleness_max == 0  # generation samples the live model: on-policy

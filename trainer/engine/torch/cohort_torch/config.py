"""The run configuration (COHORT_TRAIN_CONFIG, then flags field by field), checked before any
rendezvous, plus the environment switches and the LR schedule."""
import argparse
import json
import math
import os

import torch

from .defaults import DEFAULTS

# torch.compile's modes (its documentation); a typo fails here, not after rendezvous and warm-up.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
SYNTHETIC_SIZE = 50_000    # nominal synthetic epoch, as the tfjs engine's
PEER_TIMEOUT_S = float(os.environ.get("COHORT_PEER_TIMEOUT_S", "10"))  # a silent peer fails the run after this long
HEARTBEAT_S = 1.0          # the watchdog's all-reduce period
RENDEZVOUS_TIMEOUT_S = 300.0  # waiting for every rank to start
# The seeds' extras (SC20 "# EXTRA", "# NHWC") are on by default; COHORT_TORCH_EXTRAS=0 gives the
# plain "native" rung of the GPU ladder, COHORT_TORCH_CHANNELS_LAST=0 turns off NHWC alone.
EXTRAS = os.environ.get("COHORT_TORCH_EXTRAS", "1") != "0"
CHANNELS_LAST = EXTRAS and os.environ.get("COHORT_TORCH_CHANNELS_LAST", "1") != "0"
MEMORY_FORMAT = torch.channels_last if CHANNELS_LAST else torch.contiguous_format


class ConfigError(ValueError):
    pass


def kebab(key):
    return "".join("-" + c.lower() if c.isupper() else c for c in key)


def load_config(argv):
    cfg = dict(DEFAULTS)
    given = json.loads(os.environ.get("COHORT_TRAIN_CONFIG") or "{}")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"COHORT_TRAIN_CONFIG: unknown setting(s) {unknown}; this engine knows {sorted(DEFAULTS)}")
    if "epochs" in given and "steps" not in given:
        given["steps"] = 0
    cfg.update(given)
    parser = argparse.ArgumentParser(description="Cohort torch engine (flags override COHORT_TRAIN_CONFIG)")
    for key, default in DEFAULTS.items():
        if isinstance(default, bool):
            parser.add_argument("--" + kebab(key), dest=key, nargs="?", const=True, default=None,
                                type=lambda s: s.lower() in ("1", "true", "yes", "on"))
        elif key == "compileMode":
            parser.add_argument("--compile-mode", dest=key, choices=COMPILE_MODES, default=None)
        else:
            parser.add_argument("--" + kebab(key), dest=key, type=type(default), default=None)
    flags = {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    if "epochs" in flags and "steps" not in flags:
        flags["steps"] = 0
    cfg.update(flags)
    problems = []
    if (cfg["steps"] > 0) == (cfg["epochs"] > 0):
        problems.append("--steps/--epochs: give exactly one of them > 0")
    if cfg["imageSize"] < {"imagenet": 32, "cifar": 8}.get(cfg["stem"], 32):
        problems.append(f"--image-size {cfg['imageSize']} is too small for the {cfg['stem']} stem")
    if cfg["stem"] not in ("imagenet", "cifar"):
        problems.append(f"--stem: expected imagenet or cifar, got {cfg['stem']!r}")
    if cfg["fp16"] and cfg["bf16"]:
        problems.append("--bf16: choose one of --fp16 and --bf16")
    if cfg["compileMode"] not in COMPILE_MODES:
        problems.append(f"--compile-mode: expected one of {', '.join(COMPILE_MODES)}, got {cfg['compileMode']!r}")
    if not (cfg["data"] == "synthetic" or cfg["data"].startswith("cifar100:")):
        problems.append(f"--data: expected synthetic or cifar100:DIR, got {cfg['data']!r}")
    if problems:
        raise ConfigError("bad configuration: " + "; ".join(problems))
    return cfg


def learning_rate(step, cfg, total):
    """Mirrors trainer/optim/schedule.ts: linear warm-up, then constant, cosine to 0, or step decay."""
    lr, warm = cfg["lr"], cfg["lrWarmupSteps"]
    if warm > 0 and step < warm:
        return lr * (step + 1) / warm
    progress = min(1.0, max(0.0, (step - warm) / max(1, total - warm)))
    if cfg["schedule"] == "cosine":
        return 0.5 * lr * (1 + math.cos(math.pi * progress))
    if cfg["schedule"] == "step":
        return lr * (0.01 if progress >= 0.75 else 0.1 if progress >= 0.5 else 1.0)
    return lr

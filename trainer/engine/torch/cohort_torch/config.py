"""The run configuration (COHORT_TRAIN_CONFIG, then flags field by field), checked before any
rendezvous, plus the environment switches and the LR schedule."""
import argparse
import json
import math
import os

import torch

from .defaults import DEFAULTS, FIELDS, MIN_IMAGE_SIZE

# torch.compile's modes (the table's --compile-mode values); a typo fails here, not after rendezvous and warm-up.
COMPILE_MODES = tuple(FIELDS["compileMode"]["values"])
SYNTHETIC_SIZE = 50_000    # nominal synthetic epoch, as the tfjs engine's
PEER_TIMEOUT_S = float(os.environ.get("COHORT_PEER_TIMEOUT_S", "10"))  # a silent peer fails the run after this long
HEARTBEAT_S = 1.0          # the watchdog's all-reduce period
RENDEZVOUS_TIMEOUT_S = 300.0  # waiting for every rank to start
# The seeds' extras (SC20 "# EXTRA", "# NHWC") are on by default; COHORT_TORCH_EXTRAS=0 gives the
# plain "native" rung of the GPU ladder, COHORT_TORCH_CHANNELS_LAST=0 turns off NHWC alone.
EXTRAS = os.environ.get("COHORT_TORCH_EXTRAS", "1") != "0"
CHANNELS_LAST = EXTRAS and os.environ.get("COHORT_TORCH_CHANNELS_LAST", "1") != "0"
MEMORY_FORMAT = torch.channels_last if CHANNELS_LAST else torch.contiguous_format
# COHORT_STEP_PAUSE_MS (trainer/protocol/timings.ts stepPauseMs; 0 in production, which never sets it): seconds a
# rank sleeps between two steps, for tests' runs that only need to stay alive. Not whole ms: 0, as readTimings keeps its default.
_PAUSE = os.environ.get("COHORT_STEP_PAUSE_MS", "").strip()
STEP_PAUSE_S = int(_PAUSE) / 1000 if _PAUSE.isdigit() else 0.0


class ConfigError(ValueError):
    pass


def kebab(key):
    return "".join("-" + c.lower() if c.isupper() else c for c in key)


def overlay(base, given):
    """trainer/protocol/train-config.ts overlayTrainConfig, the budget rule: a layer that gives epochs
    without steps replaces the step budget beneath it, and the reverse."""
    out = dict(base)
    if "epochs" in given and "steps" not in given:
        out["steps"] = 0
    if "steps" in given and "epochs" not in given:
        out["epochs"] = 0
    out.update(given)
    return out


def _row_problem(key, v):
    """The row's own check, from the table (train-config.json): kind, bounds, enum values."""
    f = FIELDS[key]
    kind, flag = f["kind"], f["flag"]
    number = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if kind in ("int", "float"):
        if not number or (kind == "int" and not float(v).is_integer()):
            return f"{flag}: expected {'an integer' if kind == 'int' else 'a number'}, got {v!r}"
        if v < f["min"] or ("max" in f and v > f["max"]):
            return f"{flag}: {v} is out of range ({f['min']}..{f.get('max', '')})"
    elif kind == "bool" and not isinstance(v, bool):
        return f"{flag}: expected true or false, got {v!r}"
    elif kind == "enum" and v not in f["values"]:
        return f"{flag}: expected one of {', '.join(f['values'])}, got {v!r}"
    elif kind == "string" and (not isinstance(v, str) or (f.get("nonEmpty") and v == "")):
        return f"{flag}: expected a{' non-empty' if f.get('nonEmpty') else ''} string, got {v!r}"
    return None


def load_config(argv):
    given = json.loads(os.environ.get("COHORT_TRAIN_CONFIG") or "{}")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"COHORT_TRAIN_CONFIG: unknown setting(s) {unknown}; this engine knows {sorted(DEFAULTS)}")
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
    cfg = overlay(overlay(DEFAULTS, given), flags)
    problems = [p for p in (_row_problem(k, cfg[k]) for k in DEFAULTS) if p]
    if problems:
        raise ConfigError("bad configuration: " + "; ".join(problems))
    for k in DEFAULTS:
        if FIELDS[k]["kind"] == "int":
            cfg[k] = int(cfg[k])
        elif FIELDS[k]["kind"] == "float":
            cfg[k] = float(cfg[k])
    # The rules across rows, as decodeTrainConfig's (test/torch/torch-config-rules.test.ts holds them equal).
    if cfg["steps"] == 0 and cfg["epochs"] == 0:
        problems.append("--steps: give --steps K or --epochs E (both are 0)")
    if cfg["steps"] > 0 and cfg["epochs"] > 0:
        problems.append("--epochs: give either --steps or --epochs, not both")
    if cfg["imageSize"] < MIN_IMAGE_SIZE[cfg["stem"]]:
        problems.append(f"--image-size: {cfg['imageSize']} is too small for the {cfg['stem']} stem (ResNet-50 needs at least {MIN_IMAGE_SIZE[cfg['stem']]})")
    if cfg["fp16"] and cfg["bf16"]:
        problems.append("--bf16: choose one of --fp16 and --bf16")
    if not (cfg["data"] == "synthetic" or (cfg["data"].startswith("cifar100:") and len(cfg["data"]) > len("cifar100:"))):
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

"""Cohort's PyTorch engine: data-parallel ResNet-50 that speaks Cohort's event protocol.

The host agent starts one process per slot with the rendezvous environment torch.distributed
uses, plus the run configuration as JSON, and relays what rank 0 prints on stdout:

    MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 COHORT_HOST=gpu1 \
    COHORT_TRAIN_CONFIG='{"batchSize":64,"imageSize":224,"steps":100,"fp16":true}' \
    python3 torch_engine.py

Standalone (no Cohort, one process), flags override COHORT_TRAIN_CONFIG field by field:

    python3 torch_engine.py --image-size 64 --batch-size 16 --steps 30 --log-steps 10
    python3 torch_engine.py --image-size 224 --batch-size 64 --compile --fp16     # the seeds' GPU ladder
    python3 torch_engine.py --data cifar100:/data/cifar-100-binary --stem cifar --epochs 2

Protocol: rank 0 prints one JSON event per line on stdout (hello, plan, compile, warmup, step,
epoch, checkpoint, done; shapes in trainer/protocol/events.ts). Any rank that fails prints an
`error` event and exits 1. Everything else (progress, warnings, library noise) goes to stderr.

Other environment: COHORT_THREADS (torch threads; default cores / ranks on this host),
COHORT_ENGINE_REASON (the agent's reason for choosing torch, prefixed to hello.reason),
COHORT_RUN_DIR (checkpoints go to $COHORT_RUN_DIR/checkpoints when no checkpointDir is given),
COHORT_PEER_TIMEOUT_S (a silent peer fails the run after this long; default 10),
COHORT_TORCH_EXTRAS=0 (the seeds' plain "native" loop: no channels-last, cudnn.benchmark, fused
AdamW, set_to_none, pinned/non-blocking copies), COHORT_TORCH_CHANNELS_LAST=0 (NHWC alone off),
COHORT_TORCH_BUILTIN_RESNET=1 (use the built-in ResNet-50 even when torchvision is installed).
Under torchrun (TORCHELASTIC_RUN_ID set) the ranks join torchrun's own rendezvous store.

The pieces, one job per module, are in cohort_torch/ (its __init__ lists them).
"""
import sys
import traceback

from cohort_torch.events import exit_now, fail, remember  # first: it takes fd 1 before torch loads

try:  # a torch that does not import (a missing library, a broken install) is named, not a bare traceback
    import torch  # noqa: E402, F401
except Exception as err:  # noqa: BLE001 (ImportError, OSError from a shared library, ...)
    remember(traceback.format_exc().rstrip().splitlines()[-12:])
    print(traceback.format_exc(), file=sys.stderr)
    # The agent chose this Python from torch's files without importing it (trainer/agent/engine-choice.ts,
    # enginesReportImport): this event is where a broken torch is reported.
    fail(f"--engine torch: {sys.executable} cannot import torch ({type(err).__name__}: {err})", "engine-unavailable",
         hint=f"fix or reinstall PyTorch for {sys.executable} ({sys.executable} -c 'import torch' shows the error), or set the host's python in the profile")

from cohort_torch import checkpoint, distributed, loop, run as runs  # noqa: E402
from cohort_torch.config import ConfigError, load_config  # noqa: E402
from cohort_torch.gpu import GpuMemory  # noqa: E402


def main(argv):
    cfg = load_config(argv)                        # config: COHORT_TRAIN_CONFIG, then flags; checked before any rendezvous
    d, gpu = distributed.setup(GpuMemory)          # setup: device, rendezvous, process groups, heartbeat watchdog
    run = runs.build(cfg, d, gpu)                  # model, optimizer, precision, data
    runs.announce(run)                             # rank 0: hello, plan
    start = checkpoint.resume(run)                 # rank 0 reads, every rank receives
    runs.wrap(run)                                 # DDP, torch.compile
    steps, rates = loop.train(run, start)          # the loop (step events, epochs, checkpoints: rank 0)
    runs.finish(run, steps, rates)                 # checksum, heartbeat stopped, done


def failure_code(err, text):
    if isinstance(err, ConfigError):
        return "config", text
    if any(k in text for k in ("Connection closed by peer", "Connection reset", "gloo", "NCCL", "Timed out")):
        return "peer-lost", f"lost contact with a peer rank (it died or its host is unreachable): {text}"
    return None, text


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        fail("interrupted (SIGINT)", "cancelled", 130)
    except SystemExit as exit_:
        if exit_.code not in (0, None):  # argparse --help exits 0; bad flags exit 2
            fail(f"bad command line (exit {exit_.code}); see --help", "bad-config", 2)
        raise
    except BaseException as err:  # noqa: BLE001 (every failure must reach Cohort as an event)
        remember(traceback.format_exc().rstrip().splitlines()[-12:])
        print(traceback.format_exc(), file=sys.stderr)
        code, text = failure_code(err, f"{type(err).__name__}: {err}")
        fail(text, code)
    exit_now(0)  # skip interpreter teardown: process-group destructors can stall after peers exit

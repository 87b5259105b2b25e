"""Checkpoints (rank 0 writes; every rank resumes from what rank 0 read) and the weights checksum."""
import hashlib
import os

import torch
import torch.distributed as dist

from .events import emit0, log


def param_checksum(model):
    """sha256 of the parameters as little-endian float32, in model.parameters() order, NCHW layout."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().contiguous().numpy().astype("<f4").tobytes())
    return h.hexdigest()


def checkpoint_dir(cfg):
    if cfg["checkpointDir"]:
        return cfg["checkpointDir"]
    run_dir = os.environ.get("COHORT_RUN_DIR")
    return os.path.join(run_dir, "checkpoints") if run_dir and (cfg["checkpointEvery"] or cfg["resume"]) else ""


def latest_checkpoint(path):
    names = sorted(n for n in os.listdir(path) if n.startswith("torch-step") and n.endswith(".pt")) if os.path.isdir(path) else []
    return os.path.join(path, names[-1]) if names else None


def save_checkpoint(path, state, step):
    """Rank 0 only; atomic (write, fsync, rename); keeps the newest two."""
    os.makedirs(path, exist_ok=True)
    final = os.path.join(path, f"torch-step{step:08d}.pt")
    tmp = f"{final}.{os.getpid()}.tmp"  # the pid: the agent removes a temp whose writer died (stale-temps.ts)
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    for old in sorted(n for n in os.listdir(path) if n.startswith("torch-step") and n.endswith(".pt"))[:-2]:
        os.remove(os.path.join(path, old))
    return final


def resume(run):
    """Rank 0 reads the newest checkpoint and every rank receives it (hosts need not share a
    filesystem). Returns the step to start from."""
    if not (run.cfg["resume"] and run.ckpt_dir):
        return 0
    box = [None]
    if run.rank == 0:
        path = latest_checkpoint(run.ckpt_dir)
        box = [dict(torch.load(path, map_location="cpu"), path=path) if path else None]
    if run.world > 1:
        dist.broadcast_object_list(box, src=0, group=run.meta_group)
    if not box[0]:
        log(f"--resume: no checkpoint in {run.ckpt_dir}; starting from step 0")
        return 0
    run.raw_model.load_state_dict(box[0]["model"])
    run.optimizer.load_state_dict(box[0]["optimizer"])
    run.scaler.load_state_dict(box[0]["scaler"])
    emit0("checkpoint", step=box[0]["step"], path=box[0]["path"], action="resumed")
    return box[0]["step"]


def save(run, step):
    """Rank 0, every checkpointEvery steps."""
    path = save_checkpoint(run.ckpt_dir, {"model": run.raw_model.state_dict(), "optimizer": run.optimizer.state_dict(),
                                          "scaler": run.scaler.state_dict(), "step": step, "config": run.cfg}, step)
    emit0("checkpoint", step=step, path=path, action="saved")

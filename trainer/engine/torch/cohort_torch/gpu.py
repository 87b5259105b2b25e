"""This rank's GPU, as it really is, and its memory.

Identity: what the process itself uses (torch.cuda.current_device() and that device's own UUID from
cudaGetDeviceProperties), matched to nvidia-smi's row by UUID, so the GPU index reported is
nvidia-smi's whatever CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER said. Without a UUID from torch
(older PyTorch) the CUDA_VISIBLE_DEVICES entry is resolved the way trainer/util/nvidia-smi.ts does.

Memory, per rank (each rank reports its own in step.memory):
- torch's caching allocator, this process only: memory_allocated (tensorBytes),
  max_memory_allocated since warm-up ended (peakTensorBytes; reset_peak() at the end of warm-up),
  memory_reserved (reservedBytes: what the allocator holds from the driver);
- this process's own bytes on its GPU as the driver counts them (gpuProcessBytes: nvidia-smi
  --query-compute-apps, matched by pid and UUID; includes the CUDA context), refreshed from the
  watchdog thread so a step never waits for a subprocess;
- the device's used/total (cudaMemGetInfo: every process on it; a MIG slice's own for MIG) and its
  utilisation (nvidia-smi utilization.gpu, with the process bytes).
On the CPU torch keeps no allocator statistics: tensorBytes counts the parameters, gradients and
optimizer state (what lives across steps), and no peak is claimed.

The parsing functions are pure (tested with nvidia-smi output fixtures: no GPU where this was written).
"""
import os
import subprocess
import time

import torch

SMI_TIMEOUT_S = 5
REFRESH_S = 5.0
MIB = 1 << 20


def smi(*args):
    """nvidia-smi's stdout, or None when it is missing or fails."""
    try:
        r = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def parse_gpu_uuids(csv):
    """`nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader,nounits` → [{index, uuid, name, pci}]."""
    rows = []
    for line in (csv or "").splitlines():
        f = [s.strip() for s in line.split(",")]
        if len(f) >= 4 and f[0].isdigit() and f[1].startswith("GPU-"):
            rows.append({"index": int(f[0]), "uuid": f[1], "name": f[2], "pci": f[3]})
    return rows


def parse_mig_parents(text):
    """`nvidia-smi -L` → {MIG uuid: parent GPU uuid}."""
    out, parent = {}, None
    for line in (text or "").splitlines():
        s = line.strip()
        if s.startswith("GPU ") and "(UUID: GPU-" in s:
            parent = s.split("(UUID: ", 1)[1].rstrip(")").strip()
        elif s.startswith("MIG ") and "(UUID: MIG-" in s and parent:
            out[s.split("(UUID: ", 1)[1].rstrip(")").strip()] = parent
    return out


def process_bytes(csv, pid, uuid):
    """`nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits` →
    this pid's bytes on that GPU (None when not listed, or "[N/A]" as under MIG)."""
    total, seen = 0, False
    for line in (csv or "").splitlines():
        f = [s.strip() for s in line.split(",")]
        if len(f) >= 3 and f[0] == str(pid) and f[2] == uuid:
            try:
                total += int(float(f[1]) * MIB)
                seen = True
            except ValueError:
                pass
    return total if seen else None


def as_id(row, how, uuid=None, parent=None):
    out = {"uuid": uuid or row["uuid"], "index": row["index"], "name": row["name"], "how": how}
    if parent:
        out["parentUuid"] = parent
    return out


def gpu_util(csv, uuid):
    """`nvidia-smi --query-gpu=uuid,utilization.gpu --format=csv,noheader,nounits` → that GPU's percent
    (None for "[N/A]", as under MIG, or when not listed)."""
    for line in (csv or "").splitlines():
        f = [s.strip() for s in line.split(",")]
        if len(f) >= 2 and f[0] == uuid:
            try:
                v = float(f[1])
            except ValueError:
                return None
            return v if 0 <= v <= 100 else None
    return None


def resolve_visible(entry_list, ordinal, rows, pci_order, migs=None):
    """The GPU behind CUDA device `ordinal`, from CUDA_VISIBLE_DEVICES (None: every GPU, in PCI order when
    CUDA_DEVICE_ORDER=PCI_BUS_ID). Integers are nvidia-smi's only in PCI order or when every GPU is the same
    model; UUID (prefix) and MIG entries always resolve. Returns (id dict or None, why)."""
    migs = migs or {}
    by_pci = sorted(rows, key=lambda r: r["pci"])
    entries = [str(i) for i in range(len(by_pci))] if entry_list is None else [e.strip() for e in entry_list.split(",")]
    if ordinal >= len(entries) or entries[ordinal] in ("", "-1"):
        return None, f"CUDA_VISIBLE_DEVICES={entry_list!r} leaves no CUDA device {ordinal}"
    e = entries[ordinal]
    if e.isdigit():
        if not pci_order and len({r["name"] for r in rows}) > 1:
            return None, f"CUDA device {e} is ambiguous: mixed GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID"
        i = int(e)
        return (as_id(by_pci[i], "CUDA_VISIBLE_DEVICES index"), "") if i < len(by_pci) else (None, f"no GPU {e} in nvidia-smi")
    if e.startswith("MIG-"):
        legacy = e[4:].split("/")[0] if e.startswith("MIG-GPU-") else None  # driver < 470: MIG-GPU-<uuid>/<gi>/<ci>
        parent = legacy or next((p for m, p in migs.items() if m.startswith(e)), None)
        uuid = e if legacy else next((m for m in migs if m.startswith(e)), e)
        row = next((r for r in rows if r["uuid"] == parent), None)
        return (as_id(row, "CUDA_VISIBLE_DEVICES MIG", uuid, parent), "") if row else (None, f"MIG device {e} is not in nvidia-smi -L")
    uuid = e if e.startswith("GPU-") else "GPU-" + e
    match = [r for r in rows if r["uuid"].startswith(uuid)]
    return (as_id(match[0], "CUDA_VISIBLE_DEVICES UUID"), "") if len(match) == 1 else (None, f"CUDA_VISIBLE_DEVICES entry {e} matches {len(match)} GPUs")


def identify(torch_uuid, rows, migs, visible, ordinal, pci_order):
    """This rank's GPU: {uuid, index (nvidia-smi's), name, how[, parentUuid]}. torch's own UUID wins (what the
    process really uses); a MIG instance is named by its own UUID, with its parent GPU's index."""
    if torch_uuid:
        for prefix in ("GPU-", "MIG-"):
            u = prefix + torch_uuid
            row = next((r for r in rows if r["uuid"] == u), None)
            if row:
                return as_id(row, "torch device UUID")
            parent = next((r for r in rows if r["uuid"] == migs.get(u)), None)
            if parent:
                return as_id(parent, "torch device UUID (MIG)", u, parent["uuid"])
    got, why = resolve_visible(visible, ordinal, rows, pci_order, migs)
    if got:
        return got
    if torch_uuid and not rows:  # no nvidia-smi: CUDA's own UUID is still the truth, without an index
        return {"uuid": "GPU-" + torch_uuid, "index": None, "name": "", "how": "torch device UUID (nvidia-smi not available)"}
    return {"uuid": None, "index": None, "name": "", "how": why}


def torch_uuid(device):
    """The device's UUID as CUDA reports it (no "GPU-" prefix), or None on a PyTorch without it."""
    u = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return str(u) if u else None


class GpuMemory:
    """One rank's device identity and memory (see the module docstring)."""

    def __init__(self, device):
        self.device, self.pid = device, os.getpid()
        self.id = {"uuid": None, "index": None, "name": "", "how": "cpu"}
        self.process, self.util, self.last, self.note, self.fell_back = None, None, 0.0, None, False
        if device.type != "cuda":
            # On the CPU while the driver lists GPUs: said loudly (plan gpuFellBack, hello deviceWarning).
            self.fell_back = any(line.startswith("GPU ") for line in (smi("-L") or "").splitlines())
            return
        rows = parse_gpu_uuids(smi("--query-gpu=index,uuid,name,pci.bus_id", "--format=csv,noheader,nounits"))
        migs = parse_mig_parents(smi("-L")) if rows else {}
        self.id = identify(torch_uuid(device), rows, migs, os.environ.get("CUDA_VISIBLE_DEVICES"), device.index or 0,
                           os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID")
        if not rows:
            self.note = "nvidia-smi is missing or lists no GPU: no per-process GPU bytes"

    @property
    def physical_index(self):
        return self.id["index"]

    def plan_fields(self):
        """This rank's entry in `plan`: the device it computes on, checked, not the one asked for."""
        if self.device.type != "cuda":
            return {"device": "cpu", **({"gpuFellBack": True} if self.fell_back else {})}
        out = {"device": self.describe()}
        if self.id["index"] is not None:
            out["gpu"] = self.id["index"]
        if self.id["uuid"]:
            out["gpuUuid"] = self.id["uuid"]
        return out

    def describe(self):
        """hello/plan's device line: what this rank computes on."""
        if self.device.type != "cuda":
            return None
        where = ", ".join(x for x in (f"GPU {self.id['index']}" if self.id["index"] is not None else "", self.id["uuid"] or "") if x)
        return f"cuda:{self.device.index} {torch.cuda.get_device_name(self.device)}" + (f" ({where})" if where else f" (not matched to nvidia-smi: {self.id['how']})")

    def refresh(self):
        """Watchdog thread: this process's bytes on its GPU, every REFRESH_S."""
        if self.device.type != "cuda" or not self.id["uuid"] or time.time() - self.last < REFRESH_S:
            return
        self.last = time.time()
        apps = smi("--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits")
        # compute-apps names the physical GPU, also for a process on a MIG instance
        physical = self.id.get("parentUuid") or self.id["uuid"]
        self.process = process_bytes(apps, self.pid, physical)
        self.util = gpu_util(smi("--query-gpu=uuid,utilization.gpu", "--format=csv,noheader,nounits"), physical)

    def reset_peak(self):
        """Warm-up is over: the peak from now on is the training loop's."""
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    def row(self, run):
        """[tensor, peak, reserved, process, device used, device total, util %] for this rank; -1 = not known."""
        if self.device.type != "cuda":
            return [cpu_tensor_bytes(run), -1, -1, -1, -1, -1, -1]
        free, total = torch.cuda.mem_get_info(self.device)
        proc = self.process if self.process is not None else -1
        util = self.util if self.util is not None else -1
        return [torch.cuda.memory_allocated(self.device), torch.cuda.max_memory_allocated(self.device),
                torch.cuda.memory_reserved(self.device), proc, total - free, total, util]


def cpu_tensor_bytes(run):
    """CPU torch keeps no allocator statistics: count the tensors that live across steps."""
    params = list(run.raw_model.parameters())
    live = params + [p.grad for p in params if p.grad is not None]
    live += [v for s in run.optimizer.state.values() for v in s.values() if torch.is_tensor(v)]
    return sum(t.numel() * t.element_size() for t in live)

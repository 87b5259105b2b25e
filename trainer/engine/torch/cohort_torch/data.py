"""Data sources. Both yield (images, labels) already on the device, images NCHW float."""
import os

import torch
import torch.nn.functional as F

from .config import EXTRAS, MEMORY_FORMAT, SYNTHETIC_SIZE, ConfigError

CIFAR_MEAN, CIFAR_STD = (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)


class Synthetic:
    """The seeds' synthetic data, generated on the device once: a small pool of random batches
    (distinct per rank) that the loop cycles through, so no host-side input cost is measured."""

    def __init__(self, cfg, rank, world, device):
        self.size = SYNTHETIC_SIZE
        self.steps_per_epoch = self.size // (cfg["batchSize"] * world)
        b, s = cfg["batchSize"], cfg["imageSize"]
        pool = max(1, min(4, (256 << 20) // (b * 3 * s * s * 4)))  # ≤ 256 MiB of inputs
        gen = torch.Generator(device=device)
        gen.manual_seed(cfg["seed"] * 1000 + rank)
        self.batches = [(torch.randn(b, 3, s, s, generator=gen, device=device).contiguous(memory_format=MEMORY_FORMAT),
                         torch.randint(0, cfg["classes"], (b,), generator=gen, device=device)) for _ in range(pool)]

    def epoch(self, epoch, start=0):
        for i in range(start, self.steps_per_epoch):
            yield self.batches[i % len(self.batches)]


def read_cifar(path, data_arg):
    if not os.path.isfile(path):
        raise ConfigError(f"--data {data_arg}: {path} not found. Download the CIFAR-100 *binary* version "
                                "(cifar-100-binary.tar.gz), extract it, and pass the folder holding train.bin and test.bin.")
    raw = torch.frombuffer(bytearray(open(path, "rb").read()), dtype=torch.uint8)
    if raw.numel() == 0 or raw.numel() % 3074:
        raise ConfigError(f"--data {data_arg}: {path} is {raw.numel()} bytes, not a whole number of 3074-byte records")
    rec = raw.view(-1, 3074)
    return rec[:, 2:].reshape(-1, 3, 32, 32).clone(), rec[:, 1].long().clone()  # fine labels


class Cifar100:
    """CIFAR-100 binary: records of coarse label, fine label, 3072 bytes CHW. DistributedSampler
    shards and shuffles per epoch; augmentation (SC20: 4-px padded random crop, flip), normalisation
    and resizing run on the device. On CUDA, batches are pinned and copied without blocking."""

    def __init__(self, cfg, rank, world, device):
        self.dir = cfg["data"][len("cifar100:"):]
        self.cfg, self.rank, self.world, self.device = cfg, rank, world, device
        self.images, self.labels = read_cifar(os.path.join(self.dir, "train.bin"), cfg["data"])
        self.test_path = os.path.join(self.dir, "test.bin")
        self.size = len(self.labels)
        self.steps_per_epoch = self.size // (cfg["batchSize"] * world)
        if self.steps_per_epoch == 0:
            raise ConfigError(f"--data {cfg['data']}: {self.size} training images is less than one global batch "
                             f"({cfg['batchSize']} x {world} ranks); lower --batch-size")
        from torch.utils.data.distributed import DistributedSampler
        self.sampler = DistributedSampler(range(self.size), num_replicas=world, rank=rank, shuffle=True,
                                          seed=cfg["seed"], drop_last=True)
        self.pin = device.type == "cuda" and EXTRAS
        self.mean = torch.tensor(CIFAR_MEAN, device=device).view(1, 3, 1, 1) * 255
        self.std = torch.tensor(CIFAR_STD, device=device).view(1, 3, 1, 1) * 255
        self.gen = torch.Generator()

    def to_device(self, idx, augment):
        x, y = self.images[idx], self.labels[idx]
        if self.pin:
            x, y = x.pin_memory(), y.pin_memory()
        x, y = x.to(self.device, non_blocking=self.pin).float(), y.to(self.device, non_blocking=self.pin)
        if augment:
            b = x.shape[0]
            off = torch.randint(0, 9, (2, b), generator=self.gen).to(self.device)
            rows = (off[0, :, None] + torch.arange(32, device=self.device))[:, None, :, None]
            cols = (off[1, :, None] + torch.arange(32, device=self.device))[:, None, None, :]
            padded = F.pad(x, (4, 4, 4, 4))
            x = padded[torch.arange(b, device=self.device)[:, None, None, None], torch.arange(3, device=self.device)[None, :, None, None], rows, cols]
            flip = (torch.rand(b, generator=self.gen) < 0.5).to(self.device)
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
        x = (x - self.mean) / self.std
        if self.cfg["imageSize"] != 32:
            x = F.interpolate(x, size=self.cfg["imageSize"], mode="nearest")  # as the tfjs loader
        return x, y

    def epoch(self, epoch, start=0):
        self.sampler.set_epoch(epoch)
        self.gen.manual_seed(self.cfg["seed"] * 1000003 + epoch * 1009 + self.rank)
        order = torch.tensor(list(iter(self.sampler)))
        b = self.cfg["batchSize"]
        for i in range(start, self.steps_per_epoch):
            yield self.to_device(order[i * b:(i + 1) * b], augment=True)

    def validation(self):
        """This rank's shard of test.bin (every world-th image), in batches."""
        images, labels = read_cifar(self.test_path, self.cfg["data"])
        idx = torch.arange(self.rank, len(labels), self.world)
        saved = self.images, self.labels
        self.images, self.labels = images, labels
        try:
            for i in range(0, len(idx), self.cfg["batchSize"]):
                yield self.to_device(idx[i:i + self.cfg["batchSize"]], augment=False)
        finally:
            self.images, self.labels = saved

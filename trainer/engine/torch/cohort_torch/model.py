"""ResNet-50: torchvision's, or the same network defined here when torchvision is absent (same
module names, shapes and init, so parameter counts and checkpoints match). At --width W != 1 the
network is always the one defined here, every layer's channels scaled by the rule of
trainer/protocol/resnet50-shape.ts (round half up, at least 1): torchvision has no such multiplier.
--depth picks the blocks per stage (RESNET_STAGE_BLOCKS there): 50, 101 and 152 are torchvision's
resnet50/101/152 at width 1; 14 and 26 (1 and 2 blocks a stage) are always the one defined here."""
import math
import os

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


def scaled_channels(c, width):
    """trainer/protocol/resnet50-shape.ts scaledChannels: round(c x width) half up, at least 1."""
    return max(1, math.floor(c * width + 0.5))


# trainer/protocol/resnet50-shape.ts RESNET_STAGE_BLOCKS (test/torch checks the parameter counts agree).
STAGE_BLOCKS = {"14": (1, 1, 1, 1), "26": (2, 2, 2, 2), "50": (3, 4, 6, 3), "101": (3, 4, 23, 3), "152": (3, 8, 36, 3)}


class ResNet50(nn.Module):
    def __init__(self, num_classes, width=1.0, depth="50"):
        super().__init__()
        stem_c = scaled_channels(64, width)
        self.conv1 = nn.Conv2d(3, stem_c, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(stem_c)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inplanes, layers = stem_c, []
        for base, blocks, stride in zip((64, 128, 256, 512), STAGE_BLOCKS[depth], (1, 2, 2, 2)):
            planes = scaled_channels(base, width)
            down = None
            if stride != 1 or inplanes != planes * 4:
                down = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4))
            blks = [Bottleneck(inplanes, planes, stride, down)]
            inplanes = planes * 4
            blks += [Bottleneck(inplanes, planes) for _ in range(blocks - 1)]
            layers.append(nn.Sequential(*blks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model(cfg):
    """Returns (model, description). The cifar stem is SC20's: 3x3 stride-1 conv1, no maxpool."""
    width = float(cfg.get("width", 1))
    depth = str(cfg.get("depth", "50"))
    if depth not in STAGE_BLOCKS:
        raise ValueError(f"--depth must be one of {', '.join(STAGE_BLOCKS)}, got {depth}")
    source = f"built-in ResNet-{depth}" + ("" if width == 1 else f" at width {width:g}")
    try:
        if width != 1:
            raise ImportError(f"--width {width:g}: torchvision has no channel multiplier")
        if depth not in ("50", "101", "152"):
            raise ImportError(f"--depth {depth}: torchvision has no resnet{depth}")
        if os.environ.get("COHORT_TORCH_BUILTIN_RESNET") == "1":
            raise ImportError("COHORT_TORCH_BUILTIN_RESNET=1")
        import torchvision
        model = getattr(torchvision.models, f"resnet{depth}")(num_classes=cfg["classes"])
        source = f"torchvision.models.resnet{depth}"
    except ImportError as err:
        model = ResNet50(cfg["classes"], width, depth)
        source += f" (torchvision not used: {err})"
    if cfg["stem"] == "cifar":
        model.conv1 = nn.Conv2d(3, scaled_channels(64, width), 3, stride=1, padding=1, bias=False)
        nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
        model.maxpool = nn.Identity()
    return model, f"{source}, {cfg['stem']} stem, {cfg['classes']} classes"

"""The run configuration's fields and defaults: the TrainConfig of trainer/protocol/train-config.ts
(same names and defaults). Kept alone in this module so it can be generated from that table."""

DEFAULTS = dict(
    engine="torch", backend="auto",
    batchSize=16,          # samples per rank per step
    imageSize=32,          # square input side, pixels
    stem="imagenet",       # imagenet (7x7/2 conv + maxpool) | cifar (3x3/1 conv, no maxpool: SC20)
    classes=100,
    steps=30, epochs=0,    # exactly one is > 0
    logSteps=10,           # a `step` event every this many steps
    warmupSteps=2,         # first steps (compile, autotune) excluded from throughput
    lr=1e-3, optimizer="adamw", momentum=0.9, weightDecay=0.01,
    lrWarmupSteps=0, schedule="constant",  # linear LR warm-up (steps), then constant|cosine|step
    data="synthetic",      # synthetic | cifar100:DIR (binary version: train.bin, test.bin)
    compile=False, compileMode="default", fp16=False, bf16=False, seed=42,
    checkpointDir="", checkpointEvery=0, resume=False, freezeBn=False, syncBn=False,
)

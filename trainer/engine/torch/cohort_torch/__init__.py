"""Cohort's PyTorch engine, one module per job (torch_engine.py beside this package is the entry):

    events       the JSON-lines event stream on stdout, logs, fail()       (imported first: it owns fd 1)
    defaults     DEFAULTS: the run configuration's fields and defaults
    config       COHORT_TRAIN_CONFIG + flags → a checked config; environment switches; LR schedule
    distributed  device choice, rendezvous (own store or torchrun's), process groups, heartbeat watchdog
    hang         which rank hung when a heartbeat round times out (beats in the store), its stack on SIGUSR1
    capabilities what this host can do and what is on (hello's capabilities and versions)
    model        ResNet-50 (torchvision's, or the same network built in)
    data         synthetic and CIFAR-100 sources
    gpu          this rank's GPU as it really is (UUID, nvidia-smi index) and its own memory
    metrics      throughput windows' gathered rows, memory per rank
    phases       each rank's step split (data, compute, exchange, optimizer; DDP comm hook) per window
    checkpoint   save / find / resume, the weights checksum
    loop         the training loop (steps, throughput windows, epochs, validation)
"""

// A CPU-only torch told from its files, for the Python that `cohort probe` (electron/core/cluster/probe.ts)
// and the engine choice (trainer/agent/engine-choice.ts) run: a torch built without CUDA or ROCm has no GPU
// to find, and its version.py says what `torch.__version__` would, so neither needs `import torch` (1.3–2.3
// CPU-s) for it. One definition for both: the probe embeds it in a shell script's single quotes, so it has
// no single quote, dollar sign, backquote or backslash.

/** Python source defining cpu_torch_version(): the version of a torch built without CUDA or ROCm, read from its version.py; None for any other build or an unreadable file; ModuleNotFoundError when there is no torch. */
export const CPU_TORCH_VERSION_PY = `def cpu_torch_version():
    import importlib.util, os
    spec = importlib.util.find_spec("torch")
    if spec is None:
        raise ModuleNotFoundError("No module named torch")
    meta = {}
    try:
        with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py")) as f:
            exec(f.read(), meta)
    except Exception:
        return None
    if isinstance(meta.get("__version__"), str) and meta.get("cuda") is None and meta.get("hip") is None:
        return meta["__version__"]
    return None`;

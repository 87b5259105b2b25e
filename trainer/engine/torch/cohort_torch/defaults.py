"""The run configuration's fields and defaults: the TrainConfig of trainer/protocol/train-config.ts.
Names, defaults and kinds come from its one table: the build writes them to train-config.json
beside torch_engine.py (the folder above this package)."""
import json
import os

from .events import fail


def _table_defaults():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train-config.json")
    try:
        with open(path) as f:
            fields = json.load(f)["fields"]
    except (OSError, ValueError, KeyError) as err:
        fail(f"cannot read the run configuration's defaults from {path} ({err}). `npm run build` writes it beside "
             "the bundled engine: run resources/trainer/engines/torch_engine.py, not the source copy", "config")
    return {k: float(f["default"]) if f["kind"] == "float" else f["default"] for k, f in fields.items()}


DEFAULTS = _table_defaults()

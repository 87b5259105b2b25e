"""The run configuration's fields and defaults: the TrainConfig of trainer/protocol/train-config.ts.
Names, defaults, kinds, each row's bounds or values and the stems' smallest image sizes come from
its one table: the build writes them to train-config.json beside torch_engine.py (the folder above
this package)."""
import json
import os

from .events import fail


def _table():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train-config.json")
    try:
        with open(path) as f:
            table = json.load(f)
        return table["fields"], table["minImageSize"]
    except (OSError, ValueError, KeyError) as err:
        fail(f"cannot read the run configuration's defaults from {path} ({err}). `npm run build` writes it beside "
             "the bundled engine: run resources/trainer/engines/torch_engine.py, not the source copy", "config")


# FIELDS: each row's kind, default, flag and checks (min, max, values, nonEmpty); MIN_IMAGE_SIZE per stem.
FIELDS, MIN_IMAGE_SIZE = _table()
DEFAULTS = {k: float(f["default"]) if f["kind"] == "float" else f["default"] for k, f in FIELDS.items()}

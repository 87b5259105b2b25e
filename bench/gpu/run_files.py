"""Reading the GPU acceptance run's files (the OUT folder scripts/gpu-acceptance.sh fills): one
place for checks.py and report.py. Event files are JSON lines; a line that is not JSON (a partial
last line, a stray print) is skipped, as Cohort's own decoder counts and skips it."""
import json
import os


def events(out, name):
    """The events of OUT/name, or None when the file is missing."""
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    evs = []
    with open(path) as f:
        for line in f:
            try:
                evs.append(json.loads(line))
            except ValueError:
                pass
    return evs


def first(evs, t):
    """The first event of type t in evs (None, or a list), or None."""
    return next((e for e in evs or [] if e.get("type") == t), None)


def last(evs, t):
    """The last event of type t in evs (None, or a list), or None."""
    return next((e for e in reversed(evs or []) if e.get("type") == t), None)


def text(out, name, default=""):
    """OUT/name's text, stripped, or default when it cannot be read."""
    try:
        with open(os.path.join(out, name)) as f:
            return f.read().strip()
    except OSError:
        return default


def load_json(out, name, default=None):
    """OUT/name as JSON, or default when it is missing or not JSON."""
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default

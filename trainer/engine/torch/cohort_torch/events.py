"""Events and logs. Events get a private copy of stdout; fd 1 is then pointed at stderr so that
nothing else (a library's print, a C extension's printf) can corrupt the JSON-lines stream.
Import this module before torch: torch may print on import."""
import collections
import json
import os
import socket
import sys
import threading
import time

_event_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
_tail = collections.deque(maxlen=40)  # this rank's last log lines, for the error event
_error_lock = threading.Lock()
_emit_lock = threading.Lock()  # the watchdog thread may emit an error while the main thread emits
_error_sent = False
RANK = int(os.environ.get("RANK", "0"))
HOST = os.environ.get("COHORT_HOST") or socket.gethostname()
# What fail() needs to close the run with `done` on rank 0: set by the loop as it goes.
STATE = {"t0": time.time(), "step": 0, "started": False, "phase": "setup"}


def _line(type_, **fields):
    """One protocol event's line (v, type, time first, as makeEvent stamps them)."""
    return json.dumps({"v": 1, "type": type_, "time": int(time.time() * 1000), **fields}) + "\n"


def emit(type_, **fields):
    """Prints one protocol event."""
    line = _line(type_, **fields)
    with _emit_lock:
        _event_out.write(line)
        _event_out.flush()


def emit0(type_, **fields):
    """emit() on rank 0 only: the one rank whose events the agent relays."""
    if RANK == 0:
        emit(type_, **fields)


def log(msg):
    line = f"[rank {RANK}] {msg}"
    _tail.append(line)
    print(line, file=sys.stderr, flush=True)


def remember(lines):
    """Adds lines (a traceback) to the tail the error event carries."""
    _tail.extend(lines)


def write_last_words(line):
    """The report also goes to this rank's last-words file (COHORT_LAST_WORDS, set by the agent:
    trainer/agent/last-words.ts), written aside and renamed over: a stopped agent does not read
    stdout, and a rank that logs fills it, so stdout alone cannot carry it (issue 24)."""
    path = os.environ.get("COHORT_LAST_WORDS")
    if not path:
        return
    try:
        with open(path + ".tmp", "w") as f:
            f.write(line)
        os.replace(path + ".tmp", path)
    except OSError as err:
        _tail.append(f"[rank {RANK}] could not write its last words to {path}: {err}")


def fail(message, code=None, exit_code=1, about=None, last_words=False, hint=None):
    """Reports this rank's failure once (main thread and watchdog may race) and exits at once:
    a clean interpreter shutdown could block in a process group whose peer is gone. `about`: the
    error is another rank's (a hung peer: its rank and host, reportedBy, collective, seq, lastPhases).
    `hint`: what to do next, when this side knows.
    `last_words`: the agent may not be reading stdout and stderr (agent-silent): the report goes to
    the last-words file first, before anything that could block on a full one."""
    global _error_sent
    with _error_lock:
        if not _error_sent:
            _error_sent = True
            tail = (list(_tail) + [f"[rank {RANK}] {message}"])[-20:]
            event = {"rank": RANK, "host": HOST, "message": message, "logTail": tail, **(about or {}), **({"code": code} if code else {}), **({"hint": hint} if hint else {})}
            if last_words:
                write_last_words(_line("error", **event))
            log(message)
            emit("error", **event)
            if RANK == 0 and STATE.get("started"):
                emit("done", status="cancelled" if code == "cancelled" else "failed", steps=STATE.get("step", 0), medianGlobalSamplesPerSec=None,
                     paramChecksum="", durationMs=(time.time() - STATE["t0"]) * 1000)
    exit_now(exit_code)


def exit_now(code):
    """Flushes and leaves without interpreter teardown (process-group destructors can stall after peers exit)."""
    _event_out.flush()
    sys.stderr.flush()
    os._exit(code)

"""Hang location (issue 21 item 4). The watchdog's heartbeat all-reduce says *that* a peer stopped
answering, not *which*: gloo's timeout names no rank. So every rank also writes a beat (time, its
main thread's phase and step, pid) into the run's TCP store every HEARTBEAT_S from a thread of its
own; when a heartbeat round times out, the rank whose beat is stale is the one that hung (a peer
that is merely blocked in the same round keeps beating). If the store itself does not answer, the
rank serving it (rank 0, unless torchrun serves it) is the one. A hung rank on this rank's host is
sent SIGUSR1: faulthandler (registered at start) writes its Python stack into its own log, which
its log tail then shows (a stopped process only writes it if it is continued). A hung rank on
another host: the agents send it (agent-leader.ts locateHang: the leader's agent signals its own
rank, or tells the hung rank's agent with a `stack` control message, before the halt)."""
import datetime
import faulthandler
import json
import os
import signal
import threading
import time

import torch.distributed as dist

from .config import HEARTBEAT_S, PEER_TIMEOUT_S
from .events import HOST, RANK, STATE, log

STORE_TIMEOUT_S = 5.0
PREFIX = "cohort/beat/"


def dump_stack_on_sigusr1():
    """Any rank: SIGUSR1 writes every thread's Python stack to stderr (this rank's log)."""
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


class Beats:
    def __init__(self, master, world, stop):
        self.world, self.stop, self.peers = world, stop, None
        self.store_ok = True
        self.torchrun = bool(os.environ.get("TORCHELASTIC_RUN_ID"))
        try:  # a client of its own, with a short timeout: a stopped store server must not block the beat for minutes
            self.store = dist.TCPStore(master[0], master[1], None, False, datetime.timedelta(seconds=STORE_TIMEOUT_S))
        except Exception as err:  # noqa: BLE001
            log(f"hang location off: cannot reach the rendezvous store for heartbeats ({err})")
            self.store = None
        threading.Thread(target=self._beat, daemon=True, name="cohort-beat").start()

    def _beat(self):
        while self.store is not None and not self.stop.is_set():
            try:
                self.store.set(PREFIX + str(RANK), json.dumps({"t": time.time(), "phase": STATE.get("phase", "?"), "step": STATE.get("step", 0), "pid": os.getpid()}))
                self.store_ok = True
            except Exception:  # noqa: BLE001
                self.store_ok = False
            time.sleep(HEARTBEAT_S)

    def _read(self):
        out = {}
        for r in range(self.world):
            try:
                out[r] = json.loads(self.store.get(PREFIX + str(r)).decode())
            except Exception:  # noqa: BLE001
                return None
        return out

    def hung_report(self, rounds, why):
        """(message, error fields naming the hung rank) or None when no rank is clearly stale."""
        if self.store is None or self.peers is None:
            return None
        now = time.time()
        beats = self._read()
        host = lambda r: self.peers[r]["host"]  # noqa: E731
        if beats is None:
            if self.torchrun or RANK == 0:
                return None
            hung, last = 0, {}
            detail = f"its process serves the run's rendezvous store, which has not answered for {STORE_TIMEOUT_S:g} s"
        else:
            ages = {r: now - b["t"] for r, b in beats.items() if r != RANK}
            hung = max(ages, key=ages.get)
            others = max([a for r, a in ages.items() if r != hung], default=0.0)
            if ages[hung] < 3 * HEARTBEAT_S or ages[hung] < others + HEARTBEAT_S:
                return None  # every peer beats: not a hang this can locate
            last = beats[hung]
            detail = f"its last beat is {ages[hung]:.1f} s old (the other peers' at most {others:.1f} s)"
            if host(hung) == HOST and last.get("pid"):
                try:
                    os.kill(int(last["pid"]), signal.SIGUSR1)  # its Python stack into its log (faulthandler)
                except OSError:
                    pass
        phases = [{"rank": r, "host": host(r), "phase": str(b.get("phase", "?")), "step": int(b.get("step", 0)), "ageMs": max(0.0, (now - b["t"]) * 1000)} for r, b in sorted((beats or {}).items())]
        mine = f"{STATE.get('phase', '?')} of step {STATE.get('step', 0)}"
        message = (f"rank {hung} on {host(hung)} hung: {detail}; the heartbeat all_reduce #{rounds} timed out after {PEER_TIMEOUT_S:g} s "
                   f"({why}) while rank {RANK} was in {mine}; its last phase: {last.get('phase', 'unknown')} of step {last.get('step', '?')}")
        about = {"rank": hung, "host": host(hung), "reportedBy": [RANK], "collective": "heartbeat all_reduce (gloo)", "seq": rounds,
                 "lastPhases": phases,
                 "hint": f"rank {hung}'s process on {host(hung)} is there but makes no progress: check it (ps -o stat,pid,cmd: T = stopped, "
                         f"D = stuck in I/O; py-spy dump --pid PID), its host's load and its log (a Python stack is written there on SIGUSR1)"}
        return message, about

// The kernel's boot id (Linux): one per booted kernel, the same in every container and network namespace
// on the machine, so hosts that report the same one are one machine (they can share Unix sockets, a lease
// held under another boot is stale, and they share the cores). The torch engine reads it in Python
// (cohort_torch/distributed.py, machine_id).
import { readFileSync } from 'node:fs';

/** This machine's boot id, or undefined where it cannot be read (not Linux); each caller says what stands in for it. */
export function readBootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return undefined;
  }
}

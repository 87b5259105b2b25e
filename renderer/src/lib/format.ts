// Number formatting shared by the views.
export function fmtRate(v: number | null | undefined, digits = 1): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (v >= 10_000) return v.toLocaleString('en-US', { maximumFractionDigits: 0 });
  return v.toFixed(digits);
}

export function fmtBytes(b: number | null | undefined): string {
  if (b === null || b === undefined || !Number.isFinite(b)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = b;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v >= 100 || i === 0 ? 0 : 1)} ${units[i]}`;
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

export function fmtTime(iso: string | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });
}

export function fmtPct(p: number | null): string {
  if (p === null || !Number.isFinite(p)) return '—';
  return `${p >= 0 ? '+' : ''}${p.toFixed(1)}%`;
}

/**
 * A bytes axis's tick labels in one unit (issue 22 item 5: "0 MiB" next to "1.0 GiB" misread the
 * scale): GiB when the largest tick reaches 1 GiB, else MiB, with as many decimals as the ticks'
 * spacing needs to tell them apart.
 */
export function bytesTicks(vals: number[]): string[] {
  const top = Math.max(0, ...vals.map(Math.abs).filter(Number.isFinite));
  const [div, unit] = top >= 2 ** 30 ? [2 ** 30, 'GiB'] : [2 ** 20, 'MiB'];
  const steps = vals.slice(1).map((v, i) => Math.abs(v - vals[i]!) / div).filter((d) => d > 0);
  const step = steps.length ? Math.min(...steps) : 1;
  // The fewest decimals that write the spacing exactly (0.5 → 1, 0.25 → 2), at most 3.
  let dec = 0;
  while (dec < 3 && Math.abs(step * 10 ** dec - Math.round(step * 10 ** dec)) > 1e-6 * 10 ** dec) dec++;
  return vals.map((v) => `${(v / div).toFixed(dec)} ${unit}`);
}

// Data-plane framing. The payload is raw little-endian f32 or f16 with no per-chunk framing: both
// ends derive every byte's destination from one 16-byte header per operation, which also catches
// ranks that called different collectives (or sizes) in the same slot of their sequence.
//
//   [0] u32 magic  [4] u8 kind  [5] u8 dtype  [6] u16 aux (broadcast root; bye: lost rank + 1)
//   [8] u32 op sequence number  [12] u32 element count
export const DATA_MAGIC = 0xc0a7da7a;
export const HEADER_BYTES = 16;

export const enum Kind {
  Allreduce = 1,
  Broadcast = 2,
  /** The sender is leaving; aux = lost rank + 1 when it leaves because of that rank, else 0. */
  Bye = 3,
  /** First frame on a new data connection: aux = sender rank, seq = protocol version, count = world size. */
  Hello = 4,
  /** Reduce-scatter of gradients, then all-gather of the owners' updated parameters (RingEngine.shardedUpdate). */
  ShardedUpdate = 5,
}

export const enum Dtype {
  F32 = 0,
  F16 = 1,
}

export interface DataHeader {
  kind: number;
  dtype: number;
  aux: number;
  seq: number;
  count: number;
}

export function writeHeader(out: Uint8Array, h: DataHeader): void {
  const v = new DataView(out.buffer, out.byteOffset, HEADER_BYTES);
  v.setUint32(0, DATA_MAGIC, true);
  v.setUint8(4, h.kind);
  v.setUint8(5, h.dtype);
  v.setUint16(6, h.aux, true);
  v.setUint32(8, h.seq >>> 0, true);
  v.setUint32(12, h.count >>> 0, true);
}

export function encodeHeader(h: DataHeader): Buffer {
  const b = Buffer.allocUnsafe(HEADER_BYTES);
  writeHeader(b, h);
  return b;
}

/** undefined when the magic is wrong (not a Cohort peer, or the stream lost its place). */
export function readHeader(bytes: Uint8Array): DataHeader | undefined {
  const v = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  if (v.getUint32(0, true) !== DATA_MAGIC) return undefined;
  return { kind: v.getUint8(4), dtype: v.getUint8(5), aux: v.getUint16(6, true), seq: v.getUint32(8, true), count: v.getUint32(12, true) };
}

export function describeHeader(h: DataHeader): string {
  const kind = h.kind === Kind.Allreduce ? 'allreduce' : h.kind === Kind.ShardedUpdate ? 'sharded update' : h.kind === Kind.Broadcast ? `broadcast(root ${h.aux})` : `frame kind ${h.kind}`;
  return `${kind} #${h.seq} of ${h.count} ${h.dtype === Dtype.F16 ? 'f16' : 'f32'} elements`;
}

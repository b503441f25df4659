// TFRecord framing: uint64 LE length, uint32 LE masked CRC32C of those 8 bytes, the
// payload, uint32 LE masked CRC32C of the payload.
// https://www.tensorflow.org/tutorials/load_data/tfrecord#tfrecords_format_details

import { crc32c, maskCrc32c } from "./crc32c.ts";

/** Bytes of framing around each payload: 8 length + 4 length CRC + 4 payload CRC. */
export const RECORD_OVERHEAD = 16;
const HEADER_BYTES = 12;
// Protobuf caps a serialized message at 2 GiB, so a larger length (even one whose CRC
// matches) cannot be an Event; it also keeps offsets and sizes in safe integers.
const MAX_PAYLOAD_BYTES = 0x7fffffff;

/** What `readRecords` found in one buffer. */
export interface RecordBatch {
  /** Payloads whose CRC matched, in file order; views into the input buffer, not copies. */
  records: Uint8Array[];
  /** First byte not consumed: the start of a partial record, of lost framing, or the end. */
  nextOffset: number;
  /** Complete records skipped because their payload CRC did not match. */
  badCrc: number;
  /** True when a length CRC did not match at `nextOffset`: nothing after it can be trusted. */
  framingLost: boolean;
  /** Bytes needed from `nextOffset` to complete the next record (0 when none is pending). */
  needed: number;
}

/**
 * Reads every complete record of `bytes` from `offset` on.
 *
 * A record whose payload CRC is wrong is skipped and counted: its length was verified, so
 * the next record still starts at a known place. A wrong length CRC is different: the
 * format has no sync markers, so no later byte can be located with confidence, and
 * guessing would turn garbage into metrics. Reading stops there with `framingLost`, and
 * `nextOffset` points at the bad header. A record cut off by the end of `bytes` (a file
 * still being written) is not consumed: `nextOffset` stays at its start and `needed` says
 * how many bytes it takes, so the caller can retry once the file has grown.
 */
export function readRecords(bytes: Uint8Array, offset = 0): RecordBatch {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: Uint8Array[] = [];
  let badCrc = 0;
  let pos = offset;
  while (pos < bytes.length) {
    if (bytes.length - pos < HEADER_BYTES) {
      return { records, nextOffset: pos, badCrc, framingLost: false, needed: HEADER_BYTES };
    }
    const lengthCrc = view.getUint32(pos + 8, true);
    const lengthLow = view.getUint32(pos, true);
    const lengthHigh = view.getUint32(pos + 4, true);
    if (
      maskCrc32c(crc32c(bytes, pos, pos + 8)) !== lengthCrc || lengthHigh !== 0 ||
      lengthLow > MAX_PAYLOAD_BYTES
    ) {
      return { records, nextOffset: pos, badCrc, framingLost: true, needed: 0 };
    }
    const total = lengthLow + RECORD_OVERHEAD;
    if (bytes.length - pos < total) {
      return { records, nextOffset: pos, badCrc, framingLost: false, needed: total };
    }
    const start = pos + HEADER_BYTES;
    const end = start + lengthLow;
    if (maskCrc32c(crc32c(bytes, start, end)) === view.getUint32(end, true)) {
      records.push(bytes.subarray(start, end));
    } else {
      badCrc++;
    }
    pos += total;
  }
  return { records, nextOffset: pos, badCrc, framingLost: false, needed: 0 };
}

/** Frames `payload` as one TFRecord; used by tests and tools that write event files. */
export function encodeRecord(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + RECORD_OVERHEAD);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, true);
  view.setUint32(8, maskCrc32c(crc32c(out, 0, 8)), true);
  out.set(payload, HEADER_BYTES);
  view.setUint32(HEADER_BYTES + payload.length, maskCrc32c(crc32c(payload)), true);
  return out;
}

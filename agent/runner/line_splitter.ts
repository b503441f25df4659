// Cuts a growing byte stream (one of a job's raw output files) into text lines.

/** Longest line kept, in bytes; the rest is dropped and counted. */
export const MAX_LINE_BYTES = 16 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits bytes into lines: `\n`, `\r\n` and a lone `\r` (a progress bar's redraw) each end a
 * line; an empty `\r`-ended piece is dropped so redraws do not flood. Lines longer than
 * `MAX_LINE_BYTES` keep their head and end with `… [cut N bytes]`; invalid UTF-8 decodes to
 * U+FFFD. `offset` is where the unfinished line starts in the file: feeding a new splitter
 * from there yields exactly the lines this one has not returned yet.
 */
export class LineSplitter {
  #offset: number;
  #position: number;
  readonly #head = new Uint8Array(MAX_LINE_BYTES);
  #headLength = 0;
  #dropped = 0;
  /** The last byte fed was a `\r`: whether a `\n` follows decides where the line ends. */
  #heldCR = false;
  readonly #decoder = new TextDecoder("utf-8", { fatal: false });

  /** `offset`: the file offset the first byte fed will come from. */
  constructor(offset = 0) {
    this.#offset = offset;
    this.#position = offset;
  }

  /** Start of the first line not yet returned (persist this to resume). */
  get offset(): number {
    return this.#offset;
  }

  /** File offset of the next byte to feed. */
  get position(): number {
    return this.#position;
  }

  /** Feeds the next bytes of the stream; returns the lines they completed. */
  push(chunk: Uint8Array): string[] {
    const lines: string[] = [];
    const base = this.#position;
    let start = 0;
    if (this.#heldCR) {
      this.#heldCR = false;
      if (chunk.length === 0) {
        this.#heldCR = true;
        return lines;
      }
      if (chunk[0] === LF) {
        this.#emit(lines, base + 1, false);
        start = 1;
      } else {
        this.#emit(lines, base, true);
      }
    }
    for (let i = start; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte !== LF && byte !== CR) continue;
      this.#append(chunk.subarray(start, i));
      if (byte === LF) {
        this.#emit(lines, base + i + 1, false);
      } else if (i + 1 === chunk.length) {
        this.#heldCR = true;
      } else if (chunk[i + 1] === LF) {
        i++;
        this.#emit(lines, base + i + 1, false);
      } else {
        this.#emit(lines, base + i + 1, true);
      }
      start = i + 1;
    }
    this.#append(chunk.subarray(start));
    this.#position = base + chunk.length;
    return lines;
  }

  /** The stream has ended: returns the unfinished last line, if any. */
  flush(): string[] {
    const lines: string[] = [];
    if (this.#heldCR) {
      this.#heldCR = false;
      this.#emit(lines, this.#position, true);
    } else if (this.#headLength > 0 || this.#dropped > 0) {
      this.#emit(lines, this.#position, false);
    }
    return lines;
  }

  #append(bytes: Uint8Array): void {
    const room = MAX_LINE_BYTES - this.#headLength;
    if (bytes.length <= room) {
      this.#head.set(bytes, this.#headLength);
      this.#headLength += bytes.length;
      return;
    }
    this.#head.set(bytes.subarray(0, room), this.#headLength);
    this.#headLength = MAX_LINE_BYTES;
    this.#dropped += bytes.length - room;
  }

  #emit(lines: string[], end: number, endedByCR: boolean): void {
    let length = this.#headLength;
    let dropped = this.#dropped;
    if (dropped > 0) {
      // Do not split a UTF-8 sequence at the cut: back up to the start of the last one
      // unless it is complete.
      const lead = lastLeadByte(this.#head, length);
      if (lead >= 0 && lead + sequenceLength(this.#head[lead]) > length) {
        dropped += length - lead;
        length = lead;
      }
    }
    this.#offset = end;
    this.#headLength = 0;
    this.#dropped = 0;
    if (endedByCR && length === 0 && dropped === 0) return;
    const text = this.#decoder.decode(this.#head.subarray(0, length));
    lines.push(dropped > 0 ? `${text}… [cut ${dropped} bytes]` : text);
  }
}

/** Index of the last byte within `length` that is not a UTF-8 continuation byte (-1: none). */
function lastLeadByte(bytes: Uint8Array, length: number): number {
  for (let i = length - 1; i >= 0 && i >= length - 4; i--) {
    if ((bytes[i] & 0xc0) !== 0x80) return i;
  }
  return -1;
}

/** Bytes in the UTF-8 sequence that `lead` starts (1 for ASCII or an invalid lead). */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  return 1;
}

// A minimal protobuf wire-format reader: just enough to walk Event messages and skip
// everything a scalar reader does not need without decoding it.
// https://protobuf.dev/programming-guides/encoding/

/** Wire type of a field: how its bytes are laid out, independent of its declared type. */
export const WireType = {
  VARINT: 0,
  I64: 1,
  LEN: 2,
  I32: 5,
} as const;

const TWO_32 = 0x1_0000_0000;
const utf8 = new TextDecoder();

/** Thrown when a message ends mid-field or uses a wire type this reader does not know. */
export class ProtobufError extends RangeError {
  override name = "ProtobufError";
}

/** Walks the fields of one serialized message; sub-messages are read with a new reader. */
export class ProtoReader {
  readonly bytes: Uint8Array;
  #view: DataView;
  #pos = 0;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** True once every field has been read. */
  get done(): boolean {
    return this.#pos >= this.bytes.length;
  }

  /** The next field's key: `key >>> 3` is the field number, `key & 7` the wire type. */
  key(): number {
    return this.#uint32();
  }

  /** An unsigned varint (uint32/uint64/bool/enum); exact below 2^53. */
  uint64(): number {
    const [low, high] = this.#varint();
    return high * TWO_32 + low;
  }

  /** A two's-complement int64 varint (negative values take ten bytes); exact below 2^53. */
  int64(): number {
    const [low, high] = this.#varint();
    if (high < 0x8000_0000) return high * TWO_32 + low;
    return -((0xffff_ffff - high) * TWO_32 + (TWO_32 - low));
  }

  /** An int32 varint; like protobuf, keeps the low 32 bits of a sign-extended value. */
  int32(): number {
    return this.#varint()[0] | 0;
  }

  /** A little-endian float64 (wire type I64). */
  double(): number {
    const at = this.#advance(8);
    return this.#view.getFloat64(at, true);
  }

  /** A little-endian float32 (wire type I32). */
  float(): number {
    const at = this.#advance(4);
    return this.#view.getFloat32(at, true);
  }

  /** A length-delimited field's bytes, as a view into the message (no copy). */
  bytesField(): Uint8Array {
    const length = this.#uint32();
    const at = this.#advance(length);
    return this.bytes.subarray(at, at + length);
  }

  /** A length-delimited field decoded as UTF-8. */
  string(): string {
    return utf8.decode(this.bytesField());
  }

  /** Skips a field's value by its wire type, without looking inside it. */
  skip(wireType: number): void {
    switch (wireType) {
      case WireType.VARINT:
        this.#varint();
        return;
      case WireType.I64:
        this.#advance(8);
        return;
      case WireType.LEN:
        this.#advance(this.#uint32());
        return;
      case WireType.I32:
        this.#advance(4);
        return;
      default:
        // Groups (3, 4) are deprecated proto2 and absent from TensorBoard's messages.
        throw new ProtobufError(`Cannot skip field: unsupported wire type ${wireType}`);
    }
  }

  #advance(length: number): number {
    const at = this.#pos;
    if (length > this.bytes.length - at) {
      throw new ProtobufError(
        `Cannot read ${length} bytes at offset ${at}: message is ${this.bytes.length} bytes`,
      );
    }
    this.#pos = at + length;
    return at;
  }

  #uint32(): number {
    const [low, high] = this.#varint();
    if (high !== 0) throw new ProtobufError(`Varint at offset ${this.#pos} exceeds 32 bits`);
    return low;
  }

  // Splits a varint into 32-bit halves so int64 sign handling stays exact without BigInt.
  #varint(): [number, number] {
    const bytes = this.bytes;
    let low = 0;
    let high = 0;
    for (let i = 0; i < 10; i++) {
      if (this.#pos >= bytes.length) {
        throw new ProtobufError(`Varint runs past the end of a ${bytes.length}-byte message`);
      }
      const b = bytes[this.#pos++];
      const bits = b & 0x7f;
      if (i < 4) {
        low |= bits << (7 * i);
      } else if (i === 4) {
        low |= bits << 28;
        high |= bits >>> 4;
      } else {
        high |= bits << (7 * i - 32);
      }
      if (b < 0x80) return [low >>> 0, high >>> 0];
    }
    throw new ProtobufError(`Varint at offset ${this.#pos} is longer than 10 bytes`);
  }
}

/** Reading request bodies with a size cap, for every face that takes one (REST, console forms). */

/**
 * A request's body, read no further than `maxBytes`: the bytes, or the count read when it
 * was larger (the rest is not read). Shared by JSON bodies and the console's forms.
 */
export async function readCappedBytes(
  req: Request,
  maxBytes: number,
): Promise<Uint8Array | number> {
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      return total;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return all;
}

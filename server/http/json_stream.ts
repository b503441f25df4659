/**
 * A JSON object answer whose one long array is written item by item as the items are made,
 * so a large answer is never held (or stringified) whole, and a client that goes away stops
 * the work that would have produced the rest.
 */

const encoder = new TextEncoder();

/**
 * `{...head, [field]: [items...]}` as a streamed response. The items are produced only as
 * fast as the client reads; an error while producing them cuts the response short (the
 * status is already sent), which the client sees as a truncated body.
 */
export function jsonStream(
  head: Record<string, unknown>,
  field: string,
  items: AsyncGenerator<unknown>,
  onError: (err: unknown) => void = () => {},
): Response {
  const start = JSON.stringify(head);
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const open = start === "{}" ? "{" : `${start.slice(0, -1)},`;
      controller.enqueue(encoder.encode(`${open}${JSON.stringify(field)}:[`));
    },
    async pull(controller) {
      let next: IteratorResult<unknown>;
      try {
        next = await items.next();
      } catch (err) {
        onError(err);
        controller.error(err);
        return;
      }
      if (next.done) {
        controller.enqueue(encoder.encode("]}"));
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode((first ? "" : ",") + JSON.stringify(next.value)));
      first = false;
    },
    async cancel() {
      await items.return(undefined);
    },
  }, { highWaterMark: 0 });
  return new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } });
}

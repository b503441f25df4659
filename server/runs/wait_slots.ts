/**
 * Caps on open waits (MCP `wait_for_run` calls and `GET …/wait` requests), per token and per
 * server. Every call counts, also each of a JSON-RPC batch: a batch of 100 calls takes 100
 * slots, and the calls past a cap are refused at once with an error that names it.
 */
import type { Context } from "../context.ts";
import { TooManyError } from "../errors.ts";

/** Open waits of one token at most, unless the context says otherwise. */
export const MAX_WAITS_PER_TOKEN = 32;
/** Open waits on the server at most, unless the context says otherwise. */
export const MAX_WAITS = 256;

interface Slots {
  total: number;
  perToken: Map<string, number>;
}

const slotsOf = new WeakMap<Context, Slots>();

/** How many waits are open in total, or of one token. */
export function openWaits(ctx: Context, tokenId?: string): number {
  const slots = slotsOf.get(ctx);
  if (!slots) return 0;
  return tokenId === undefined ? slots.total : slots.perToken.get(tokenId) ?? 0;
}

/**
 * Takes the slots of a request's `calls` wait_for_run calls at once, before any work: the
 * whole request is refused with `TooManyWaits` when they would pass a cap. The calls take
 * their slot from it (`take`); `release` gives every slot back when the request ends.
 */
export function reserveWaits(
  ctx: Context,
  tokenId: string,
  calls: number,
): { take(): () => void; release(): void } {
  const held: (() => void)[] = [];
  for (let i = 0; i < calls; i++) {
    try {
      held.push(acquireWait(ctx, tokenId));
    } catch (err) {
      held.forEach((give) => give());
      if (!(err instanceof TooManyError)) throw err;
      throw new TooManyError(
        err.code,
        `POST /mcp refused: its ${calls} wait_for_run calls would pass a cap: ${err.message}`,
        err.details,
      );
    }
  }
  let taken = 0;
  return {
    // A call past the count (none should be) takes a slot of its own.
    take: () => taken < held.length ? (taken++, () => {}) : acquireWait(ctx, tokenId),
    release: () => held.splice(0).forEach((give) => give()),
  };
}

/**
 * Takes a wait slot for `tokenId`, or throws `TooManyWaits` naming the cap that is full; the
 * returned function gives the slot back (once).
 */
export function acquireWait(ctx: Context, tokenId: string): () => void {
  let slots = slotsOf.get(ctx);
  if (!slots) slotsOf.set(ctx, slots = { total: 0, perToken: new Map() });
  const perToken = ctx.waits?.maxWaitsPerToken ?? MAX_WAITS_PER_TOKEN;
  const total = ctx.waits?.maxWaits ?? MAX_WAITS;
  const mine = slots.perToken.get(tokenId) ?? 0;
  if (mine >= perToken) {
    throw new TooManyError(
      "TooManyWaits",
      `this token has ${mine} waits open (wait_for_run calls and …/wait requests), at most ${perToken} per token ` +
        `(${total} on the server; each call of a batch counts); let one end or cancel one first`,
      { cap: "per_token", limit: perToken, open: mine },
    );
  }
  if (slots.total >= total) {
    throw new TooManyError(
      "TooManyWaits",
      `the server has ${slots.total} waits open, at most ${total} ` +
        `(${perToken} per token); try again when one has ended`,
      { cap: "server", limit: total, open: slots.total },
    );
  }
  slots.perToken.set(tokenId, mine + 1);
  slots.total++;
  let released = false;
  const s = slots;
  return () => {
    if (released) return;
    released = true;
    s.total--;
    const left = (s.perToken.get(tokenId) ?? 1) - 1;
    if (left > 0) s.perToken.set(tokenId, left);
    else s.perToken.delete(tokenId);
  };
}

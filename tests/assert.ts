/**
 * Small assertion helpers for tests (the std assert module lives on JSR, which the build
 * machines cannot reach). `node:assert` does the comparing.
 */
import nodeAssert from "node:assert/strict";

/** Fails unless `value` is truthy. */
export function assert(value: unknown, message?: string): asserts value {
  nodeAssert.ok(value, message);
}

/** Fails when `value` is truthy. */
export function assertFalse(value: unknown, message?: string): void {
  nodeAssert.ok(!value, message);
}

/** Deep, strict equality. */
export function assertEquals<T>(actual: unknown, expected: T, message?: string): void {
  nodeAssert.deepStrictEqual(actual, expected, message);
}

/** Deep inequality. */
export function assertNotEquals(actual: unknown, expected: unknown, message?: string): void {
  nodeAssert.notDeepStrictEqual(actual, expected, message);
}

/** Fails unless `text` contains `part`. */
export function assertStringIncludes(text: string, part: string, message?: string): void {
  nodeAssert.ok(
    text.includes(part),
    message ?? `expected ${JSON.stringify(text)} to include ${JSON.stringify(part)}`,
  );
}

/** Fails unless `a` and `b` differ by at most `tolerance`, relative to the larger of the two. */
export function assertClose(a: number, b: number, tolerance = 1e-6, message?: string): void {
  const scale = Math.max(Math.abs(a), Math.abs(b), 1e-12);
  nodeAssert.ok(Math.abs(a - b) / scale <= tolerance, message ?? `${a} is not close to ${b}`);
}

/** Fails unless `fn` throws; returns the error. */
export function assertThrows(fn: () => unknown, includes?: string): Error {
  try {
    fn();
  } catch (err) {
    if (includes) assertStringIncludes(String((err as Error).message), includes);
    return err as Error;
  }
  throw new Error("expected the function to throw");
}

/** Fails unless the promise rejects; returns the error. */
export async function assertRejects(fn: () => Promise<unknown>, includes?: string): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    if (includes) assertStringIncludes(String((err as Error).message), includes);
    return err as Error;
  }
  throw new Error("expected the promise to reject");
}

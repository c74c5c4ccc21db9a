// The pace of waitFor's observations (test/e2e/env/index.ts). Pure.

// Without a fixed interval, waitFor observes after 50 ms, then 1.5× later each time, up to 250 ms: a
// condition that holds within a second is still seen within ~50 ms of holding, and a wait of a minute
// (an import, a restart) reads the API server ~4 times a second instead of 20 — at a constant 50 ms the
// suite's waits were a large part of its control planes' CPU.
export const WAIT_BACKOFF = { firstMs: 50, factor: 1.5, maxMs: 250 };

/** The pause before each next observation of a wait without a fixed interval. */
export function* waitIntervals(): Generator<number, never> {
  for (let ms = WAIT_BACKOFF.firstMs; ; ms = Math.min(WAIT_BACKOFF.maxMs, ms * WAIT_BACKOFF.factor)) yield Math.round(ms);
}

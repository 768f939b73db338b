/** Shared by the database fault tests. */

/**
 * Waits until `check` holds, checking every `everyMs`; fails after `withinMs`. The bound only
 * keeps a broken recovery from hanging the test file (a pending wait keeps its process alive).
 */
export async function waitFor(check: () => Promise<boolean> | boolean, what: string, everyMs = 50, withinMs = 60_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting after ${withinMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

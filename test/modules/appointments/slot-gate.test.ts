/**
 * The slot gate (src/modules/appointments/scheduling.ts): how many bookings of one slot run at once in
 * a process, and which waiting ones a finding that the slot is full answers without running them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SlotFull, SlotGate } from '../../../src/modules/appointments/scheduling.ts';

/** A booking that runs until released, then books or finds the slot full (counted from `countedAt`). */
function booking() {
  let release!: (outcome: 'booked' | { fullSince: number }) => void;
  let started = false;
  const outcome = new Promise<'booked' | { fullSince: number }>((resolve) => (release = resolve));
  const work = async () => {
    started = true;
    const result = await outcome;
    if (result === 'booked') return 'booked';
    throw new SlotFull('The slot is full', result.fullSince);
  };
  return { work, release: (o: 'booked' | { fullSince: number }) => release(o), started: () => started };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('appointments: the slot gate', () => {
  it('runs four bookings of one slot at once and the next when one ends; other slots are not held back', async () => {
    const gate = new SlotGate();
    const bookings = Array.from({ length: 6 }, booking);
    const answers = bookings.map((b) => gate.run('slot-a', b.work));
    const elsewhere = booking();
    const other = gate.run('slot-b', elsewhere.work);
    await settle();
    assert.deepEqual(
      bookings.map((b) => b.started()),
      [true, true, true, true, false, false],
    );
    assert.equal(elsewhere.started(), true);
    bookings[0]!.release('booked');
    await settle();
    assert.equal(bookings[4]!.started(), true, 'the first waiting one runs when one ends');
    assert.equal(bookings[5]!.started(), false);
    for (const b of bookings.slice(1)) b.release('booked');
    elsewhere.release('booked');
    assert.deepEqual(await Promise.all([...answers, other]), Array(7).fill('booked'));
  });

  it('refuses the bookings waiting since before a count found the slot full, without running them; a later one counts again', async () => {
    const gate = new SlotGate();
    const running = Array.from({ length: 4 }, booking);
    const runningAnswers = running.map((b) => gate.run('slot', b.work).catch((error: unknown) => error));
    const waiting = Array.from({ length: 50 }, booking);
    const waitingAnswers = waiting.map((b) => gate.run('slot', b.work).catch((error: unknown) => error));
    await settle();
    // The count that finds the slot full began after all of them arrived.
    running[0]!.release({ fullSince: performance.now() });
    const refused = await Promise.all(waitingAnswers);
    assert.ok(refused.every((error) => error instanceof SlotFull && error.problem.code === 'SLOT_UNAVAILABLE' && error.problem.status === 409));
    assert.equal(waiting.filter((b) => b.started()).length, 0, 'none of the waiting ones ran');
    // One arriving after that count runs its own; while the slot is known full, one at a time.
    const late = [booking(), booking()];
    const lateAnswers = late.map((b) => gate.run('slot', b.work).catch((error: unknown) => error));
    for (const b of running.slice(1)) b.release('booked');
    await settle();
    assert.deepEqual(
      late.map((b) => b.started()),
      [true, false],
    );
    late[0]!.release({ fullSince: performance.now() });
    const [first, second] = await Promise.all(lateAnswers);
    assert.ok(first instanceof SlotFull);
    assert.ok(second instanceof SlotFull, 'it waited since before the second count began');
    assert.equal(late[1]!.started(), false);
    // The slot has places again (a cancellation): the next one counts and books.
    const after = booking();
    const afterAnswer = gate.run('slot', after.work);
    await settle();
    assert.equal(after.started(), true);
    after.release('booked');
    assert.equal(await afterAnswer, 'booked');
    assert.deepEqual((await Promise.all(runningAnswers)).slice(1), ['booked', 'booked', 'booked']);
  });
});

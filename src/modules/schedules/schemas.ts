/**
 * The schedule a client sends, as TypeBox schemas: the route validates the body and documents it with
 * them, and the service's input type is derived from them (ScheduleInput), so the two cannot drift.
 */
import { Type } from 'typebox';
import { WEEKDAY_NAMES } from '../../time.ts';

const Clock = Type.String({ pattern: '^\\d{2}:\\d{2}$', 'x-message': 'Enter a time HH:MM from 00:00 to 24:00.' });
const DateText = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', 'x-message': 'Enter a real date, YYYY-MM-DD.' });

export const Session = Type.Object(
  {
    days: Type.Array(Type.Enum([...WEEKDAY_NAMES]), { minItems: 1, maxItems: 7 }),
    start: Clock,
    end: Clock,
  },
  { additionalProperties: false, description: 'A weekly session: the days it runs and its wall-clock start and end in the schedule’s zone' },
);
export const ScheduleException = Type.Object(
  {
    type: Type.Enum(['leave', 'holiday', 'extra']),
    start_date: DateText,
    end_date: DateText,
    start_time: Type.Optional(Clock),
    end_time: Type.Optional(Clock),
    note: Type.Optional(Type.String({ maxLength: 500 })),
  },
  {
    additionalProperties: false,
    description:
      'Dates inclusive. A leave or holiday without times takes the whole days, with times that window of each day; an extra session (times required) adds slots on those days',
  },
);

export const ScheduleBody = Type.Object(
  {
    timezone: Type.Optional(Type.String({ maxLength: 64, description: 'IANA time zone of the times; default CPS_TIMEZONE' })),
    slot_minutes: Type.Integer({ minimum: 5, maximum: 480 }),
    capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Patients per slot (OPD tokens); default 1' })),
    buffer_minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 240, description: 'Gap after each slot; default 0' })),
    sessions: Type.Array(Session, { maxItems: 50 }),
    exceptions: Type.Optional(Type.Array(ScheduleException, { maxItems: 500 })),
    service_name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        pattern: '\\S',
        description: 'The service the schedule books (its conf_id is the schedule id); default "consultation"',
      }),
    ),
    price: Type.Optional(Type.Number({ minimum: 0, maximum: 10_000_000, description: "The service's fee, the slots' fee" })),
    currency: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$', 'x-message': 'Enter an ISO 4217 code such as INR.' })),
  },
  { additionalProperties: false },
);

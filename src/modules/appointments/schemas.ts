/**
 * What a client sends about appointments, as TypeBox schemas: the routes validate and document the
 * requests with them, and the service's input types are derived from them (BookInput, UpdateInput,
 * ExpectedIds, ListQuery, RescheduleInput), so the two cannot drift.
 */
import { Type } from 'typebox';
import { Epoch, freeFormObject, Id, MAX_ID_LENGTH } from '../../http/schemas.ts';

const FreeForm = freeFormObject();
const DisplayMeta = freeFormObject(
  'Shown on the appointment card: keys up to 30 characters; values a string (up to 50 characters), an integer or a float',
);

export const CustomAttributes = Type.Object({
  label: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 })),
  tags: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 })),
});
export const VideoConnect = Type.Object({
  vendor: Type.Optional(Type.String({ maxLength: 100 })),
  url: Type.Optional(Type.String({ maxLength: 2000, format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', 'x-message': 'must be an http(s) URL' })),
  pt_joined: Type.Optional(Epoch),
});
export const PatientDetails = Type.Object({
  designation: Type.Optional(Type.String({ maxLength: 50 })),
  first_name: Type.Optional(Type.String({ maxLength: 100 })),
  middle_name: Type.Optional(Type.String({ maxLength: 100 })),
  last_name: Type.Optional(Type.String({ maxLength: 100 })),
  mobile: Type.Optional(Type.String({ pattern: '^\\+\\d{7,15}$', 'x-message': 'must be + and 7 to 15 digits (international format)' })),
  gender: Type.Optional(Type.Enum(['M', 'F', 'O'])),
  dob: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', 'x-message': 'must be a date, YYYY-MM-DD' })),
  age: Type.Optional(Type.Integer({ minimum: 0, maximum: 150, description: 'Years; the alternative to dob' })),
  address: Type.Optional(
    Type.Object({
      city: Type.Optional(Type.String({ maxLength: 100 })),
      pincode: Type.Optional(Type.Integer({ minimum: 0, maximum: 9_999_999_999 })),
    }),
  ),
  partner_patient_id: Type.Optional(Id),
});
const Token = Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Position in the queue' });
const Mode = Type.Enum(['INCLINIC', 'VIDEO', 'PHONE', 'in_clinic', 'tele'], {
  description: 'INCLINIC (default), VIDEO or PHONE; in_clinic and tele, as the record reads them, mean INCLINIC and VIDEO',
});
const Notes = Type.String({ maxLength: 5000 });

export const BookBody = Type.Object({
  partner_appointment_id: Type.Optional(Id),
  clinic_id: Type.Optional(Id),
  partner_clinic_id: Type.Optional(Id),
  doctor_id: Type.Optional(Id),
  partner_doctor_id: Type.Optional(Id),
  appointment_details: Type.Object({
    start_time: Epoch,
    end_time: Epoch,
    mode: Type.Optional(Mode),
    custom_attributes: Type.Optional(CustomAttributes),
    video_connect: Type.Optional(VideoConnect),
  }),
  patient_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description: 'An existing patient (the service id); patient_details sent too change it' }),
  ),
  partner_patient_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_ID_LENGTH,
      description: "An existing patient by the partner's id; patient_details sent too change it",
    }),
  ),
  patient_details: Type.Optional(PatientDetails),
  token: Type.Optional(Token),
  partner_meta: Type.Optional(FreeForm),
  display_meta: Type.Optional(DisplayMeta),
  notes: Type.Optional(Notes),
});

export const UpdateBody = Type.Object({
  custom_attributes: Type.Optional(CustomAttributes),
  partner_meta: Type.Optional(freeFormObject('Replaces the stored object')),
  patient_details: Type.Optional(PatientDetails),
  token: Type.Optional(Token),
  video_connect: Type.Optional(VideoConnect),
  display_meta: Type.Optional(DisplayMeta),
  start_time: Type.Optional(Epoch),
  end_time: Type.Optional(Epoch),
  mode: Type.Optional(Mode),
  notes: Type.Optional(Notes),
});

/** Eka's v2 update: the times, mode and appointment attributes inside appointment_details; the ids name the appointment's own. */
export const UpdateV2Body = Type.Object({
  token: Type.Optional(Token),
  appointment_details: Type.Optional(
    Type.Object({
      start_time: Type.Optional(Epoch),
      end_time: Type.Optional(Epoch),
      mode: Type.Optional(Mode),
      custom_attributes: Type.Optional(CustomAttributes),
      video_connect: Type.Optional(VideoConnect),
    }),
  ),
  partner_meta: Type.Optional(freeFormObject('Replaces the stored object')),
  patient_details: Type.Optional(PatientDetails),
  display_meta: Type.Optional(DisplayMeta),
  notes: Type.Optional(Notes),
  clinic_id: Type.Optional(Id),
  doctor_id: Type.Optional(Id),
  patient_id: Type.Optional(Id),
  partner_clinic_id: Type.Optional(Id),
  partner_doctor_id: Type.Optional(Id),
  partner_patient_id: Type.Optional(Id),
});

export const CustomAttributesBody = Type.Record(
  Type.String(),
  Type.Union([Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 }), Type.String({ maxLength: 200 }), Type.Null()]),
  { maxProperties: 50, description: 'Attribute name (up to 50 characters) -> values (e.g. {"payment_status": ["paid"]})' },
);

export const ListQuery = Type.Object({
  clinic_id: Type.Optional(Id),
  doctor_id: Type.Optional(Id),
  patient_id: Type.Optional(Id),
  start_date: Type.Optional(Type.String({ description: 'YYYY-MM-DD, inclusive, in CPS_TIMEZONE' })),
  end_date: Type.Optional(Type.String({ description: 'YYYY-MM-DD, inclusive, in CPS_TIMEZONE' })),
  date: Type.Optional(
    Type.String({
      maxLength: 10,
      description: "One day, YYYY-MM-DD in CPS_TIMEZONE (with doctor_id: the doctor's day); not with start_date or end_date",
    }),
  ),
  status: Type.Optional(Type.String({ maxLength: 100, description: 'BK, PA, NS, CM, CN or RES; several comma-separated' })),
  page_no: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000 })),
});

export const EkaReschedule = Type.Object({
  start_time: Epoch,
  end_time: Epoch,
  clinic_id: Type.Optional(Id),
  doc_id: Type.Optional(Id),
  partner_clinic_id: Type.Optional(Id),
  partner_doctor_id: Type.Optional(Id),
});
export const Reschedule = Type.Object({
  start_time: Epoch,
  end_time: Epoch,
  partner_appointment_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description: "The new appointment's partner id; the path then holds the partner's id" }),
  ),
});

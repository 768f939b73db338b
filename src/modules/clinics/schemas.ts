/**
 * The clinics and doctors a client sends, as TypeBox schemas: the routes validate and document the bodies
 * with them, and the service's input types are derived from them (ClinicInput, DoctorInput).
 */
import { Type } from 'typebox';

const Text = (maxLength: number) => Type.String({ maxLength });
const Ids = Type.Array(Type.String({ maxLength: 200 }), { maxItems: 500 });
const HttpsUrl = Type.String({ maxLength: 2000, format: 'uri', pattern: '^https://[^\\s/?#]+', 'x-message': 'Enter a valid https URL.' });

const clinicFields = {
  name: Text(200),
  address: Text(1000),
  partner_id: Type.String({ maxLength: 200 }),
  pincode: Text(20),
  contact: Type.String({ pattern: '^\\d{10,11}$', 'x-message': 'Ensure this value has 10 or 11 digits.' }),
  doctor_ids: Ids,
  partner_doctor_ids: Ids,
  city: Text(200),
  state: Text(200),
  review_link: HttpsUrl,
};

export const ClinicCreate = Type.Object({
  ...clinicFields,
  partner_id: Type.Optional(clinicFields.partner_id),
  pincode: Type.Optional(clinicFields.pincode),
  contact: Type.Optional(clinicFields.contact),
  doctor_ids: Type.Optional(Ids),
  partner_doctor_ids: Type.Optional(Ids),
  city: Type.Optional(clinicFields.city),
  state: Type.Optional(clinicFields.state),
  review_link: Type.Optional(HttpsUrl),
});
export const ClinicUpdate = Type.Partial(Type.Object(clinicFields));

const doctorFields = {
  firstname: Text(200),
  lastname: Text(200),
  gender: Text(20),
  mobile: Type.String({ pattern: '^\\+?\\d{7,15}$', 'x-message': 'Enter a valid phone number: 7 to 15 digits, optionally after +.' }),
  email: Type.String({ format: 'email', maxLength: 320, 'x-message': 'Enter a valid email address.' }),
  specialisations: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 }),
  partner_id: Type.String({ maxLength: 200 }),
  review_link: HttpsUrl,
  clinic_ids: Ids,
  partner_clinic_ids: Ids,
};
export const DoctorCreate = Type.Object({
  firstname: doctorFields.firstname,
  lastname: doctorFields.lastname,
  gender: Type.Optional(doctorFields.gender),
  mobile: Type.Optional(doctorFields.mobile),
  email: Type.Optional(doctorFields.email),
  specialisations: Type.Optional(doctorFields.specialisations),
  partner_id: Type.Optional(doctorFields.partner_id),
  review_link: Type.Optional(HttpsUrl),
  clinic_ids: Type.Optional(Ids),
  partner_clinic_ids: Type.Optional(Ids),
});
export const DoctorUpdate = Type.Partial(Type.Object(doctorFields));

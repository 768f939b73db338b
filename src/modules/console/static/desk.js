// The front desk: a day's appointments per clinic and doctor in token order, the doctor's free slots,
// a walk-in booking (a patient found by mobile, or a new one), and each appointment's next step.
// Every read and change is the API's own call (api.js).
import { api } from './api.js';
import { field, h, replace, requests } from './dom.js';
import { t } from './strings.js';
import { clockIn, dayIn } from './time.js';

const PAGE_SIZE = 50;
const PAGES_AT_ONCE = 4;
const OPEN = new Set(['BK', 'PA']);
const enc = encodeURIComponent;

/**
 * Every appointment of the day (the API answers 50 a page): the first page, then, while pages come back full,
 * the next PAGES_AT_ONCE at once, so that a busy day takes a few round trips rather than one a page.
 */
async function dayOf(clinicId, doctorId, date) {
  const pageOf = async (page) => {
    const query = new URLSearchParams({ clinic_id: clinicId, date, page_no: String(page) });
    if (doctorId) query.set('doctor_id', doctorId);
    return (await api('GET', `/dr/v1/appointment?${query}`)).appointments;
  };
  const all = [];
  let next = 0;
  for (let wave = [pageOf(next++)]; ; ) {
    for (const appointments of await Promise.all(wave)) {
      all.push(...appointments);
      if (appointments.length < PAGE_SIZE) return all;
    }
    wave = Array.from({ length: PAGES_AT_ONCE }, () => pageOf(next++));
  }
}

/** Token order; appointments without a token after, by time. */
function byToken(a, b) {
  const left = a.token ?? Number.MAX_SAFE_INTEGER;
  const right = b.token ?? Number.MAX_SAFE_INTEGER;
  return left - right || a.start_time - b.start_time;
}

async function slotsOf(doctorId, clinicId, date) {
  const answer = await api('GET', `/dr/v1/doctor/${enc(doctorId)}/clinic/${enc(clinicId)}/appointment/slot?start_date=${date}&end_date=${date}`);
  const byDate = answer.data.schedule[doctorId] ?? {};
  return { slots: byDate[date] ?? [], scheduled: Object.keys(answer.data.services).length > 0 };
}

const nameOf = (details) => [details.first_name, details.middle_name, details.last_name].filter(Boolean).join(' ') || t('desk.unnamed');

export const deskPage = {
  name: 'desk',
  title: 'nav.desk',
  allowed: (session) => session.kind === 'client' && session.scopes.includes('appointment:write'),
  async render(main, { session, announce }) {
    const zone = session.timezone;
    const canComplete = session.scopes.includes('appointment:complete');
    const { data } = await api('GET', '/dr/v1/business/entities');
    const doctorNames = new Map(data.doctors.map((doctor) => [doctor.doctor_id, doctor.name]));
    const params = new URLSearchParams(location.search);

    const clinicSelect = h(
      'select',
      { id: 'desk-clinic', name: 'clinic' },
      data.clinics.map((clinic) => h('option', { value: clinic.clinic_id }, clinic.name)),
    );
    const doctorSelect = h('select', { id: 'desk-doctor', name: 'doctor' });
    const dateInput = h('input', { id: 'desk-date', name: 'date', type: 'date', required: true, value: params.get('date') ?? dayIn(zone) });
    // A clinic named in the address that is not one of the business's is not chosen: the first is.
    if (params.get('clinic')) clinicSelect.value = params.get('clinic');
    if (clinicSelect.selectedIndex < 0) clinicSelect.selectedIndex = 0;
    const fillDoctors = () => {
      const clinic = data.clinics.find((c) => c.clinic_id === clinicSelect.value);
      replace(doctorSelect, 
        h('option', { value: '' }, t('desk.all_doctors')),
        (clinic?.doctors ?? []).map((id) => h('option', { value: id }, doctorNames.get(id) ?? id)),
      );
    };
    fillDoctors();
    if (params.get('doctor')) doctorSelect.value = params.get('doctor');
    if (doctorSelect.selectedIndex < 0) doctorSelect.selectedIndex = 0;
    clinicSelect.addEventListener('change', fillDoctors);

    const listArea = h('section', { 'aria-labelledby': 'desk-list-title' });
    const slotArea = h('section', { 'aria-labelledby': 'desk-slots-title' });
    const bookArea = h('section', { 'aria-labelledby': 'desk-book-title' });
    const moveDialog = h('dialog', { 'aria-labelledby': 'desk-move-title', class: 'card' });

    main.append(
      h('h1', { tabindex: '-1' }, t('desk.title')),
      data.clinics.length === 0
        ? h('p', {}, t('desk.no_clinics'))
        : h(
            'form',
            {
              class: 'inline card',
              id: 'desk-filter',
              onsubmit: (event) => {
                event.preventDefault();
                const query = new URLSearchParams({ clinic: clinicSelect.value, date: dateInput.value });
                if (doctorSelect.value) query.set('doctor', doctorSelect.value);
                history.replaceState(null, '', `/console/desk?${query}`);
                void load();
              },
            },
            h('div', { class: 'field' }, h('label', { for: 'desk-clinic' }, t('desk.clinic')), clinicSelect),
            h('div', { class: 'field' }, h('label', { for: 'desk-doctor' }, t('desk.doctor')), doctorSelect),
            h('div', { class: 'field' }, h('label', { for: 'desk-date' }, t('desk.date')), dateInput),
            h('button', { type: 'submit' }, t('desk.show')),
          ),
      listArea,
      slotArea,
      bookArea,
      moveDialog,
    );
    if (data.clinics.length === 0) return;

    /** Runs a change, announces its outcome, reloads the day. */
    async function act(change, done) {
      try {
        await change();
        await load();
        announce(done);
      } catch (error) {
        announce(t('app.error', { message: error.message }));
      }
    }

    function actions(appointment) {
      if (!OPEN.has(appointment.status)) return null;
      const id = enc(appointment.appointment_id);
      const who = nameOf(appointment.patient_details);
      const button = (label, className, onclick) =>
        h('button', { type: 'button', class: className, 'aria-label': `${label}: ${who}`, onclick }, label);
      return h(
        'div',
        { class: 'actions' },
        appointment.custom_attributes.arrived_at
          ? null
          : button(t('desk.arrived'), 'secondary', () =>
              act(
                () => api('PATCH', `/dr/v1/appointment/${id}/custom_attribute`, { arrived_at: String(Math.floor(Date.now() / 1000)) }),
                t('desk.done_arrived', { name: who }),
              ),
            ),
        canComplete
          ? button(t('desk.complete'), 'secondary', () => act(() => api('POST', `/dr/v1/appointment/${id}/complete`), t('desk.done_complete', { name: who })))
          : null,
        button(t('desk.no_show'), 'secondary', () =>
          act(() => api('POST', `/dr/v1/appointment/${id}/change-status`, { status: 'NS' }), t('desk.done_no_show', { name: who })),
        ),
        button(t('desk.reschedule'), 'secondary', () => openMove(appointment)),
        button(t('desk.cancel'), 'danger', () => act(() => api('PUT', `/dr/v1/appointment/${id}/cancel`), t('desk.done_cancel', { name: who }))),
      );
    }

    function statusOf(appointment) {
      const arrived = appointment.custom_attributes.arrived_at;
      if (OPEN.has(appointment.status) && arrived) {
        return h('span', { class: 'badge good' }, t('desk.status_arrived', { time: clockIn(zone, Number(arrived)) }));
      }
      const tone = { BK: 'wait', PA: 'wait', CM: 'good', NS: 'bad', CN: 'bad', RES: '' }[appointment.status] ?? '';
      return h('span', { class: `badge ${tone}` }, t(`status.${appointment.status}`));
    }

    function renderList(appointments, date) {
      const rows = document.createDocumentFragment();
      for (const appointment of appointments) {
        rows.append(
          h(
            'tr',
            {},
            h('td', { class: 'num', 'data-label': t('desk.token') }, appointment.token ?? '–'),
            h('td', { 'data-label': t('desk.time') }, clockIn(zone, appointment.start_time)),
            h('th', { scope: 'row', 'data-label': t('desk.patient') }, nameOf(appointment.patient_details)),
            h('td', { 'data-label': t('desk.mobile') }, appointment.patient_details.mobile ?? ''),
            h('td', { 'data-label': t('desk.doctor') }, doctorNames.get(appointment.doctor_id) ?? appointment.doctor_id),
            h('td', { 'data-label': t('desk.status') }, statusOf(appointment)),
            h('td', {}, actions(appointment)),
          ),
        );
      }
      replace(listArea, 
        h('h2', { id: 'desk-list-title' }, t('desk.list_title', { date, count: appointments.length })),
        appointments.length === 0
          ? h('p', {}, t('desk.none'))
          : h(
              'div',
              { class: 'table-wrap' },
              h(
                'table',
                { class: 'stack', id: 'desk-table' },
                h(
                  'thead',
                  {},
                  h(
                    'tr',
                    {},
                    ['desk.token', 'desk.time', 'desk.patient', 'desk.mobile', 'desk.doctor', 'desk.status', 'desk.actions'].map((key) =>
                      h('th', { scope: 'col', class: key === 'desk.token' ? 'num' : null }, t(key)),
                    ),
                  ),
                ),
                h('tbody', {}, rows),
              ),
            ),
      );
    }

    function slotLabel(slot) {
      return t('desk.slot', { time: clockIn(zone, slot.start_time), left: slot.places_left });
    }

    function renderSlots(slots, scheduled) {
      if (!doctorSelect.value) {
        replace(slotArea, );
        return;
      }
      const free = slots.filter((slot) => slot.available);
      replace(slotArea, 
        h('h2', { id: 'desk-slots-title' }, t('desk.slots_title')),
        !scheduled
          ? h('p', {}, t('desk.no_schedule'))
          : free.length === 0
            ? h('p', {}, t('desk.no_slots'))
            : h('ul', { class: 'slots', id: 'desk-slots' }, free.map((slot) => h('li', { class: 'badge' }, slotLabel(slot)))),
      );
    }

    function renderBooking(slots, scheduled, date) {
      if (!doctorSelect.value) {
        replace(bookArea, h('h2', { id: 'desk-book-title' }, t('desk.book_title')), h('p', {}, t('desk.pick_doctor')));
        return;
      }
      const free = slots.filter((slot) => slot.available);
      const slotSelect = h(
        'select',
        { id: 'book-slot', name: 'slot', required: true },
        scheduled
          ? free.map((slot) => h('option', { value: `${slot.start_time}-${slot.end_time}` }, slotLabel(slot)))
          : h('option', { value: 'now' }, t('desk.now')),
      );
      const mobile = h('input', { id: 'book-mobile', name: 'mobile', type: 'tel', autocomplete: 'off', inputmode: 'tel', placeholder: '+919812345678' });
      const found = h('fieldset', { class: 'field', id: 'book-patients' });
      const newFields = h(
        'div',
        { class: 'columns', id: 'book-new' },
        field(t('desk.first_name'), { name: 'first_name', id: 'book-first', autocomplete: 'off' }),
        field(t('desk.last_name'), { name: 'last_name', id: 'book-last', autocomplete: 'off' }),
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'book-gender' }, t('desk.gender')),
          h(
            'select',
            { id: 'book-gender', name: 'gender' },
            ['M', 'F', 'O'].map((g) => h('option', { value: g }, t(`gender.${g}`))),
          ),
        ),
        field(t('desk.age'), { name: 'age', id: 'book-age', type: 'number', min: 0, max: 150, inputmode: 'numeric' }),
      );
      const showFound = (patients) => {
        replace(found, 
          h('legend', {}, t('desk.patient')),
          patients.map((patient, index) =>
            h(
              'div',
              { class: 'choice' },
              h('input', { type: 'radio', name: 'patient', id: `book-p${index}`, value: patient.patient_id, checked: index === 0 }),
              h('label', { for: `book-p${index}` }, `${patient.name} · ${patient.patient_profile.mobile}`),
            ),
          ),
          h(
            'div',
            { class: 'choice' },
            h('input', { type: 'radio', name: 'patient', id: 'book-pnew', value: 'new', checked: patients.length === 0 }),
            h('label', { for: 'book-pnew' }, t('desk.new_patient')),
          ),
        );
      };
      showFound([]);
      const error = h('p', { class: 'error', role: 'alert', hidden: true });
      const form = h(
        'form',
        {
          class: 'card',
          id: 'book-form',
          onsubmit: async (event) => {
            event.preventDefault();
            error.hidden = true;
            const values = Object.fromEntries(new FormData(form));
            let start;
            let end;
            if (values.slot === 'now') {
              start = Math.floor(Date.now() / 1000);
              end = start + 15 * 60;
            } else {
              [start, end] = String(values.slot).split('-').map(Number);
            }
            const body = { clinic_id: clinicSelect.value, doctor_id: doctorSelect.value, appointment_details: { start_time: start, end_time: end } };
            if (values.patient && values.patient !== 'new') body.patient_id = values.patient;
            else {
              body.patient_details = {
                first_name: values.first_name || undefined,
                last_name: values.last_name || undefined,
                gender: values.gender,
                ...(values.mobile ? { mobile: String(values.mobile).replace(/\s/g, '') } : {}),
                ...(values.age !== '' ? { age: Number(values.age) } : {}),
              };
            }
            try {
              const { appointment_id } = await api('POST', '/dr/v1/appointment', body);
              const booked = await api('GET', `/dr/v1/appointment/${enc(appointment_id)}`);
              // Announced once the day is shown again, so the page is settled when it is read.
              await load();
              announce(t('desk.done_booked', { name: nameOf(booked.patient_details), token: booked.token ?? '–' }));
            } catch (failure) {
              error.textContent = t('app.error', { message: failure.message });
              error.hidden = false;
            }
          },
        },
        h('h2', { id: 'desk-book-title' }, t('desk.book_title', { date })),
        h('div', { class: 'field' }, h('label', { for: 'book-slot' }, t('desk.slot_label')), slotSelect),
        h(
          'div',
          { class: 'inline' },
          h('div', { class: 'field' }, h('label', { for: 'book-mobile' }, t('desk.mobile')), mobile),
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: async () => {
                const number = mobile.value.replace(/\s/g, '');
                if (number === '') return;
                try {
                  const answer = await api('GET', `/dr/v1/business/patients/search?mobile=${enc(number)}`);
                  showFound(answer.data.patients);
                  announce(t('desk.found', { count: answer.data.patients.length }));
                } catch (failure) {
                  announce(t('app.error', { message: failure.message }));
                }
              },
            },
            t('desk.find'),
          ),
        ),
        found,
        newFields,
        error,
        h('button', { type: 'submit', disabled: scheduled && free.length === 0 }, t('desk.book')),
      );
      replace(bookArea, form);
    }

    async function openMove(appointment) {
      const who = nameOf(appointment.patient_details);
      const date = h('input', { id: 'move-date', type: 'date', required: true, value: dateInput.value });
      const slotSelect = h('select', { id: 'move-slot', required: true });
      const error = h('p', { class: 'error', role: 'alert', hidden: true });
      const slotRequest = requests();
      const fill = async () => {
        const isNewest = slotRequest();
        const { slots, scheduled } = await slotsOf(appointment.doctor_id, appointment.clinic_id, date.value);
        if (!isNewest()) return;
        replace(slotSelect, 
          scheduled
            ? slots.filter((slot) => slot.available).map((slot) => h('option', { value: `${slot.start_time}-${slot.end_time}` }, slotLabel(slot)))
            : h('option', { value: 'keep' }, t('desk.same_time')),
        );
      };
      date.addEventListener('change', () => void fill());
      await fill();
      replace(moveDialog, 
        h(
          'form',
          {
            method: 'dialog',
            onsubmit: async (event) => {
              event.preventDefault();
              let start;
              let end;
              if (slotSelect.value === 'keep' || slotSelect.value === '') {
                const offset = (Date.parse(`${date.value}T00:00:00Z`) - Date.parse(`${dayIn('UTC', new Date(appointment.start_time * 1000))}T00:00:00Z`)) / 1000;
                start = appointment.start_time + offset;
                end = appointment.end_time + offset;
              } else {
                [start, end] = slotSelect.value.split('-').map(Number);
              }
              try {
                await api('PUT', `/dr/v1/appointment/${enc(appointment.appointment_id)}/reschedule`, { start_time: start, end_time: end });
                moveDialog.close();
                await load();
                announce(t('desk.done_moved', { name: who }));
              } catch (failure) {
                error.textContent = t('app.error', { message: failure.message });
                error.hidden = false;
              }
            },
          },
          h('h2', { id: 'desk-move-title' }, t('desk.move_title', { name: who })),
          h('div', { class: 'field' }, h('label', { for: 'move-date' }, t('desk.date')), date),
          h('div', { class: 'field' }, h('label', { for: 'move-slot' }, t('desk.slot_label')), slotSelect),
          error,
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'submit' }, t('desk.move')),
            h('button', { type: 'button', class: 'secondary', onclick: () => moveDialog.close() }, t('desk.close')),
          ),
        ),
      );
      moveDialog.showModal();
    }

    const dayRequest = requests();
    async function load() {
      const isNewest = dayRequest();
      const date = dateInput.value;
      replace(listArea, h('p', {}, t('app.loading')));
      const [appointments, slotAnswer] = await Promise.all([
        dayOf(clinicSelect.value, doctorSelect.value, date),
        doctorSelect.value ? slotsOf(doctorSelect.value, clinicSelect.value, date) : Promise.resolve({ slots: [], scheduled: false }),
      ]);
      if (!isNewest()) return;
      appointments.sort(byToken);
      renderList(appointments, date);
      renderSlots(slotAnswer.slots, slotAnswer.scheduled);
      renderBooking(slotAnswer.slots, slotAnswer.scheduled, date);
    }

    await load();
  },
};

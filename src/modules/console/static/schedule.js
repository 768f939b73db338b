// A doctor's weekly schedule at a clinic and their leave: read with GET, changed by PUT of the whole
// schedule (the API's own call), so a session or a leave added here is what a partner's PUT would send.
import { api } from './api.js';
import { field, h, replace, requests } from './dom.js';
import { t } from './strings.js';

const DAYS = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
const enc = encodeURIComponent;
const FIELDS = ['timezone', 'slot_minutes', 'capacity', 'buffer_minutes', 'sessions', 'exceptions', 'service_name', 'price', 'currency'];

/** The PUT body of a schedule as GET answers it (its own fields, nulls left out). */
function bodyOf(schedule) {
  return Object.fromEntries(FIELDS.filter((key) => schedule[key] !== null && schedule[key] !== undefined).map((key) => [key, schedule[key]]));
}

export const schedulePage = {
  name: 'schedule',
  title: 'nav.schedule',
  allowed: (session) => session.kind === 'client' && session.scopes.includes('clinic:write'),
  async render(main, { announce }) {
    const { data } = await api('GET', '/dr/v1/business/entities');
    const doctorNames = new Map(data.doctors.map((doctor) => [doctor.doctor_id, doctor.name]));
    const pairs = data.clinics.flatMap((clinic) => clinic.doctors.map((doctorId) => ({ clinic, doctorId })));
    const pairSelect = h(
      'select',
      { id: 'schedule-pair' },
      pairs.map(({ clinic, doctorId }) => h('option', { value: `${doctorId} ${clinic.clinic_id}` }, `${doctorNames.get(doctorId) ?? doctorId} · ${clinic.name}`)),
    );
    const area = h('div', {});
    main.append(
      h('h1', { tabindex: '-1' }, t('schedule.title')),
      pairs.length === 0
        ? h('p', {}, t('schedule.no_pairs'))
        : h(
            'form',
            {
              class: 'inline card',
              onsubmit: (event) => {
                event.preventDefault();
                void load();
              },
            },
            h('div', { class: 'field' }, h('label', { for: 'schedule-pair' }, t('schedule.pair')), pairSelect),
            h('button', { type: 'submit' }, t('desk.show')),
          ),
      area,
    );
    if (pairs.length === 0) return;

    const path = () => {
      const [doctorId, clinicId] = pairSelect.value.split(' ');
      return `/cdr/v1/doctor/${enc(doctorId)}/clinic/${enc(clinicId)}/schedule`;
    };

    async function save(body, done) {
      await api('PUT', path(), body);
      await load();
      announce(done);
    }

    /** A form whose failures show beside it. */
    function form(id, title, children, submit) {
      const error = h('p', { class: 'error', role: 'alert', hidden: true });
      const element = h(
        'form',
        {
          class: 'card',
          id,
          onsubmit: async (event) => {
            event.preventDefault();
            error.hidden = true;
            try {
              await submit(new FormData(element));
            } catch (failure) {
              error.textContent = t('app.error', { message: failure.message });
              error.hidden = false;
            }
          },
        },
        h('h2', {}, title),
        children,
        error,
      );
      return element;
    }

    const scheduleRequest = requests();
    async function load() {
      const isNewest = scheduleRequest();
      let schedule = null;
      try {
        schedule = (await api('GET', path())).schedule;
      } catch (error) {
        if (error.status !== 404) throw error;
      }
      if (!isNewest()) return;
      const body = schedule ? bodyOf(schedule) : { slot_minutes: 15, capacity: 1, sessions: [], exceptions: [] };
      const sessions = body.sessions ?? [];
      const exceptions = body.exceptions ?? [];
      replace(
        area,
        h('h2', {}, t('schedule.week')),
        schedule ? h('p', {}, t('schedule.facts', { minutes: body.slot_minutes, capacity: body.capacity ?? 1, zone: schedule.timezone })) : h('p', {}, t('schedule.none')),
        sessions.length === 0
          ? null
          : h(
              'div',
              { class: 'table-wrap' },
              h(
                'table',
                { id: 'schedule-sessions' },
                h('thead', {}, h('tr', {}, [t('schedule.days'), t('schedule.start'), t('schedule.end'), t('desk.actions')].map((label) => h('th', { scope: 'col' }, label)))),
                h(
                  'tbody',
                  {},
                  sessions.map((session, index) =>
                    h(
                      'tr',
                      {},
                      h('td', {}, session.days.map((day) => t(`day.${day}`)).join(', ')),
                      h('td', {}, session.start),
                      h('td', {}, session.end),
                      h(
                        'td',
                        {},
                        h(
                          'button',
                          {
                            type: 'button',
                            class: 'danger',
                            'aria-label': t('schedule.remove_session_of', { start: session.start, end: session.end }),
                            onclick: () =>
                              save({ ...body, sessions: sessions.filter((_, i) => i !== index) }, t('schedule.done_session_removed')).catch((e) =>
                                announce(t('app.error', { message: e.message })),
                              ),
                          },
                          t('schedule.remove'),
                        ),
                      ),
                    ),
                  ),
                ),
              ),
            ),
        form(
          'schedule-add-session',
          t('schedule.add_session'),
          [
            h(
              'fieldset',
              {},
              h('legend', {}, t('schedule.days')),
              h(
                'div',
                { class: 'inline' },
                DAYS.map((day) => h('div', { class: 'choice' }, h('input', { type: 'checkbox', name: 'days', value: day, id: `day-${day}` }), h('label', { for: `day-${day}` }, t(`day.${day}`)))),
              ),
            ),
            h(
              'div',
              { class: 'inline' },
              field(t('schedule.start'), { name: 'start', type: 'time', required: true, id: 'session-start' }),
              field(t('schedule.end'), { name: 'end', type: 'time', required: true, id: 'session-end' }),
              schedule ? null : field(t('schedule.slot_minutes'), { name: 'slot_minutes', type: 'number', min: 5, max: 480, value: 15, required: true, id: 'session-minutes' }),
            ),
            h('button', { type: 'submit' }, t('schedule.add')),
          ],
          async (values) => {
            const session = { days: values.getAll('days'), start: values.get('start'), end: values.get('end') };
            const minutes = values.get('slot_minutes');
            await save({ ...body, ...(minutes ? { slot_minutes: Number(minutes) } : {}), sessions: [...sessions, session] }, t('schedule.done_session_added'));
          },
        ),
        h('h2', {}, t('schedule.leave')),
        exceptions.length === 0
          ? h('p', {}, t('schedule.no_leave'))
          : h(
              'ul',
              { id: 'schedule-leave' },
              exceptions.map((exception, index) =>
                h(
                  'li',
                  {},
                  t('schedule.leave_item', {
                    type: t(`exception.${exception.type}`),
                    from: exception.start_date,
                    to: exception.end_date,
                    times: exception.start_time ? ` ${exception.start_time}–${exception.end_time}` : '',
                    note: exception.note ? ` (${exception.note})` : '',
                  }),
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      class: 'danger',
                      'aria-label': t('schedule.remove_leave_of', { from: exception.start_date, to: exception.end_date }),
                      onclick: () =>
                        save({ ...body, exceptions: exceptions.filter((_, i) => i !== index) }, t('schedule.done_leave_removed')).catch((e) =>
                          announce(t('app.error', { message: e.message })),
                        ),
                    },
                    t('schedule.remove'),
                  ),
                ),
              ),
            ),
        schedule
          ? form(
              'schedule-add-leave',
              t('schedule.add_leave'),
              [
                h(
                  'div',
                  { class: 'inline' },
                  h(
                    'div',
                    { class: 'field' },
                    h('label', { for: 'leave-type' }, t('schedule.leave_type')),
                    h(
                      'select',
                      { id: 'leave-type', name: 'type' },
                      ['leave', 'holiday'].map((type) => h('option', { value: type }, t(`exception.${type}`))),
                    ),
                  ),
                  field(t('schedule.from'), { name: 'start_date', type: 'date', required: true, id: 'leave-from' }),
                  field(t('schedule.to'), { name: 'end_date', type: 'date', required: true, id: 'leave-to' }),
                  field(t('schedule.note'), { name: 'note', maxlength: 500, id: 'leave-note' }),
                ),
                h('button', { type: 'submit' }, t('schedule.add')),
              ],
              async (values) => {
                const note = String(values.get('note') ?? '').trim();
                const exception = { type: values.get('type'), start_date: values.get('start_date'), end_date: values.get('end_date'), ...(note ? { note } : {}) };
                await save({ ...body, exceptions: [...exceptions, exception] }, t('schedule.done_leave_added'));
              },
            )
          : null,
      );
    }

    await load();
  },
};

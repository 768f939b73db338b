// Dates and times in the service's zone (CPS_TIMEZONE), which is the zone of the dates the API takes.

/** YYYY-MM-DD of `date` in `zone`. */
export function dayIn(zone, date = new Date()) {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(date);
}

const clocks = new Map();
/** HH:MM of epoch seconds in `zone`. */
export function clockIn(zone, epochSeconds) {
  let format = clocks.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    clocks.set(zone, format);
  }
  return format.format(new Date(epochSeconds * 1000));
}

/** A date and time of epoch milliseconds in `zone`, for logs and deliveries. */
export function stampIn(zone, epochMs) {
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, dateStyle: 'medium', timeStyle: 'medium' }).format(new Date(epochMs));
}

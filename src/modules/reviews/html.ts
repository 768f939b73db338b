/**
 * The review pages, rendered on the server. Every interpolated value goes through the `html` tag,
 * which escapes it unless it is markup this file built, so nothing a partner or patient typed can
 * become markup. The style sheet and the one small script (a live character count, an enhancement:
 * the form works without it) are inline and allowed by their hashes in the Content-Security-Policy.
 */
import { createHash } from 'node:crypto';
import { COMMENT_MAX, type FormErrors, type FormInput, type Visit } from './service.ts';

/** Markup built here; anything else interpolated into `html` is escaped. */
export class SafeHtml {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Part = SafeHtml | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof SafeHtml) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < parts.length; i++) out += render(parts[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

const CSS = `
:root{color-scheme:light;--ink:#1c2430;--muted:#55606e;--line:#c9d1db;--bg:#f3f5f8;--card:#fff;--accent:#0b5cad;--accent-ink:#fff;--error:#b3261e;--ok:#1e7b3a}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--ink);font:1.0625rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",Arial,sans-serif}
.top{background:var(--accent);color:var(--accent-ink);padding:1rem}
.top p{margin:0 auto;max-width:34rem;font-size:1.25rem;font-weight:700;line-height:1.3;overflow-wrap:anywhere}
main{max-width:36rem;margin:0 auto;padding:1.25rem 1rem 2.5rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:.75rem;padding:1.25rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .5rem}
p{margin:0 0 1rem}
.visit{color:var(--muted)}
.visit strong{color:var(--ink);overflow-wrap:anywhere}
fieldset{border:0;margin:0 0 1.25rem;padding:0;min-width:0}
legend{font-weight:700;font-size:1.125rem;padding:0;margin-bottom:.25rem}
.hint{color:var(--muted);font-size:.9375rem;margin:0 0 .75rem}
.scale{display:grid;grid-template-columns:repeat(5,minmax(0,1fr));gap:.5rem}
.scale label{position:relative;display:flex;cursor:pointer}
.scale input{position:absolute;opacity:0;width:100%;height:100%;margin:0;inset:0;cursor:pointer}
.scale span{flex:1;display:flex;flex-direction:column;align-items:center;justify-content:flex-start;min-height:4.25rem;padding:.625rem .125rem .5rem;border:2px solid var(--line);border-radius:.625rem;background:var(--card);text-align:center}
.scale b{font-size:1.5rem;line-height:1.1}
.scale small{font-size:.75rem;line-height:1.2;color:var(--muted)}
.scale input:checked+span{background:var(--accent);border-color:var(--accent);color:var(--accent-ink)}
.scale input:checked+span small{color:var(--accent-ink)}
.scale input:focus-visible+span{outline:3px solid #f2a900;outline-offset:2px}
.scale label:hover span{border-color:var(--accent)}
.field label{display:block;font-weight:700;font-size:1.125rem;margin-bottom:.25rem}
textarea{display:block;width:100%;min-height:8rem;padding:.75rem;font:inherit;color:inherit;border:2px solid var(--line);border-radius:.625rem;resize:vertical}
textarea:focus-visible{outline:3px solid #f2a900;outline-offset:1px;border-color:var(--accent)}
.count{margin:.375rem 0 1.25rem}
button{display:block;width:100%;min-height:3.25rem;padding:.75rem 1rem;font:inherit;font-weight:700;font-size:1.125rem;color:var(--accent-ink);background:var(--accent);border:0;border-radius:.625rem;cursor:pointer}
button:hover{background:#094c8f}
button:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.error{color:var(--error);font-weight:700;margin:0 0 .75rem}
.invalid .scale span,.invalid textarea{border-color:var(--error)}
.summary{border:2px solid var(--error);border-radius:.625rem;padding:.75rem 1rem;margin:0 0 1.25rem}
.summary h2{font-size:1.125rem;margin:0 0 .25rem;color:var(--error)}
.summary ul{margin:0;padding-left:1.25rem}
.summary a{color:var(--error)}
.done{font-size:3rem;line-height:1;margin:0 0 .5rem;color:var(--ok)}
.note{color:var(--muted);font-size:.9375rem;margin-top:1.25rem}
@media (max-width:29.99rem){main{padding:0 0 2rem}.card{border-width:0 0 1px;border-radius:0;padding:1.25rem 1rem}.scale{gap:.375rem}}
@media (max-width:22.49rem){.scale small{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}.scale span{min-height:3.25rem}}
@media (min-width:40rem){main{padding-top:2.5rem}.card{padding:2rem}h1{font-size:1.75rem}}
@media (prefers-reduced-motion:no-preference){.scale span{transition:background-color .1s,border-color .1s}}
`.trim();

// A live "N of 1000 characters" while typing; without JavaScript the hint states the limit.
const SCRIPT = `
(function(){var t=document.getElementById('comment'),c=document.getElementById('comment-count');if(!t||!c)return;
var max=Number(t.getAttribute('maxlength'));function u(){c.textContent=t.value.length+' of '+max+' characters';}
t.addEventListener('input',u);u();})();
`.trim();

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** Nothing loads from anywhere; the inline style and script run only because their hashes match. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src ${sha256(CSS)}`,
  `script-src ${sha256(SCRIPT)}`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // The token in the address is the key to the form: never send it on.
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

function layout(options: { title: string; heading: string | null; body: SafeHtml; script?: boolean }): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${options.title}</title>
<style>${new SafeHtml(CSS)}</style>
</head>
<body>
<header class="top"><p>${options.heading ?? 'Patient review'}</p></header>
<main>
<div class="card">
${options.body}
</div>
</main>
${options.script ? html`<script>${new SafeHtml(SCRIPT)}</script>` : ''}
</body>
</html>
`.value;
}

const LABELS = ['Poor', 'Fair', 'Good', 'Very good', 'Excellent'];

function visitLine(visit: Visit, timeZone: string): SafeHtml {
  const when = new Date(visit.startTime);
  const date = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' }).format(when);
  const time = new Intl.DateTimeFormat('en-GB', { timeZone, hour: 'numeric', minute: '2-digit', hour12: true }).format(when);
  return html`<p class="visit">Your appointment with <strong>${visit.doctorName}</strong> at <strong>${visit.clinicName}</strong> on <time datetime="${when.toISOString()}">${date}, ${time}</time>.</p>`;
}

export function formPage(visit: Visit, timeZone: string, input: FormInput = { rating: '', comment: '' }, errors: FormErrors = {}): string {
  const problems = [errors.rating && { id: 'rating-1', text: errors.rating }, errors.comment && { id: 'comment', text: errors.comment }].filter(
    (p): p is { id: string; text: string } => Boolean(p),
  );
  const summary =
    problems.length === 0
      ? ''
      : html`<div class="summary" role="alert" aria-labelledby="summary-title">
<h2 id="summary-title">Please check your review</h2>
<ul>${problems.map((p) => html`<li><a href="#${p.id}">${p.text}</a></li>`)}</ul>
</div>`;
  const options = LABELS.map((label, i) => {
    const value = String(i + 1);
    return html`<label><input type="radio" id="rating-${value}" name="rating" value="${value}"${i === 0 ? new SafeHtml(' required') : ''}${input.rating === value ? new SafeHtml(' checked') : ''}><span><b>${value}</b><small>${label}</small></span></label>`;
  });
  const body = html`<h1>How was your visit?</h1>
${visitLine(visit, timeZone)}
${summary}
<form method="post" accept-charset="utf-8">
<fieldset${errors.rating ? new SafeHtml(' class="invalid"') : ''} aria-describedby="rating-hint${errors.rating ? ' rating-error' : ''}">
<legend>Your rating</legend>
<p class="hint" id="rating-hint">Choose from 1 (poor) to 5 (excellent).</p>
${errors.rating ? html`<p class="error" id="rating-error">${errors.rating}</p>` : ''}
<div class="scale">${options}</div>
</fieldset>
<div class="field${errors.comment ? ' invalid' : ''}">
<label for="comment">Comment (optional)</label>
${errors.comment ? html`<p class="error" id="comment-error">${errors.comment}</p>` : ''}
<textarea id="comment" name="comment" rows="5" maxlength="${COMMENT_MAX}" aria-describedby="comment-count${errors.comment ? ' comment-error' : ''}">${input.comment}</textarea>
<p class="hint count" id="comment-count" aria-live="polite">Up to ${COMMENT_MAX} characters.</p>
</div>
<button type="submit">Send review</button>
</form>
<p class="note">Your review goes to ${visit.clinicName}.</p>`;
  const title = `${problems.length > 0 ? 'Error: ' : ''}Review your visit – ${visit.clinicName}`;
  return layout({ title, heading: visit.clinicName, body, script: true });
}

export function thankYouPage(visit: Visit, rating: number): string {
  const body = html`<p class="done" aria-hidden="true">✓</p>
<h1>Thank you for your review</h1>
<p>You rated your visit with <strong>${visit.doctorName}</strong> ${rating} out of 5. ${visit.clinicName} has received your review.</p>
<p class="note">You can close this page now.</p>`;
  return layout({ title: `Thank you – ${visit.clinicName}`, heading: visit.clinicName, body });
}

export function alreadyReceivedPage(visit: Visit): string {
  const body = html`<h1>Your review was already received</h1>
<p>We already have a review for your appointment with <strong>${visit.doctorName}</strong>. Each appointment can be reviewed once. Thank you for your feedback.</p>
<p class="note">You can close this page now.</p>`;
  return layout({ title: `Review already received – ${visit.clinicName}`, heading: visit.clinicName, body });
}

export function notFoundPage(): string {
  const body = html`<h1>This review link is not valid</h1>
<p>Please check that you opened the whole link from your message. If it still does not work, contact your clinic.</p>`;
  return layout({ title: 'Review link not found', heading: null, body });
}

export function errorPage(status: number): string {
  const [heading, text] =
    status >= 500
      ? ['Something went wrong', 'We could not handle your review just now. Please try again in a few minutes.']
      : ['The form could not be read', 'Please go back, check your review and send it again.'];
  return layout({ title: heading, heading: null, body: html`<h1>${heading}</h1>\n<p>${text}</p>` });
}

import { z } from 'zod';
import { EVENTS, REQUESTS } from './catalog';
import { ErrorEnvelope } from './errors';

/** JSON Schemas (draft 2020-12) of every public payload, keyed by file name under docs/api/. */
export function publicJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const d of REQUESTS.filter((r) => r.visibility === 'public')) {
    out[`${d.subject}.request.json`] = {
      title: `${d.subject} request`,
      description: d.summary,
      ...z.toJSONSchema(d.request, { io: 'input' }),
    };
    out[`${d.subject}.reply.json`] = { title: `${d.subject} reply`, ...z.toJSONSchema(d.reply, { io: 'output' }) };
  }
  for (const e of EVENTS) {
    out[`${e.subject}.json`] = {
      title: e.subject,
      description: e.summary,
      ...z.toJSONSchema(e.payload, { io: 'output' }),
    };
  }
  out['error-envelope.json'] = { title: 'Error envelope', ...z.toJSONSchema(ErrorEnvelope) };
  return out;
}

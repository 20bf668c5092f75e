// Reads back, from the fake model's request log, what a client sent to the
// model for each tool call of the script: its text and its images, keyed by
// the call id the fake model gave (call_tNN_I).

/** The last request of the client's main loop (it carries the whole conversation). */
export function lastMain(log) {
  const main = log.filter((e) => e.kind === 'main');
  return main[main.length - 1]?.body ?? null;
}

const isImageMime = (m) => typeof m === 'string' && m.startsWith('image/');

/** Claude Code: tool_result blocks in user messages. */
function fromAnthropic(body) {
  const out = new Map();
  for (const m of body.messages ?? []) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== 'tool_result') continue;
      const id = String(b.tool_use_id ?? '').replace(/^toolu_/, '');
      const blocks = typeof b.content === 'string' ? [{ type: 'text', text: b.content }] : (b.content ?? []);
      out.set(id, {
        text: blocks.filter((x) => x.type === 'text').map((x) => x.text).join('\n'),
        images: blocks.filter((x) => x.type === 'image' && isImageMime(x.source?.media_type) && x.source?.data).length,
        isError: b.is_error === true,
      });
    }
  }
  return out;
}

/** Gemini CLI: functionResponse parts, images as inlineData beside them or inside them. */
function fromGemini(body) {
  const out = new Map();
  for (const c of body.contents ?? []) {
    if (c.role !== 'user') continue;
    const parts = c.parts ?? [];
    const responses = parts.filter((p) => p.functionResponse);
    const loose = parts.filter((p) => isImageMime(p.inlineData?.mimeType)).length;
    for (const p of responses) {
      const fr = p.functionResponse;
      const inner = (fr.parts ?? []).filter((x) => isImageMime(x.inlineData?.mimeType)).length;
      out.set(fr.id ?? fr.name, {
        text: JSON.stringify(fr.response ?? {}),
        images: inner + (responses.length === 1 ? loose : 0),
        isError: fr.response?.error !== undefined,
      });
    }
  }
  return out;
}

/** Codex CLI: function_call_output items, a string or a list of input_text/input_image. */
function fromResponses(body) {
  const out = new Map();
  for (const it of body.input ?? []) {
    if (it.type !== 'function_call_output') continue;
    const o = it.output;
    const items = typeof o === 'string' ? [{ type: 'input_text', text: o }] : Array.isArray(o) ? o
      : [{ type: 'input_text', text: JSON.stringify(o) }];
    out.set(it.call_id, {
      text: items.filter((x) => x.type === 'input_text' || x.type === 'output_text').map((x) => x.text).join('\n'),
      images: items.filter((x) => x.type === 'input_image' && /^data:image\//.test(x.image_url ?? '')).length,
      isError: false,
    });
  }
  return out;
}

/** Map call id -> { text, images } for the client's API ('anthropic', 'gemini', 'responses'). */
export function toolResults(api, body) {
  if (!body) return new Map();
  if (api === 'anthropic') return fromAnthropic(body);
  if (api === 'gemini') return fromGemini(body);
  return fromResponses(body);
}

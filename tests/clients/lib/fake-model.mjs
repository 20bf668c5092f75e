// A scripted stand-in for a model API, on 127.0.0.1 only, speaking what the
// three clients use: the Anthropic Messages API (streaming SSE, Claude Code),
// Gemini generateContent / streamGenerateContent?alt=sse (Gemini CLI) and the
// OpenAI Responses API (streaming, Codex CLI).
//
// It replays a fixed script of tool calls: on each request of the client's
// main loop (a request that offers our tools) it counts the tool-call turns
// already in the conversation and answers with the next turn of the script,
// or with closing text when the script is done. Every request body is logged,
// so a test can assert on what the client sent to the model: the tool results.
// Side requests (titles, next-speaker checks, token counts) get a short text.

import http from 'node:http';

/**
 * A turn is an array of calls { tool, args }; tool is our tool's name, matched
 * against the client's name for it (Claude Code and Codex prefix the server's
 * name: mcp__sandbox__run_command).
 */
export async function startFakeModel({ script, finalText = 'All steps done.' }) {
  const log = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body = null;
      try { body = raw ? JSON.parse(raw) : null; } catch { body = { unparsed: raw.slice(0, 2000) }; }
      const entry = { method: req.method, url: req.url, body, kind: 'other' };
      log.push(entry);
      try {
        route(req, res, entry, script, finalText);
      } catch (e) {
        entry.serverError = String(e?.stack ?? e);
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `fake model: ${e}` } }));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

function route(req, res, entry, script, finalText) {
  const path = req.url.split('?')[0];
  if (req.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(path)) {
    return json(res, { input_tokens: 100 });
  }
  if (req.method === 'POST' && /\/v1\/messages$/.test(path)) return anthropic(res, entry, script, finalText);
  if (req.method === 'POST' && /:countTokens$/.test(path)) return json(res, { totalTokens: 100 });
  if (req.method === 'POST' && /:(stream)?[gG]enerateContent$/.test(path)) {
    return gemini(res, entry, script, finalText, path.endsWith(':streamGenerateContent'));
  }
  if (req.method === 'POST' && /\/responses$/.test(path)) return responses(res, entry, script, finalText);
  if (req.method === 'GET' && /\/models\/?$/.test(path)) return json(res, { data: [], models: [] });
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { type: 'not_found', message: `fake model: no ${req.method} ${path}` } }));
}

function json(res, obj) {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}

function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'close' });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

/** The client's name for our tool, among the names it offers (null: not offered). */
function nameFor(offered, tool) {
  return offered.find((n) => n === tool || n.endsWith(`__${tool}`) || n.endsWith(`_${tool}`) && n.includes('sandbox'))
    ?? null;
}

/** The next turn of the script with names resolved, or null when the script is done. */
function nextTurn(script, done, offered) {
  if (done >= script.length) return null;
  return script[done].map((c, i) => {
    const name = nameFor(offered, c.tool);
    if (!name) throw new Error(`the client offers no tool for ${c.tool}: ${offered.join(', ')}`);
    return { name, args: c.args, id: `call_t${String(done).padStart(2, '0')}_${i}` };
  });
}

// --- Anthropic Messages -----------------------------------------------------

function anthropic(res, entry, script, finalText) {
  const b = entry.body ?? {};
  const offered = (b.tools ?? []).map((t) => t.name).filter(Boolean);
  const main = offered.some((n) => n.startsWith('mcp__sandbox__'));
  entry.kind = main ? 'main' : 'side';
  let turn = null;
  if (main) {
    const done = (b.messages ?? []).filter((m) => m.role === 'assistant' && Array.isArray(m.content) &&
      m.content.some((c) => c.type === 'tool_use')).length;
    turn = nextTurn(script, done, offered);
    entry.turn = done;
  }
  const message = {
    id: `msg_${Date.now()}`, type: 'message', role: 'assistant', model: b.model ?? 'fake',
    content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 },
  };
  const blocks = turn
    ? turn.map((c) => ({ type: 'tool_use', id: `toolu_${c.id}`, name: c.name, input: c.args }))
    : [{ type: 'text', text: main ? finalText : 'Fake title' }];
  const stop = turn ? 'tool_use' : 'end_turn';
  if (!b.stream) {
    return json(res, { ...message, content: blocks, stop_reason: stop, usage: { input_tokens: 10, output_tokens: 5 } });
  }
  const ev = [['message_start', { type: 'message_start', message }]];
  blocks.forEach((blk, index) => {
    if (blk.type === 'tool_use') {
      ev.push(['content_block_start', { type: 'content_block_start', index, content_block: { ...blk, input: {} } }]);
      ev.push(['content_block_delta', { type: 'content_block_delta', index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(blk.input) } }]);
    } else {
      ev.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      ev.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: blk.text } }]);
    }
    ev.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  ev.push(['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: 5 } }]);
  ev.push(['message_stop', { type: 'message_stop' }]);
  return sse(res, ev);
}

// --- Gemini -----------------------------------------------------------------

function gemini(res, entry, script, finalText, stream) {
  const b = entry.body ?? {};
  const offered = (b.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((f) => f.name).filter(Boolean);
  const main = offered.some((n) => nameFor([n], 'run_command'));
  entry.kind = main ? 'main' : 'side';
  const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
  let parts;
  if (main) {
    const done = (b.contents ?? []).filter((c) => c.role === 'model' &&
      (c.parts ?? []).some((p) => p.functionCall)).length;
    entry.turn = done;
    const turn = nextTurn(script, done, offered);
    parts = turn ? turn.map((c) => ({ functionCall: { name: c.name, args: c.args, id: c.id } })) : [{ text: finalText }];
  } else {
    // next-speaker checks and other structured side questions want JSON
    const cfg = b.generationConfig ?? {};
    const wantsJson = cfg.responseMimeType === 'application/json' || cfg.responseSchema || cfg.responseJsonSchema;
    parts = [{ text: wantsJson ? JSON.stringify({ next_speaker: 'user', reasoning: 'the task is done' }) : 'ok' }];
  }
  const chunk = { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata };
  if (!stream) return json(res, chunk);
  return sse(res, [[null, chunk]]);
}

// --- OpenAI Responses --------------------------------------------------------

function responses(res, entry, script, finalText) {
  const b = entry.body ?? {};
  const offered = (b.tools ?? []).flatMap((t) => (t.type === 'namespace' || t.tools ? (t.tools ?? []).map((x) =>
    ({ ...x, name: `${t.name ?? ''}__${x.name}` })) : [t])).map((t) => t.name).filter(Boolean);
  const main = offered.some((n) => nameFor([n], 'run_command'));
  entry.kind = main ? 'main' : 'side';
  const id = `resp_${Date.now()}`;
  let items;
  if (main) {
    const turns = new Set();
    for (const it of b.input ?? []) {
      const m = it.type === 'function_call' && /^call_t(\d+)_/.exec(it.call_id ?? '');
      if (m) turns.add(m[1]);
    }
    entry.turn = turns.size;
    const turn = nextTurn(script, turns.size, offered);
    items = turn
      ? turn.map((c) => functionItem(c, b.tools ?? []))
      : [{ type: 'message', role: 'assistant', id: `msg_${id}`, status: 'completed',
        content: [{ type: 'output_text', text: finalText, annotations: [] }] }];
  } else {
    items = [{ type: 'message', role: 'assistant', id: `msg_${id}`, status: 'completed',
      content: [{ type: 'output_text', text: 'ok', annotations: [] }] }];
  }
  const response = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'in_progress',
    model: b.model ?? 'fake', output: [] };
  const ev = [['response.created', { type: 'response.created', sequence_number: 0, response }]];
  items.forEach((item, output_index) => {
    ev.push(['response.output_item.added', { type: 'response.output_item.added', output_index, item }]);
    ev.push(['response.output_item.done', { type: 'response.output_item.done', output_index, item }]);
  });
  ev.push(['response.completed', { type: 'response.completed', response: { ...response, status: 'completed', output: items,
    usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } } }]);
  return sse(res, ev);
}

/** A function_call item; a namespaced tool (namespace__name) is called by its namespace and name. */
function functionItem(c, tools) {
  const item = { type: 'function_call', id: `fc_${c.id}`, call_id: c.id, name: c.name,
    arguments: JSON.stringify(c.args), status: 'completed' };
  const ns = tools.find((t) => t.tools && c.name.startsWith(`${t.name}__`));
  if (ns) {
    item.namespace = ns.name;
    item.name = c.name.slice(ns.name.length + 2);
  }
  return item;
}

// Assertions shared by the client-library tests: what env_info must look like.

import assert from 'node:assert/strict';
import { toolSchemaProblems } from './schema-check.mjs';

export const SEMVER_RE = /^\d+\.\d+\.\d+/;

/** The env_info entry of a tools/list result, checked; returns it. */
export function assertEnvInfoTool(tools, { modernFields = true } = {}) {
  assert.ok(Array.isArray(tools), 'tools/list result has a tools array');
  const names = tools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length, `tool names are unique: ${names.join(', ')}`);
  const tool = tools.find((t) => t.name === 'env_info');
  assert.ok(tool, `env_info is listed (tools: ${names.join(', ')})`);
  assert.equal(typeof tool.description, 'string');
  assert.ok(tool.description.length > 0, 'env_info has a description');
  assert.equal(tool.inputSchema?.type, 'object', 'env_info inputSchema.type is "object"');
  assert.ok(tool.annotations && typeof tool.annotations === 'object', 'env_info has annotations');
  for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
    assert.equal(typeof tool.annotations[hint], 'boolean', `env_info annotations.${hint} is a boolean`);
  }
  assert.equal(tool.annotations.readOnlyHint, true, 'env_info is read-only');
  assert.equal(tool.annotations.destructiveHint, false, 'env_info is not destructive');
  if (modernFields) {
    assert.equal(typeof tool.title, 'string', 'env_info has a title');
    assert.ok(tool.title.length > 0, 'env_info title is not empty');
    assert.ok(tool.outputSchema && typeof tool.outputSchema === 'object', 'env_info has an outputSchema');
    assert.equal(tool.outputSchema.type, 'object', 'env_info outputSchema.type is "object"');
  }
  const problems = toolSchemaProblems(tools);
  assert.deepEqual(problems, [], `every array has items and every object has properties:\n${problems.join('\n')}`);
  return tool;
}

/** A tools/call result of env_info, checked. */
export function assertEnvInfoResult(result, { structured = true } = {}) {
  assert.ok(result && typeof result === 'object', 'env_info returned a result');
  assert.ok(!result.isError, `env_info isError is falsy: ${JSON.stringify(result).slice(0, 1500)}`);
  assert.ok(Array.isArray(result.content), 'env_info result has content');
  const text = result.content.find((c) => c.type === 'text');
  assert.ok(text, 'env_info result has a text content block');
  assert.equal(typeof text.text, 'string');
  assert.ok(text.text.length > 0, 'the text block is not empty');
  if (!structured) return;
  const sc = result.structuredContent;
  assert.ok(sc && typeof sc === 'object', 'env_info result has structuredContent');
  assert.equal(sc.server?.name, 'sandbox-mcp', 'structuredContent.server.name');
  assert.match(String(sc.server?.version), SEMVER_RE, 'structuredContent.server.version looks like x.y.z');
  assert.ok(sc.config && typeof sc.config === 'object', 'structuredContent.config is an object');
  assert.equal(typeof sc.config.image, 'string', 'config.image');
  for (const k of ['memory_mb', 'cpus', 'pids', 'timeout_s', 'idle_ttl_s', 'max_sessions']) {
    assert.equal(typeof sc.config[k], 'number', `config.${k} is a number`);
  }
  assert.ok(sc.engine && typeof sc.engine === 'object', 'structuredContent.engine is an object');
  assert.equal(typeof sc.engine.reachable, 'boolean', 'engine.reachable is a boolean');
  assert.equal(typeof sc.engine.endpoint, 'string', 'engine.endpoint is a string');
  if (sc.engine.api_version !== undefined) assert.equal(typeof sc.engine.api_version, 'string');
  if (sc.engine.error !== undefined) assert.equal(typeof sc.engine.error, 'string');
  return sc;
}

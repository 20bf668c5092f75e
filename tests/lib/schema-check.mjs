// Structural checks on the JSON Schemas a server publishes for its tools.
//
// Clients turn tool schemas into function declarations for a model, and
// several of them (Gemini, OpenAI strict mode, some MCP bridges) reject an
// array without `items` or an object without `properties`. So every schema
// node whose type is (or includes) "array" must carry `items`, and every node
// whose type is (or includes) "object" must carry `properties`.

const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SUBSCHEMA_SINGLE = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains',
  'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'];

function typesOf(node) {
  if (typeof node.type === 'string') return [node.type];
  if (Array.isArray(node.type)) return node.type;
  return [];
}

/** Returns a list of problems ("path: message"); empty when the schema is fine. */
export function schemaProblems(schema, path = '$') {
  const problems = [];
  walk(schema, path, problems);
  return problems;
}

function walk(node, path, problems) {
  if (typeof node === 'boolean') return; // true/false are valid schemas
  if (node === null || typeof node !== 'object' || Array.isArray(node)) {
    problems.push(`${path}: a schema must be an object or a boolean, got ${JSON.stringify(node)}`);
    return;
  }
  const types = typesOf(node);
  if (types.includes('array') && !('items' in node) && !('prefixItems' in node)) {
    problems.push(`${path}: type array without items`);
  }
  if (types.includes('object')) {
    if (!('properties' in node)) {
      problems.push(`${path}: type object without properties`);
    } else if (node.properties === null || typeof node.properties !== 'object' || Array.isArray(node.properties)) {
      problems.push(`${path}: properties is not an object`);
    }
  }
  if ('required' in node) {
    if (!Array.isArray(node.required) || !node.required.every((r) => typeof r === 'string')) {
      problems.push(`${path}: required is not an array of strings`);
    } else if (node.properties && typeof node.properties === 'object') {
      for (const r of node.required) {
        if (!(r in node.properties)) problems.push(`${path}: required "${r}" is not among properties`);
      }
    }
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = node[key];
    if (map && typeof map === 'object' && !Array.isArray(map)) {
      for (const [name, sub] of Object.entries(map)) walk(sub, `${path}.${key}.${name}`, problems);
    }
  }
  for (const key of SUBSCHEMA_LISTS) {
    if (Array.isArray(node[key])) node[key].forEach((sub, i) => walk(sub, `${path}.${key}[${i}]`, problems));
  }
  for (const key of SUBSCHEMA_SINGLE) {
    if (key in node) {
      const sub = node[key];
      if (key === 'items' && Array.isArray(sub)) sub.forEach((s, i) => walk(s, `${path}.items[${i}]`, problems));
      else walk(sub, `${path}.${key}`, problems);
    }
  }
}

/** Problems across every schema of every tool in a tools/list result. */
export function toolSchemaProblems(tools) {
  const problems = [];
  for (const tool of tools) {
    if (tool.inputSchema === undefined) problems.push(`${tool.name}: no inputSchema`);
    else problems.push(...schemaProblems(tool.inputSchema, `${tool.name}.inputSchema`));
    if (tool.outputSchema !== undefined) problems.push(...schemaProblems(tool.outputSchema, `${tool.name}.outputSchema`));
  }
  return problems;
}

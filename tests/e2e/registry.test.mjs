// server.json, the MCP Registry entry (docs/docker-desktop.md, "The MCP Registry"):
// valid against the registry's published schema (a copy in
// tests/data/mcp-registry/, see its README), and holding to what the
// registry checks beyond the schema for an OCI package; its version is the
// build's. The image's label is checked where the image is built
// (docker-run).

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { serverBin } from '../lib/rawpipe.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const entry = JSON.parse(readFileSync(join(ROOT, 'server.json'), 'utf8'));
const schema = JSON.parse(readFileSync(join(ROOT, 'tests/data/mcp-registry/server.schema.json'), 'utf8'));

describe('server.json', () => {
  test('is valid against the registry schema it names', () => {
    assert.equal(entry.$schema, schema.$id, 'the schema version it names is the copy checked here');
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    const validate = ajv.compile(schema);
    assert.ok(validate(entry), JSON.stringify(validate.errors, null, 1));
    // and the validator does refuse: a name with two slashes, a transport it does not know
    assert.equal(validate({ ...entry, name: 'a/b/c' }), false);
    assert.equal(validate({ ...entry, packages: [{ ...entry.packages[0], transport: { type: 'carrier-pigeon' } }] }), false);
  });

  test('its version is this build\'s, and the image it names is tagged with it', () => {
    const v = execFileSync(serverBin(), ['--version'], { encoding: 'utf8' }).trim().split(' ').pop();
    assert.equal(entry.version, v);
    for (const p of entry.packages.filter((x) => x.registryType === 'oci')) {
      assert.equal(p.identifier.split(':').pop(), v, `${p.identifier} carries the version as its tag`);
    }
  });

  test('the OCI package holds to the registry\'s own rules', () => {
    const oci = entry.packages.filter((p) => p.registryType === 'oci');
    assert.equal(oci.length, 1);
    for (const p of oci) {
      // the registry takes the version from the tag and refuses these on an image
      for (const k of ['version', 'registryBaseUrl', 'fileSha256']) assert.equal(p[k], undefined, k);
      assert.match(p.identifier, /^(docker\.io|ghcr\.io)\//, 'a registry the MCP Registry pulls from');
      assert.equal(p.transport.type, 'stdio');
      // argument names the registry accepts: no spaces, <, >, $; a value that does not repeat the name
      for (const a of p.runtimeArguments ?? []) {
        assert.doesNotMatch(a.name ?? '', /[\s<>$]/);
        assert.ok(!(a.value ?? '').startsWith(a.name ?? '\0'));
      }
    }
    assert.match(entry.name, /^io\.github\.[A-Za-z0-9-]+\/[A-Za-z0-9._-]+$/, 'a GitHub namespace');
  });

  test('every variable it offers is a setting the server documents', () => {
    const settings = readFileSync(join(ROOT, 'docs/settings.md'), 'utf8');
    for (const p of entry.packages) {
      for (const e of p.environmentVariables ?? []) {
        assert.ok(settings.includes(`\`${e.name}\``), `${e.name} is in docs/settings.md`);
      }
    }
  });
});
